#!/usr/bin/env bash
# Builds fasop-cpp if needed, then runs it with the given arguments, e.g.
#   bash scripts/run.sh search --model gpt2xl --heterogeneous
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh"
exec "$root/build/fasop-cpp" "$@"
