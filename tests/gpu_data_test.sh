#!/usr/bin/env bash
# The shipped GPU data (configs/gpus/) is what scripts/fit-gpu-data.sh finds with the model as
# it is now, its "as" lines and transfers included: a change to the cost model that moves a fit
# fails here until the data is refitted (scripts/fit-gpu-data.sh, scripts/sync-gpu-data.py --apply).
# Usage: gpu_data_test.sh PATH/TO/fasop-cpp
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$root/tests/test_lib.sh"

bash "$root/scripts/fit-gpu-data.sh" "$bin" "$work/fits" > "$work/fit.out" 2>&1 && ok ||
  fail "fit-gpu-data.sh: $(tail -3 "$work/fit.out")"
[ "$(ls "$work/fits" | wc -l)" -eq "$(ls "$root/validation/fits" | wc -l)" ] && ok ||
  fail "the fit wrote $(ls "$work/fits" | wc -l) reports, validation/fits/ has $(ls "$root/validation/fits" | wc -l)"
python3 "$root/scripts/sync-gpu-data.py" --fits "$work/fits" > "$work/sync.out" 2>&1 && ok ||
  fail "configs/gpus/ differs from the fit: $(head -5 "$work/sync.out")"
python3 "$root/scripts/fit-memory-runtime.py" --check "$bin" "$work/memory" > "$work/memory.out" 2>&1 && ok ||
  fail "configs/gpus/ memory_runtime differs from the fit: $(tail -3 "$work/memory.out")"
# The check can fail: an H100 bf16 share set to 0.5 is found and named.
cp -r "$root/configs/gpus" "$work/gpus"
sed -i 's/^\(  bf16: {gemm_peak_share: \)\([0-9.]*\)/\10.5/' "$work/gpus/h100.yaml"
python3 "$root/scripts/sync-gpu-data.py" --fits "$work/fits" --gpus "$work/gpus" > "$work/bad.out" 2>&1
[ $? -eq 1 ] && grep -q '^h100.yaml bf16.gemm_peak_share: 0.5 -> ' "$work/bad.out" && ok ||
  fail "a changed H100 share went unnoticed: $(cat "$work/bad.out")"
finish
