#!/usr/bin/env bash
# fasop-cpp validate as a user meets it: the shipped set from any directory, the CSV, --max-mae,
# deterministic output, case files and directories on disk, errors naming file and field.
# Usage: validate_test.sh PATH/TO/fasop-cpp
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"  # not the source tree: the shipped cases are embedded in the binary
source "$root/tests/test_lib.sh"

# The shipped set: ten rows, a summary line with the mean absolute error, the CSV's columns.
"$bin" validate --csv out/a.csv > a.out 2> a.err || fail "validate: $(cat a.err)"
rows=$(grep -c '^megatron-a100-2021  ' a.out)
[ "$rows" -eq 10 ] && ok || fail "validate printed $rows rows, expected 10: $(cat a.out)"
grep -q '^megatron-a100-2021: 10 cases, mean absolute error [0-9.]*%, worst gpt-' a.out && ok ||
  fail "no MAE line: $(tail -2 a.out)"
head -1 out/a.csv | grep -q '^set,case,.*measured_step_s,predicted_step_s,error_pct' && ok ||
  fail "CSV header: $(head -1 out/a.csv)"
[ "$(grep -c '^megatron-a100-2021,' out/a.csv)" -eq 10 ] && ok || fail "CSV has $(grep -c '^megatron-a100-2021,' out/a.csv) Megatron rows, expected 10"
grep -q '^megatron-a100-2021,gpt-1.7b,A100-80GB,32,1,1,32,1,true,3.528' out/a.csv && ok || fail "gpt-1.7b row: $(grep 1.7b out/a.csv)"
# A column per term of the step, and they add up to the predicted step time.
head -1 out/a.csv | grep -q ',compute_s,bubble_s,tp_comm_s,sends_s,dp_comm_s,overlap_cost_s,optimizer_s,embedding_s,' && ok ||
  fail "CSV term columns: $(head -1 out/a.csv)"
python3 - out/a.csv <<'PY' && ok || fail "terms do not add up to the step time"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    terms = sum(float(r[k]) for k in ("compute_s", "bubble_s", "tp_comm_s", "sends_s", "dp_comm_s", "overlap_cost_s", "optimizer_s", "embedding_s"))
    assert abs(terms - float(r["predicted_step_s"])) <= 2e-6 * max(1, terms), (r["case"], terms, r["predicted_step_s"])
PY
# The shipped sets: the NeMo rows and the layer-time sets are reported too.
grep -q '^nemo-dense-25.09: 9 cases, mean absolute error' a.out && ok || fail "no nemo-dense-25.09 summary: $(tail -15 a.out)"
grep -q '^nemo-dense-fp4: 8 cases, mean absolute error' a.out && ok || fail "no nemo-dense-fp4 summary: $(tail -15 a.out)"
grep -q '^sailor-profiles on V100: [0-9]* layer times, median absolute error' a.out && ok || fail "no layer-set summary: $(tail -12 a.out)"
ls out | grep -qv '^a.csv$' && fail "temporary file left beside the CSV: $(ls out)" || ok

# The same inputs: byte-identical CSV and text; the set named by its directory: the same rows.
"$bin" validate --csv out/b.csv > b.out || fail "validate again"
cmp -s out/a.csv out/b.csv && ok || fail "CSV differs between two runs"
cmp -s a.out b.out && ok || fail "text differs between two runs"
"$bin" validate validation/megatron-a100-2021 --csv out/c.csv > /dev/null || fail "validate validation/megatron-a100-2021"
diff <(grep -e '^set,' -e '^megatron-a100-2021,' out/a.csv) out/c.csv > /dev/null && ok || fail "the shipped set by name differs from the default"

# --max-mae: 1 when a set's MAE exceeds it (and the report still printed), 0 when not.
"$bin" validate --max-mae 0.001 > m.out 2> m.err; rc=$?
[ "$rc" -eq 1 ] && ok || fail "--max-mae 0.001 exited $rc, expected 1"
grep -q "exceeds --max-mae" m.err && ok || fail "--max-mae message: $(cat m.err)"
grep -q "mean absolute error" m.out && ok || fail "--max-mae: no report"
"$bin" validate --max-mae 1000 --quiet > q.out || fail "--max-mae 1000 exited non-zero"
! grep -q '^megatron-a100-2021  ' q.out && grep -q '^megatron-a100-2021: 10 cases' q.out && ok ||
  fail "--quiet printed rows, or no summary: $(head -3 q.out)"
