#!/usr/bin/env bash
# The profiler as a user meets it (needs fasop-profile, built where LibTorch and Gloo are):
# a tiny model's layers profiled on CPU drive `search`; times grow with the micro-batch; tp 2
# shards do half the matrix work of tp 1; the GEMM sweep writes its points and a fit in the GPU
# data's terms; the network profile over Gloo fits its points; bad input is a clear error that
# leaves no file.
# Usage: profiler_test.sh PATH/TO/fasop-cpp
set -uo pipefail
bin=$1
data=$(cd "$(dirname "$0")/data/profiler" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"
# Layers: tp 1 and 2, mbs 1 and 2, on CPU. Timings on a shared 2-core machine are noisy, so the
# spread bound is not held here; a separate check below shows it refuses.
"$bin" profile layers --model "$data/tiny.yaml" --device cpu --tp 1,2 --mbs 1,2 --threads 1 --repeats 15 \
  --allow-noisy -o "$work/profiles/tiny_cpu.yaml" --quiet > "$work/layers.out" 2>&1 || fail "profile layers: $(tail -3 "$work/layers.out")"
profile="$work/profiles/tiny_cpu.yaml"
[ -s "$profile" ] && ok || fail "no profile written"
# value LAYER TP MBS [SECTION]: a number from the profile's YAML.
value() {
  awk -v layer="  $1:" -v tp="$2" -v mbs="$3" -v section="${4:-forward_s}:" '
    $0 == section { in_section = 1; next }
    /^[a-z_]+:/ { in_section = 0 }
    in_section && $0 == layer { in_layer = 1; next }
    in_section && /^  [a-z_]+:$/ { in_layer = 0 }
    in_section && in_layer && $1 == tp ":" {
      line = $0; sub(/^[^{]*\{/, "", line); sub(/\}.*/, "", line)
      n = split(line, pairs, ", ")
      for (i = 1; i <= n; i++) { split(pairs[i], kv, ": "); if (kv[1] == mbs) print kv[2] }
    }' "$profile"
}
# A layer's forward plus backward at mbs 1 and 2: measured (positive). Their order is not
# asserted: on a machine busy with other work a timing of twice the work can come out faster
# (seen: 0.027 s -> 0.024 s with three other processes on two cores), and the layer model's
# scaling with mbs is tested on exact numbers in analytic_test.
for layer in transformer post_process; do
  one=$(awk -v f="$(value $layer 1 1)" -v b="$(value $layer 1 1 backward_s)" 'BEGIN { print f + b }')
  two=$(awk -v f="$(value $layer 1 2)" -v b="$(value $layer 1 2 backward_s)" 'BEGIN { print f + b }')
  awk -v a="$one" -v b="$two" 'BEGIN { exit !(a > 0 && b > 0) }' && ok || fail "$layer times not positive: $one, $two"
  echo "note: $layer forward + backward, mbs 1 -> 2: $one s -> $two s"
done
for layer in transformer post_process; do
  f1=$(value $layer 1 2 matmul_flops) f2=$(value $layer 2 2 matmul_flops)
  awk -v a="$f1" -v b="$f2" 'BEGIN { r = b / a; exit !(r > 0.499 && r < 0.501) }' && ok ||
    fail "$layer: tp 2 matmul FLOPs $f2 are not half of tp 1's $f1"
done
# The profile drives search and estimate like a shipped one, on a one-node CPU "cluster".
printf 'name: cpu-box\nnode_types:\n  - {name: box, gpu: cpu, gpus_per_node: 2, gpu_memory_gib: 16, intra_node_bandwidth_bits_per_s: 1e11, inter_node_bandwidth_bits_per_s: 1e10, price_usd_per_hour: 1}\nnodes:\n  - {type: box, count: 2}\n' > "$work/cpu-box.yaml"
"$bin" search --model "$data/tiny.yaml" --cluster "$work/cpu-box.yaml" --profile-dir "$work/profiles" \
  --out-dir "$work/logs" --quiet > "$work/search.out" 2>&1 && grep -q "candidates" "$work/search.out" && ok ||
  fail "search from the measured profile: $(tail -3 "$work/search.out")"
"$bin" estimate --model "$data/tiny.yaml" --cluster "$work/cpu-box.yaml" --profile-dir "$work/profiles" \
  --mbs 1 --tp 2 --dp 1 --pp 2 --json > "$work/estimate.json" 2>&1 && grep -q '"step_time_s"' "$work/estimate.json" && ok ||
  fail "estimate from the measured profile: $(cat "$work/estimate.json")"

# The accuracy loop: a whole step of the tiny model against the estimate from a profile measured
# in the same rounds. How close they come is the machine's business, not the test's (0-6% on an
# idle 2-core machine, -48% seen on one busy with other work): scripts/bench-profile.sh reports
# it. The test checks the loop runs, reports an error, and writes a profile that loads.
"$bin" profile step --model "$data/tiny.yaml" --measure-profile "$work/step_profile.yaml" --mbs 2 --threads 1 \
  > "$work/step.out" 2>&1 || fail "profile step: $(tail -3 "$work/step.out")"
error=$(sed -n 's/.*error \([-+0-9.]*\)%.*/\1/p' "$work/step.out")
awk -v e="$error" 'BEGIN { exit !(e ~ /^[-+]?[0-9.]+$/) }' && ok || fail "profile step reports no error: $(cat "$work/step.out")"
echo "note: the step estimate is off by $error% on this machine now"
grep -q "^forward_s:" "$work/step_profile.yaml" && ok || fail "profile step wrote no profile"
expect_error "step without a profile" "--measure-profile" profile step --model "$data/tiny.yaml"

# The spread bound refuses, and then no file appears.
"$bin" profile layers --model "$data/tiny.yaml" --tp 1 --mbs 1 --repeats 4 --max-spread 0 -o "$work/noisy.yaml" \
  --quiet > /dev/null 2> "$work/noisy.err"
[ $? -ne 0 ] && grep -q "allow-noisy" "$work/noisy.err" && [ ! -e "$work/noisy.yaml" ] && ok ||
  fail "spread bound: $(cat "$work/noisy.err")"
# Bad input: a clear error, no partial file.
expect_error "unknown device" "--device" profile layers --model "$data/tiny.yaml" --device tpu -o "$work/x.yaml"
expect_error "tp not dividing the heads" "--tp 3" profile layers --model "$data/tiny.yaml" --tp 3 -o "$work/x.yaml"
touch "$work/file"
expect_error "unwritable output" "$work/file/x" profile layers --model "$data/tiny.yaml" --tp 1 --mbs 1 -o "$work/file/x/out.yaml"
[ -z "$(ls "$work" | grep -E '^x\.yaml')" ] && ok || fail "a failed profile left a file"

# GEMMs: the quick CPU grid in fp32 (no timing is held to a bound: the machine may be busy).
"$bin" profile gemm --device cpu --quick --dtype fp32 -o "$work/gemm.yaml" --quiet > "$work/gemm.out" 2>&1 ||
  fail "profile gemm: $(tail -3 "$work/gemm.out")"
gemm="$work/gemm.yaml"
[ -s "$gemm" ] && ok || fail "profile gemm wrote no file"
grep -q "^# Measured by \`fasop-cpp profile gemm --device cpu --dtype fp32 --quick\` on cpu, LibTorch " "$gemm" && ok ||
  fail "profile gemm header: $(head -1 "$gemm")"
grep -qx "gpu: cpu" "$gemm" && grep -qx "device: cpu" "$gemm" && ok || fail "profile gemm lacks gpu: cpu / device: cpu"
# Each point's tflops is its 2 m n k FLOPs over its seconds (to the 6 digits written).
awk '/^  - \{dtype: fp32, / {
       line = $0; gsub(/[{}]/, "", line); n = split(line, f, ", ")
       for (i = 1; i <= n; i++) { split(f[i], kv, ": "); sub(/^ *- */, "", kv[1]); v[kv[1]] = kv[2] }
       points++
       if (!(v["seconds"] > 0)) { print "bad seconds: " $0; bad++; next }
       want = 2 * v["m"] * v["n"] * v["k"] / v["seconds"] / 1e12
       if (v["tflops"] <= 0 || (want - v["tflops"]) / want > 1e-4 || (v["tflops"] - want) / want > 1e-4) {
         print "tflops " v["tflops"] " is not 2mnk/seconds = " want ": " $0; bad++
       }
     }
     END { if (points != 64) { print points " points, not the 64 of the quick grid"; bad++ } exit bad > 0 }' "$gemm" \
  > "$work/gemm.check" && ok || fail "profile gemm points: $(head -3 "$work/gemm.check")"
# fit_field DTYPE FIELD: a number from the fit's line for DTYPE.
fit_field() { sed -n "s/^  $1: .*[{ ]$2: \([-0-9.e+]*\).*/\1/p" "$3"; }
share=$(fit_field fp32 gemm_peak_share "$gemm") half=$(fit_field fp32 gemm_half_dim "$gemm")
awk -v s="$share" -v h="$half" 'BEGIN { exit !(s != "" && s > 0 && s <= 1 && h != "" && h >= 0) }' && ok ||
  fail "fitted gemm_peak_share '$share' not in (0,1] or gemm_half_dim '$half' negative"
for field in median_error_pct worst_error_pct; do
  [ -n "$(fit_field fp32 $field "$gemm")" ] && ok || fail "the fit lacks $field"
done
grep -q "measured maximum" "$gemm" && ok || fail "without a peak the file does not say the share is against the measured maximum"
# Against a shipped GPU's peak (H100 fp32: 67 TFLOP/s, so a CPU reaches a tiny share); FP8 is
# skipped with a note where this LibTorch (or the CPU) cannot run it.
"$bin" profile gemm --quick --dtype fp32,fp8 --gpu H100 --shapes 64x64x64,128x128x128 -o "$work/gemm_h100.yaml" --quiet \
  > "$work/gemm_h100.out" 2>&1 || fail "profile gemm --gpu H100: $(tail -3 "$work/gemm_h100.out")"
grep -q "fp8: not supported" "$work/gemm_h100.out" && ! grep -q "dtype: fp8" "$work/gemm_h100.yaml" && ok ||
  fail "fp8 on this LibTorch: $(cat "$work/gemm_h100.out")"
share=$(fit_field fp32 gemm_peak_share "$work/gemm_h100.yaml") peak=$(fit_field fp32 peak_tflops "$work/gemm_h100.yaml")
awk -v s="$share" -v p="$peak" 'BEGIN { exit !(s > 0 && s < 0.5 && p == 67) }' && ok ||
  fail "fit against the H100's fp32 peak: share '$share', peak '$peak'"
# Bad input: one line naming the flag, exit 2, no file.
expect_exit_2() {
  local what=$1; shift
  "$bin" "$@" > /dev/null 2>&1
  [ $? -eq 2 ] && ok || fail "$what: exit status is not 2"
}
expect_error "unknown dtype" "--dtype: unknown 'fp64'" profile gemm --dtype fp64 -o "$work/gemm_bad.yaml"
expect_exit_2 "unknown dtype" profile gemm --dtype fp64 -o "$work/gemm_bad.yaml"
expect_error "shape not MxNxK" "--shapes" profile gemm --shapes 64x64 -o "$work/gemm_bad.yaml"
expect_exit_2 "shape not MxNxK" profile gemm --shapes 64x64 -o "$work/gemm_bad.yaml"
expect_error "unknown GPU" "--gpu" profile gemm --gpu Z100 -o "$work/gemm_bad.yaml"
expect_error "bad peak" "--peak-tflops" profile gemm --peak-tflops bf16 -o "$work/gemm_bad.yaml"
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  expect_error "gemm on cuda without a GPU" "--device cuda" profile gemm --device cuda -o "$work/gemm_bad.yaml"
  expect_exit_2 "gemm on cuda without a GPU" profile gemm --device cuda -o "$work/gemm_bad.yaml"
fi
[ ! -e "$work/gemm_bad.yaml" ] && ok || fail "a failed profile gemm left a file"

# Network: Gloo between 2 local processes: a positive bandwidth and latency, written in the
# cluster file's field names, and the fit's worst relative error reported. How close the fitted
# lines come to the points is the machine's business, not the test's (4-13% on an idle 2-core
# machine, 22-35% on one busy with other work): the fit itself is checked on exact data in
# alpha_beta_fit_test.
"$bin" profile net --backend gloo --ranks 2 -o "$work/net.yaml" --quiet > "$work/net.out" 2>&1 ||
  fail "profile net: $(tail -5 "$work/net.out")"
worst=$(sed -n 's/.*worst relative error \([0-9.]*\)%.*/\1/p' "$work/net.out" | sort -g | tail -1)
awk -v w="$worst" 'BEGIN { exit !(w != "" && w >= 0) }' && ok || fail "profile net reports no fit error: $(cat "$work/net.out")"
echo "note: the network fit's worst point is off by $worst%"
bw=$(awk '/^intra_node_bandwidth_bits_per_s:/ { print $2 }' "$work/net.yaml")
awk -v b="$bw" 'BEGIN { exit !(b > 0) }' && ok || fail "network bandwidth '$bw' is not positive"
grep -q "^intra_node_latency_s:" "$work/net.yaml" && ok || fail "net profile lacks intra_node_latency_s"
expect_error "one rank" "--ranks" profile net --backend gloo --ranks 1
# NCCL: built in where the CUDA toolkit has it, and then needs a GPU per rank; without GPUs
# (or NCCL) a clear error either way.
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  expect_error "nccl without GPUs" "--backend nccl" profile net --backend nccl --ranks 2 -o "$work/nccl.yaml"
  [ ! -e "$work/nccl.yaml" ] && ok || fail "a failed nccl profile left a file"
fi

finish
