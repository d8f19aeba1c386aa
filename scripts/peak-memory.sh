#!/usr/bin/env bash
# Runs a command and prints its wall time and peak resident memory (VmHWM, read from /proc
# while it runs; no extra package needed). Its output goes to stdout as usual.
# Usage: scripts/peak-memory.sh COMMAND [ARGS...]
set -euo pipefail
start=$(date +%s%N)
"$@" &
pid=$!
peak=0
# The command and its children (a wrapper such as `timeout` runs the real work in a child): the
# largest of their peaks.
while kill -0 "$pid" 2>/dev/null; do
  for p in "$pid" $(cat "/proc/$pid/task/$pid/children" 2>/dev/null || true); do
    hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
    [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
  done
  sleep 0.1
done
wait "$pid"
echo "wall $(( ($(date +%s%N) - start) / 1000000 )) ms, peak memory $peak KiB" >&2
