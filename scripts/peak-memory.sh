#!/usr/bin/env bash
# Runs a command and prints its wall time and peak resident memory (VmHWM, read from /proc
# while it runs; no extra package needed). Its output goes to stdout as usual.
# Usage: scripts/peak-memory.sh COMMAND [ARGS...]
set -euo pipefail
start=$(date +%s%N)
"$@" &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
  sleep 0.1
done
wait "$pid"
echo "wall $(( ($(date +%s%N) - start) / 1000000 )) ms, peak memory $peak KiB" >&2
