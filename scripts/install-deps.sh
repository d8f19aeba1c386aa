#!/usr/bin/env bash
# Installs the Debian 12 packages a part of fasop-cpp needs, if any is missing; runs as root
# (apt-get) and does nothing when everything is installed. Usage:
#   install-deps.sh planner    the planner (fasop-cpp): a compiler, CMake, yaml-cpp, CLI11
#   install-deps.sh profiler   the planner's, and LibTorch with an optimised BLAS (Debian's
#                              reference BLAS makes LibTorch on CPU ~7x slower) and Gloo
#   install-deps.sh tests      (default) the profiler's, and Catch2; python3 runs the tests of
#                              the generated Python schedules; python3-torch (torchrun, Gloo)
#                              trains the launch tests' small GPT on CPU; Slurm and munge run
#                              the launch tests' local cluster (scripts/slurm-local.sh)
set -euo pipefail
planner=(cmake g++ make libyaml-cpp-dev libcli11-dev)
profiler=("${planner[@]}" libtorch-dev libopenblas0-pthread libgloo-dev)
tests=("${profiler[@]}" catch2 python3 python3-torch slurmctld slurmd slurm-client munge)
case "${1:-tests}" in
  planner) packages=("${planner[@]}") ;;
  profiler) packages=("${profiler[@]}") ;;
  tests) packages=("${tests[@]}") ;;
  *) echo "install-deps.sh: unknown part '$1'; use planner, profiler or tests" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
