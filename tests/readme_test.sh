#!/usr/bin/env bash
# The documentation's commands run as written: every `build/fasop-cpp ...` line of the ```sh
# blocks of README.md, docs/*.md and CONTRIBUTING.md (continuation lines joined, `# ...` comments
# and [optional] parts dropped) runs in a scratch directory beside the repository's configs and
# tests, and must exit 0. Each file gets a fresh scratch directory, so a page's commands may use
# what its own earlier commands wrote (a saved plan) but nothing from another page. Skipped, and
# counted: lines with placeholders (JOB, CMD, IMG, ...), launches and calibrations (their own
# tests run them on a local Slurm), and profiler lines where fasop-profile is not built or needs
# CUDA; `profile layers` runs with --allow-noisy, as the suite's other tests load the machine.
# Usage: readme_test.sh <fasop-cpp binary>
set -uo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/test_lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" /tmp/fasop-readme-$$' EXIT
ran=0 skipped=0

# The `build/fasop-cpp` commands of FILE's ```sh blocks, one a line: continuations joined,
# comments and [optional] parts removed.
commands_of() {
  awk '/^```sh/{f=1;next} /^```/{f=0} f' "$1" |
    sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' | grep '^build/fasop-cpp ' |
    sed -e 's/[[:space:]]#.*$//' -e 's/ \[[^]]*\]//g' -e 's/[[:space:]]*$//'
}

# run_file FILE: every command of FILE, in a scratch directory of its own.
run_file() {
  local file=$1 name=${1#"$root"/} work line cmd args
  work="$scratch/$(echo "$name" | tr '/' '_')"
  mkdir -p "$work/plans" "$work/main_logs"
  ln -s "$root/tests" "$root/configs" "$root/clusters" "$work/"
  rm -rf "/tmp/fasop-readme-$$"
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    case "$line" in
      *JOB*|*CMD*|*IMG*|*ADDR*|*" launch "*|*" calibrate "*|*"--device cuda"*) skipped=$((skipped + 1)); continue ;;
      *" profile "*) [ -x "$(dirname "$bin")/fasop-profile" ] || { skipped=$((skipped + 1)); continue; } ;;
    esac
    # /tmp paths of the docs go under this run's own directory.
    cmd=${line//\/tmp\//\/tmp\/fasop-readme-$$\/}
    mkdir -p "/tmp/fasop-readme-$$/p"
    args=${cmd#build/fasop-cpp }
    # Timing noise on a busy machine is the profiler test's to judge (it runs alone): here the
    # command need only run.
    case "$args" in "profile layers "*) args="$args --allow-noisy" ;; esac
    ran=$((ran + 1))
    if (cd "$work" && eval "\"$bin\" $args" > "$work/out" 2>&1); then ok; else fail "$name: $line: $(tail -3 "$work/out")"; fi
  done <<< "$(commands_of "$file")"
}

for file in "$root/README.md" "$root"/docs/*.md "$root/CONTRIBUTING.md"; do
  [ -f "$file" ] && run_file "$file"
done
echo "ran $ran commands of README.md, docs/*.md and CONTRIBUTING.md; skipped $skipped (placeholders, launches, CUDA, profiler not built)"
finish
