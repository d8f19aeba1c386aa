#!/usr/bin/env bash
# The README's commands run as written: every `build/fasop-cpp ...` line of its ```sh blocks
# (continuation lines joined, `# ...` comments and [optional] parts dropped) runs in a scratch
# directory beside the repository's configs and tests, and must exit 0. Skipped, and counted:
# lines with placeholders (JOB, CMD, IMG, ...), launches and calibrations (their own tests run
# them on a local Slurm), and profiler lines where fasop-profile is not built or needs CUDA;
# `profile layers` runs with --allow-noisy, as the suite's other tests load the machine.
# Usage: readme_test.sh <fasop-cpp binary>
set -uo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/test_lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work" /tmp/fasop-readme-$$' EXIT
ln -s "$root/tests" "$root/configs" "$root/clusters" "$work/"
mkdir -p "$work/plans" "$work/main_logs"
skipped=0
# One command a line: continuations joined, comments and [optional] parts removed.
commands=$(awk '/^```sh/{f=1;next} /^```/{f=0} f' "$root/README.md" |
  sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | grep '^build/fasop-cpp ' |
  sed -e 's/[[:space:]]#.*$//' -e 's/ \[[^]]*\]//g' -e 's/[[:space:]]*$//')
while IFS= read -r line; do
  [ -n "$line" ] || continue
  case "$line" in
    *JOB*|*CMD*|*IMG*|*ADDR*|*" launch "*|*" calibrate "*|*"--device cuda"*) skipped=$((skipped + 1)); continue ;;
    *" profile "*) [ -x "$(dirname "$bin")/fasop-profile" ] || { skipped=$((skipped + 1)); continue; } ;;
  esac
  # /tmp paths of the README go under this run's own directory.
  cmd=${line//\/tmp\//\/tmp\/fasop-readme-$$\/}
  mkdir -p "/tmp/fasop-readme-$$/p"
  args=${cmd#build/fasop-cpp }
  # Timing noise on a busy machine is the profiler test's to judge (it runs alone): here the
  # command need only run.
  case "$args" in "profile layers "*) args="$args --allow-noisy" ;; esac
  if (cd "$work" && eval "\"$bin\" $args" > "$work/out" 2>&1); then ok; else fail "README: $line: $(tail -3 "$work/out")"; fi
done <<< "$commands"
echo "skipped $skipped README lines (placeholders, launches, CUDA, profiler not built)"
finish