"$bin" validate validation/layers/fasop-cpp-h100 --quiet --layer-csv out/l.csv > l.out || fail "validate a layer set"
head -1 out/l.csv | grep -q '^set,case,gpu,unit,tp,mbs,pass,measured_s,predicted_s,error_pct$' && ok || fail "layer CSV header: $(head -1 out/l.csv)"
[ "$(grep -c ',H100,' out/l.csv)" -eq 144 ] && ok || fail "layer CSV: $(grep -c ',H100,' out/l.csv) H100 points, expected 144"

# Cases on disk: a file and a directory, from the shipped ones edited.
mkdir -p mine
sed -n '/^set:/,$p' "$root/validation/megatron-a100-2021/gpt-1.7b.yaml" | sed 's/^set: .*/set: mine/' > mine/one.yaml
"$bin" validate mine/one.yaml --csv one.csv > one.out || fail "validate FILE: $(cat one.out)"
grep -q '^mine,gpt-1.7b,' one.csv && ok || fail "validate FILE: $(cat one.csv)"
"$bin" validate mine > dir.out || fail "validate DIR"
grep -q '^mine: 1 case, mean absolute error' dir.out && ok || fail "validate DIR: $(tail -1 dir.out)"

# Bad files: each fails (exit 2) with one line naming the file and the field.
sed '/^measurement:/,/^  flop_formula:/d' mine/one.yaml > bad-missing.yaml
expect_error "missing measurement" "bad-missing.yaml: field 'measurement': missing" validate bad-missing.yaml
sed 's/^  dp: 32/  dp: 16/' mine/one.yaml > bad-product.yaml
expect_error "tp*pp*dp != gpus" "bad-product.yaml: field 'plan.gpus'" validate bad-product.yaml
sed 's/^node_type: .*/node_type: {cluster: no-such-cluster, name: x}/' mine/one.yaml > bad-preset.yaml
expect_error "unknown cluster preset" "bad-preset.yaml: field 'node_type.cluster': unknown preset 'no-such-cluster'" validate bad-preset.yaml
sed 's/flop_formula: .*/flop_formula: kaplan-2020/' mine/one.yaml > bad-formula.yaml
expect_error "unknown flop_formula" "bad-formula.yaml: field 'measurement.flop_formula': unknown formula 'kaplan-2020'" validate bad-formula.yaml
expect_error "no such file" "no-such.yaml: cannot read it" validate no-such.yaml
"$bin" validate bad-formula.yaml > /dev/null 2>&1; [ $? -eq 2 ] && ok || fail "a bad case does not exit 2"

# Memory cases: the measured figure against the same figure of the measured rank's stage, a
# column per memory term that adds up to it (allocated, and the reserve on top for max reserved),
# and a summary line per set; no run that trained is called out of memory.
"$bin" validate validation/megatron-ci-memory validation/torchtitan-memory --csv out/m.csv --quiet > out/m.txt && ok ||
  fail "validate of the memory sets: $(tail -3 out/m.txt)"
grep -q '^megatron-ci-memory: memory of [0-9]* cases, mean absolute error' out/m.txt && ok || fail "memory summary: $(cat out/m.txt)"
grep -q '^torchtitan-memory: memory of [0-9]* cases, mean absolute error' out/m.txt && ok || fail "memory summary: $(cat out/m.txt)"
python3 - out/m.csv <<'PY' && ok || fail "memory terms do not add up to the predicted figure"
import csv, sys
allocated = ["weights", "gradients", "master_weights", "optimizer_states", "workspace", "activations",
             "layer_transient", "loss", "gathered_params", "unreduced_grads", "optimizer_step", "pipeline_buffers"]
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) > 80, len(rows)
for r in rows:
    total = sum(float(r[f"mem_{k}_gib"]) for k in allocated)
    if r["memory_figure"] == "max_reserved":
        total += float(r["mem_allocator_reserve_gib"])
    assert abs(total - float(r["predicted_figure_gib"])) <= 2e-3, (r["case"], total, r["predicted_figure_gib"])
    assert r["fits"] == "true", r["case"]
PY
"$bin" validate --quiet > out/all.txt && ok || fail "validate: $(tail -3 out/all.txt)"
! grep -q "predicted not to fit" out/all.txt && ok || fail "a run that trained is called out of memory: $(grep 'not to fit' out/all.txt)"
finish
