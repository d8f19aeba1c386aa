#!/usr/bin/env bash
# Installs the Debian 12 packages fasop-cpp needs to build and test, if any is missing.
# Runs as root (apt-get); does nothing when everything is already installed.
# The planner needs the first line; the profiler (fasop-profile) the second: LibTorch, an
# optimised BLAS for it (Debian's reference BLAS makes LibTorch on CPU ~7x slower) and Gloo.
# python3 runs the tests of the generated Python schedules (py_compile, a stand-in slapo);
# python3-torch (torchrun, Gloo) trains the launch tests' small GPT on CPU; Slurm and munge run
# the launch tests' local cluster (scripts/slurm-local.sh).
set -euo pipefail
packages=(cmake g++ make libyaml-cpp-dev libcli11-dev catch2
          libtorch-dev libopenblas0-pthread libgloo-dev
          python3 python3-torch slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
