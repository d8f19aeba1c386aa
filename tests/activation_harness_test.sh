#!/usr/bin/env bash
# The cost model's activation bytes against PyTorch autograd on CPU: runs
# tests/activation_harness.py (every layer x recomputation x precision x size) and compares
# each record with activation_check (2%). Exit 77 (skipped) where no python3 has torch.
# Usage: activation_harness_test.sh <activation_check binary>
set -euo pipefail
check=$1
here=$(cd "$(dirname "$0")" && pwd)

python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c "import torch" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [[ -z $python ]]; then
  echo "SKIP: no python3 with torch (Debian's python3-torch)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$here/activation_harness.py" --json "$work/records.json"
"$check" "$work/records.json"
