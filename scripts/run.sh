#!/usr/bin/env bash
# Installs the planner's packages and builds fasop-cpp if needed, then runs it with the given
# arguments, e.g.
#   bash scripts/run.sh search --model gpt2xl --heterogeneous
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh" planner
exec "$root/build/fasop-cpp" "$@"
