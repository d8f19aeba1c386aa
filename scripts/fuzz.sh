#!/usr/bin/env bash
# Fuzzes the spec loaders (issue 16: bad input) with libFuzzer, ASan and UBSan.
#
#   scripts/fuzz.sh [SECONDS_PER_LOADER (default 60)] [LOADER...]
#
# LOADER: model cluster profile plan validation trainer layer_times (default: all of them).
# Configures and builds build-fuzz/ with clang (FASOP_FUZZ=ON, no tests, no profiler: no LibTorch),
# copies the shipped spec files into a temporary seed corpus per loader (nothing is committed),
# then runs each harness (tests/fuzz/fuzz_spec_loader.cc) for SECONDS_PER_LOADER seconds. A
# SpecError is the expected answer to bad input; any other exception escaping a loader, an
# ASan/UBSan report, a timeout (10 s) or an out-of-memory (2 GiB) is a crash, kept in
# build-fuzz/crashes/<loader>/ (crash-*, oom-*, timeout-*, leak-*). libFuzzer runs in fork mode
# and goes on after a crash, so one run finds several. At the end: per loader the number of runs,
# the crash files and their distinct classes (the exception or sanitizer report, with the
# smallest input of each); exit status 1 if any crash file (of this run or an earlier one: they
# are kept as regression inputs) still crashes.
#
# How long: the first build about 5-10 minutes on 2 cores (the spec library with ASan, UBSan and
# coverage instrumentation), then SECONDS_PER_LOADER times the number of loaders (7 minutes at
# the default), plus a few seconds per crash file to classify it. Not part of ctest.
#
# Reproduce one crash:  build-fuzz/fuzz_<loader> build-fuzz/crashes/<loader>/crash-...
# Shrink it:            build-fuzz/fuzz_<loader> -minimize_crash=1 -runs=10000 CRASH_FILE
# The plan loader's seed is a plan saved by fasop-cpp: $FASOP_CPP, else build/fasop-cpp or
# build-clang/fasop-cpp where one runs (else the plan loader starts from the other loaders' seeds).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-fuzz
SECONDS_PER_LOADER=${1:-60}
if [[ $# -gt 0 ]]; then shift; fi
ALL_LOADERS=(model cluster profile plan validation trainer layer_times)
if [[ $# -gt 0 ]]; then LOADERS=("$@"); else LOADERS=("${ALL_LOADERS[@]}"); fi
if ! [[ $SECONDS_PER_LOADER =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS_PER_LOADER] [LOADER...]  (loaders: ${ALL_LOADERS[*]})" >&2
  exit 2
fi
for loader in "${LOADERS[@]}"; do
  if [[ " ${ALL_LOADERS[*]} " != *" $loader "* ]]; then
    echo "$0: unknown loader '$loader'; one of: ${ALL_LOADERS[*]}" >&2
    exit 2
  fi
done
JOBS=${FUZZ_BUILD_JOBS:-2}

echo "== configure and build $BUILD (clang, FASOP_FUZZ=ON)"
mkdir -p "$BUILD"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFASOP_FUZZ=ON -DFASOP_BUILD_TESTS=OFF -DFASOP_WITH_PROFILER=OFF >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 2; }
targets=()
for loader in "${LOADERS[@]}"; do targets+=("fuzz_$loader"); done
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fasop-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Seed corpora: the shipped files of each kind (copied; libFuzzer adds its finds to the copy).
seed() {  # seed LOADER FILE...
  local dir=$WORK/corpus/$1; shift
  mkdir -p "$dir"
  local f
  for f in "$@"; do
    [[ -f $f ]] && cp "$f" "$dir/$(echo "${f#"$ROOT"/}" | tr / _)"
  done
  return 0
}
shopt -s nullglob
seed model "$ROOT"/configs/models/*.yaml "$ROOT"/tests/data/profiler/*.yaml
seed cluster "$ROOT"/clusters/*.yaml "$ROOT"/tests/data/launch/two-types.yaml
seed profile "$ROOT"/configs/profiles/*.yaml
seed validation "$ROOT"/validation/*/*.yaml
seed trainer "$ROOT"/configs/trainers/*.yaml "$ROOT"/tests/data/launch/trainer-*.yaml
seed layer_times "$ROOT"/validation/layers/*/*.yaml
mkdir -p "$WORK/corpus/plan"
planner=""
for candidate in "${FASOP_CPP:-}" "$ROOT/build/fasop-cpp" "$ROOT/build-clang/fasop-cpp"; do
  if [[ -n $candidate && -x $candidate ]]; then planner=$candidate; break; fi
done
if [[ -n $planner ]] &&
   "$planner" search --model gpt2xl --heterogeneous --save-plan "$WORK/corpus/plan/gpt2xl-heterogeneous.yaml" \
     --quiet --out-dir "$WORK/out" >/dev/null 2>&1 &&
   "$planner" search --model bert --save-plan "$WORK/corpus/plan/bert.yaml" \
     --quiet --out-dir "$WORK/out" >/dev/null 2>&1; then
  echo "== plan seeds saved by $planner"
else
  echo "== warning: no plan seed (no working fasop-cpp; set FASOP_CPP): the plan loader starts from other seeds" >&2
  seed plan "$ROOT"/configs/models/gpt2xl.yaml "$ROOT"/clusters/fasop-8nodes-heterogeneous.yaml
fi

# One line naming a crash's class: the escaping exception (type and message, with numbers
# replaced by N so that one bug at different places counts once) or the sanitizer's report.
classify() {  # classify LOADER FILE
  local log
  log=$(timeout 60 "$BUILD/fuzz_$1" -timeout=10 -rss_limit_mb=2048 "$2" 2>&1 || true)
  local type what summary
  type=$(grep -a -m1 -o "terminate called after throwing an instance of '[^']*'" <<<"$log" | sed "s/.*instance of //" || true)
  what=$(grep -a -m1 "^  what():" <<<"$log" | sed 's/^  what(): *//' || true)
  summary=$(grep -a -m1 -E "^SUMMARY: |runtime error:|ERROR: libFuzzer: (out-of-memory|timeout)" <<<"$log" || true)
  if [[ -n $type ]]; then
    echo "exception $type: $what" | sed -E 's/[0-9]+/N/g'
  elif [[ -n $summary ]]; then
    # file:line and sizes stay (they locate the bug); addresses and pids go.
    echo "$summary" | sed -E 's/0x[0-9a-f]+/ADDR/g; s/==[0-9]+==/==PID==/g; s/malloc\([0-9]+\)/malloc(N)/'
  elif grep -aqF "Running: $2" <<<"$log" && ! grep -aq "^Executed .* in" <<<"$log"; then
    echo "unclassified crash (see the log of fuzz_$1 $2)"
  else
    echo "no longer crashes (fixed)"
  fi
}

status=0
summary_lines=()
for loader in "${LOADERS[@]}"; do
  crashes=$BUILD/crashes/$loader
  mkdir -p "$crashes"
  log=$BUILD/fuzz_$loader.log
  echo "== fuzz_$loader: ${SECONDS_PER_LOADER}s, $(ls "$WORK/corpus/$loader" | wc -l) seed files, log $log"
  before=$(ls "$crashes" | wc -l)
  # -fork=1 with -ignore_*: one child at a time (2 cores), restarted after each crash.
  (cd "$WORK" && "$BUILD/fuzz_$loader" "$WORK/corpus/$loader" \
     -dict="$ROOT/tests/fuzz/yaml.dict" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
     -max_total_time="$SECONDS_PER_LOADER" -artifact_prefix="$crashes/" -print_final_stats=1 \
     -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 >"$log" 2>&1) || true
  # The log holds fuzz inputs (binary): grep -a. Fork mode's last '#RUNS: cov: ...' line counts all.
  runs=$( (grep -aoE '^#[0-9]+:' "$log" || true) | tail -1 | tr -d '#:')
  [[ -n $runs ]] || runs=$( (grep -aoE '^stat::number_of_executed_units: [0-9]+' "$log" || true) | awk '{s+=$2} END {print s+0}')
  files=("$crashes"/*)
  new=$(( ${#files[@]} - before ))
  summary_lines+=("$(printf '%-12s runs %-10s crash files %d (%d new)' "$loader" "${runs:-?}" "${#files[@]}" "$new")")
  if [[ ${#files[@]} -gt 0 ]]; then
    declare -A example=() count=()
    for f in "${files[@]}"; do
      c=$(classify "$loader" "$f")
      # Crash files of earlier runs stay as regression inputs: one that no longer crashes is fixed.
      [[ $c == "no longer crashes (fixed)" ]] || status=1
      count[$c]=$(( ${count[$c]:-0} + 1 ))
      # The smallest input of each class is its example.
      if [[ -z ${example[$c]:-} ]] || [[ $(stat -c %s "$f") -lt $(stat -c %s "${example[$c]}") ]]; then
        example[$c]=$f
      fi
    done
    for c in "${!count[@]}"; do
      summary_lines+=("    ${count[$c]} x $c")
      summary_lines+=("        e.g. ${example[$c]} ($(stat -c %s "${example[$c]}") bytes)")
    done
    unset example count
  fi
done

echo
echo "== fuzz summary (${SECONDS_PER_LOADER}s per loader; crashes in $BUILD/crashes/<loader>/)"
printf '%s\n' "${summary_lines[@]}"
exit $status
