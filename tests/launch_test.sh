#!/usr/bin/env bash
# Launching plans: local processes and a real Slurm (scripts/slurm-local.sh: two slurmd
# "nodes" on loopback) run rank_probe on every node of a 2-node heterogeneous plan, and every
# rank's coordinates and environment are checked against the plan; a failing node is reported;
# plans that must not launch are refused; docker commands are written. Megatron-LM commands from
# trainer configs and Slurm options (dry runs); tests/tiny_gpt_train.py trains for real on CPU
# (local and Slurm) and launch report, launch status and calibrate --from-run read its logs;
# hand-made logs give launch report's and calibrate's exact numbers.
# Usage: launch_test.sh PATH/TO/fasop-cpp PATH/TO/rank_probe
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
probe=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
slurm_dir=""
cleanup() {
  [ -n "$slurm_dir" ] && bash "$root/scripts/slurm-local.sh" stop "$slurm_dir" > /dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
source "$root/tests/test_lib.sh"
# The plan: the tiny model on two node types of 2 GPUs, tp 2, pp 2 (dp 1).
cluster=$root/tests/data/launch/two-types.yaml
"$bin" search --model "$root/tests/data/profiler/tiny.yaml" --cluster "$cluster" --fix tp=2,pp=2 --out-dir logs \
  --save-plan plan.yaml --quiet > /dev/null || fail "search for the launch plan"
order=($(sed -n 's/^node_order: \[\(.*\)\].*/\1/p' plan.yaml | tr -d '",'))
[ "${#order[@]}" -eq 2 ] && ok || fail "the plan does not run on 2 nodes: ${order[*]}"

# expected_lines MASTER NODE0 NODE1: the probe's lines, worked out by hand. Node rank 0 holds
# ranks 0 and 1 (stage 0, tensor-parallel lanes 0 and 1), node rank 1 ranks 2 and 3 (stage 1).
expected_lines() {
  local master=$1 n0=$2 n1=$3
  for r in 0 1 2 3; do
    local node=$((r / 2)) host=$n0
    [ $node -eq 1 ] && host=$n1
    echo "rank=$r local_rank=$((r % 2)) node_rank=$node stage=$node dp=0 tp=$((r % 2)) world_size=4 nnodes=2" \
      "master=$master:29500 node_type=${order[$node]} node=$host"
  done
}

# Local processes.
"$bin" launch --plan plan.yaml --backend local --trainer-cmd "$probe" > local.out 2>&1 || fail "local launch: $(cat local.out)"
cat main_logs/runs/local-1/node-0.log main_logs/runs/local-1/node-1.log > local.lines
host=$(hostname)
diff <(expected_lines 127.0.0.1 "$host" "$host") local.lines > /dev/null && ok ||
  fail "local ranks differ from the plan: $(diff <(expected_lines 127.0.0.1 "$host" "$host") local.lines)"
"$bin" launch status local-1 > status.out && grep -q "every node exited with 0" status.out && ok || fail "local status: $(cat status.out)"
"$bin" launch --plan plan.yaml --backend local --trainer-cmd 'echo "node $NODE_RANK gives up"; exit $((NODE_RANK * 3))' \
  > /dev/null 2>&1 && fail "a failing local job exits 0" || ok
"$bin" launch status local-2 > status2.out; rc=$?
[ $rc -ne 0 ] && grep -q "node rank 1 (${order[1]}) failed with exit code 3" status2.out && grep -q "node 1 gives up" status2.out &&
  ok || fail "local failure not reported (exit $rc): $(cat status2.out)"
"$bin" launch logs local-2 --node 1 | grep -q "node 1 gives up" && ok || fail "launch logs --node 1"

# Refusals: a plan that does not fit (on a cluster with tiny GPUs), a node type without Slurm.
sed 's/gpu_memory_gib: 16/gpu_memory_gib: 0.001/' "$cluster" > tiny-gpus.yaml
expect_error "out-of-memory plan" "--force" launch --plan plan.yaml --cluster tiny-gpus.yaml --backend local --trainer-cmd true
"$bin" launch --plan plan.yaml --cluster tiny-gpus.yaml --backend local --trainer-cmd true --force > /dev/null && ok ||
  fail "--force does not launch an out-of-memory plan"
grep -v "partition: a10," "$cluster" > no-slurm.yaml
expect_error "node type without Slurm" "'box-b' (used by plan.yaml) has no Slurm mapping; pass --partition box-b=NAME" \
  launch --plan plan.yaml --cluster no-slurm.yaml --backend slurm --dry-run --trainer-cmd true
"$bin" launch --plan plan.yaml --backend slurm --dry-run --trainer-cmd "$probe" > batch.sh || fail "slurm --dry-run"
[ "$(grep -c '^#SBATCH hetjob$' batch.sh)" -eq 1 ] && grep -q "srun --het-group=0,1" batch.sh && ok || fail "not a 2-component hetjob"
first=$([ "${order[0]}" = box-a ] && echo a100 || echo a10)
grep -m1 "^#SBATCH --partition" batch.sh | grep -q "partition=$first " && ok || fail "component 0 is not node rank 0's partition $first"
expect_error "docker without an image" "--image" launch --plan plan.yaml --backend docker --master-addr 10.0.0.1
"$bin" launch --plan plan.yaml --backend docker --image img:1 --master-addr 10.0.0.1 --mount /data:/data > docker.sh ||
  fail "docker commands"
[ "$(grep -c '^docker run --rm --name fasop-node[01] --network host --ipc host --gpus all -v /data:/data' docker.sh)" -eq 2 ] &&
  grep -q "NODE_RANK=1" docker.sh && grep -q "MASTER_ADDR=10.0.0.1" docker.sh && bash -n docker.sh && ok ||
  fail "docker commands: $(cat docker.sh)"
"$bin" launch --plan plan.yaml --backend docker --runtime podman --no-gpus --image img:1 --master-addr 10.0.0.1 \
  --container-args "--ulimit nofile=1024:1024" | grep -c "^podman run --ulimit nofile=1024:1024 --rm --name fasop-node" |
  grep -qx 2 && ok || fail "podman lines with --container-args"

# Megatron-LM's command from the default trainer config (megatron-mock): mock data, the plan's
# vocabulary for the NullTokenizer, 50 iterations, tp 2's CUDA_DEVICE_MAX_CONNECTIONS, and
# torchrun's underscore flags (older torchruns, Debian's 1.13 among them, know no others).
"$bin" launch --plan plan.yaml --backend slurm --dry-run > megatron.sh || fail "slurm --dry-run with the default trainer"
trainer=$(grep "^bash -c 'torchrun " megatron.sh)
for flag in --mock-data "--tokenizer-type NullTokenizer" "--vocab-size 1024" "--train-iters 50" \
  '--nproc_per_node "$GPUS_PER_NODE"' '--node_rank "$NODE_RANK"' '--master_addr "$MASTER_ADDR"' \
  '--master_port "$MASTER_PORT"' "--tensor-model-parallel-size 2" "--pipeline-model-parallel-size 2"; do
  case "$trainer" in *" $flag "*) ok ;; *) fail "the default trainer command lacks '$flag': $trainer" ;; esac
done
[ "$(grep -cE '^  [01]\) .*; export CUDA_DEVICE_MAX_CONNECTIONS=1; ;;$' megatron.sh)" -eq 2 ] && ok ||
  fail "CUDA_DEVICE_MAX_CONNECTIONS=1 is not exported on both nodes: $(grep -E '^  [01]\) ' megatron.sh)"
# A hand-made trainer config: its iterations and environment added, its seq-length (which the
# plan sets too) left out with a note in node.sh's header.
short=$root/tests/data/launch/trainer-short.yaml
"$bin" launch --plan plan.yaml --backend slurm --dry-run --trainer-config "$short" > short.sh ||
  fail "slurm --dry-run with $short"
trainer=$(grep "^bash -c 'torchrun " short.sh)
case "$trainer" in *" --train-iters 7'"*) ok ;; *) fail "trainer-short.yaml's --train-iters 7 missing: $trainer" ;; esac
[ "$(grep -o -- '--seq-length [0-9]*' <<< "$trainer")" = "--seq-length 32" ] && ok ||
  fail "not only the plan's --seq-length 32: $trainer"
grep -qxF "# --seq-length: the plan's 32 kept (trainer config $short gives 64)" short.sh && ok ||
  fail "no note of the kept --seq-length: $(grep -- '^# ' short.sh)"
[ "$(grep -cE '^  [01]\) .*; export NCCL_DEBUG=WARN;' short.sh)" -eq 2 ] && ok ||
  fail "NCCL_DEBUG=WARN is not exported on both nodes: $(grep -E '^  [01]\) ' short.sh)"
expect_error "trainer config setting the plan's micro-batch" "trainer-fixes-mbs.yaml: field 'args.micro-batch-size'" \
  launch --plan plan.yaml --backend slurm --dry-run --trainer-config "$root/tests/data/launch/trainer-fixes-mbs.yaml"
# Slurm options: box-b's partition, GRES and constraint replaced; sbatch options in every component.
"$bin" launch --plan plan.yaml --backend slurm --dry-run --trainer-cmd "$probe" \
  --partition box-b=gpu-x,gres=gpu:2,constraint=l4 --sbatch-arg=--time=00:10:00 --sbatch-arg=--exclusive > options.sh ||
  fail "slurm --dry-run with --partition and --sbatch-arg"
grep -qx "#SBATCH --partition=gpu-x --nodes=1 .*--gres=gpu:2 --constraint=l4" options.sh &&
  grep -qx "#SBATCH --partition=a100 --nodes=1 --ntasks-per-node=1" options.sh && ok ||
  fail "--partition box-b=gpu-x,...: $(grep '^#SBATCH --partition' options.sh)"
[ "$(grep -cx '#SBATCH --time=00:10:00' options.sh)" -eq 2 ] && [ "$(grep -cx '#SBATCH --exclusive' options.sh)" -eq 2 ] &&
  bash -n options.sh && ok || fail "--sbatch-arg not in both components: $(grep '^#SBATCH' options.sh)"
expect_error "--partition of an unknown node type" "no node type 'nosuch'" \
  launch --plan plan.yaml --backend slurm --dry-run --trainer-cmd true --partition nosuch=x
# Pyxis: the container's image, the user's mounts beside the run, work and plan directories.
"$bin" launch --plan plan.yaml --backend slurm --dry-run --trainer-cmd "$probe" --container-image img:1 \
  --container-mounts /data:/data > pyxis.sh || fail "slurm --dry-run with --container-image"
srun_line=$(grep "^srun " pyxis.sh)
case "$srun_line" in
  *" --container-image=img:1 "*"--container-mounts="*"$(pwd -P)/main_logs/runs:$(pwd -P)/main_logs/runs,"*"/data:/data"*"--container-workdir=$(pwd -P) "*) ok ;;
  *) fail "srun line with pyxis: $srun_line" ;;
esac
expect_error "--container-image on local processes" "--backend slurm" \
  launch --plan plan.yaml --backend local --dry-run --trainer-cmd true --container-image img:1
[ ! -e main_logs/runs/local-5 ] && ok || fail "a dry run or docker launch made a run directory"

# The PyTorch-native and NeMo stacks: llama3-8b on 2 nodes of 8 H100, tp 4 dp 2 pp 2, FSDP2 (ZeRO 3).
"$bin" search --model llama3-8b --cluster aws-h100 --nodes p5.48xlarge=2 --fix tp=4,pp=2,mbs=1,zero=3,recompute=full \
  --save-plan stack-plan.yaml --out-dir stack-logs --quiet > /dev/null || fail "search for the stacks' plan"
# torchtitan on Slurm: each node writes the plan's module (schedule --format torchtitan's) to its
# own folder and runs torchtitan.train on it, with the default trainer config's 50 steps.
"$bin" launch --plan stack-plan.yaml --stack torchtitan --backend slurm --partition p5.48xlarge=gpu --dry-run \
  > torchtitan.sh || fail "slurm --dry-run of --stack torchtitan"
"$bin" schedule --plan stack-plan.yaml --format torchtitan -o fasop_plan.py > /dev/null || fail "schedule --format torchtitan"
# node.sh runs it in bash -c '...', where each quote of the module is written '\''.
sed -n "/FASOP_PLAN_PY'\\\\''$/,/^FASOP_PLAN_PY$/p" torchtitan.sh | sed '1d;$d' | sed "s/'\\\\''/'/g" > launched.py
[ -s launched.py ] && diff fasop_plan.py launched.py > /dev/null && ok ||
  fail "the launched module is not schedule's: $(diff fasop_plan.py launched.py | head -5)"
grep -q ' -m torchtitan.train --module fasop_plan --config fasop_plan --training.steps 50 --metrics.log_freq 1' torchtitan.sh &&
  grep -qxF "# trainer config configs/trainers/torchtitan-short.yaml, the default for --stack torchtitan (--trainer-config to give another)" torchtitan.sh &&
  bash -n torchtitan.sh && ok || fail "torchtitan's trainer line or note: $(grep -e torchtitan.train -e '^# trainer' torchtitan.sh)"
# Megatron-Bridge in containers: its entry point with the plan's recipe and overrides, then mock data.
"$bin" launch --plan stack-plan.yaml --stack megatron-bridge --backend docker --image nemo:1 --master-addr 10.0.0.1 \
  > bridge.sh || fail "docker commands of --stack megatron-bridge"
[ "$(grep -c "^docker run .* bash -c 'torchrun .* scripts/training/run_recipe.py --model llama3_8b --mode pretrain .*model.transformer.tensor_model_parallel_size=4.* --dataset mock --max_steps 50'$" bridge.sh)" -eq 2 ] &&
  bash -n bridge.sh && ok || fail "Megatron-Bridge's docker lines: $(grep '^docker' bridge.sh | cut -c1-300)"
"$bin" launch --plan stack-plan.yaml --stack megatron-bridge --backend slurm --partition p5.48xlarge=gpu --dry-run \
  --bridge-script /opt/Megatron-Bridge/scripts/training/run_recipe.py > bridge-slurm.sh &&
  grep -q "/opt/Megatron-Bridge/scripts/training/run_recipe.py --model llama3_8b" bridge-slurm.sh && ok ||
  fail "--bridge-script in the Slurm script: $(grep run_recipe bridge-slurm.sh | cut -c1-200)"
# torchtitan in containers: the module's heredoc survives docker's bash -c quoting.
"$bin" launch --plan stack-plan.yaml --stack torchtitan --backend docker --image titan:1 --master-addr 10.0.0.1 > titan-docker.sh &&
  bash -n titan-docker.sh && [ "$(grep -c "^docker run .* bash -c 'dir=" titan-docker.sh)" -eq 2 ] && ok ||
  fail "torchtitan's docker lines: $(grep -c '^docker run' titan-docker.sh)"
# Local processes with a stand-in torchrun: every node's module parses as Python and is schedule's.
mkdir -p fake-bin
# It logs torchtitan's metrics line at 8,192 tokens a second a GPU: 512 x 8192 tokens a step on
# 16 GPUs make 32 s a step for launch report.
printf '%s\n' '#!/bin/bash' 'm=${PYTHONPATH%%:*}/fasop_plan.py' 'cmp -s "$m" "$EXPECTED_MODULE" || exit 7' 'echo "torchrun $*"' \
  'for s in 1 2 3 4 5 6; do echo "[rank0]:[titan] - INFO - step: $s  loss:  7.0  memory: 30.00GiB(37.50%)  tps: 8,192  tflops: 1.00  mfu: 0.10%"; done' \
  > fake-bin/torchrun
chmod +x fake-bin/torchrun
"$bin" schedule --plan "$(pwd)/stack-plan.yaml" --format torchtitan -o expected_plan.py > /dev/null
PATH="$(pwd)/fake-bin:$PATH" EXPECTED_MODULE="$(pwd)/expected_plan.py" "$bin" launch --plan "$(pwd)/stack-plan.yaml" \
  --stack torchtitan --backend local > titan-local.out 2>&1 && grep -q "2 nodes, 0 failed" titan-local.out && ok ||
  fail "local torchtitan launch with a stand-in torchrun: $(cat titan-local.out; cat main_logs/runs/local-*/node-*.log 2>/dev/null | tail -3)"
titan_job=$(sed -n 's/^local job \(local-[0-9]*\):.*/\1/p' titan-local.out)
"$bin" launch report "$titan_job" --warmup 2 > titan.report 2>&1 &&
  grep -q "^iterations 3-6 measured (2 warm-up iterations skipped; 6 logged)" titan.report &&
  grep -qE "^step time \(s\) +32\.0000 " titan.report && ok ||
  fail "launch report of torchtitan's log: $(cat titan.report)"
expect_error "a trainer config setting torchtitan's tp" "field 'args.parallelism.tensor_parallel_degree'" \
  launch --plan stack-plan.yaml --stack torchtitan --backend local --dry-run --trainer-config "$root/tests/data/launch/trainer-titan-tp.yaml"
expect_error "--megatron-script with --stack torchtitan" "--megatron-script and --fsdp are Megatron-LM's" \
  launch --plan stack-plan.yaml --stack torchtitan --backend local --dry-run --megatron-script x.py
expect_error "a model torchtitan does not ship" "names no torchtitan configuration" \
  launch --plan plan.yaml --stack torchtitan --backend local --dry-run

# csv_field FILE COLUMN: the value of COLUMN (by its header name) in FILE's first row.
csv_field() { awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i } NR == 2 && c { print $c }' "$1"; }
# near A B REL: A is B within REL of B.
near() {
  awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { if (a !~ /^[-+0-9.eE]+$/ || b !~ /^[-+0-9.eE]+$/) exit 1
    d = a - b; if (d < 0) d = -d; if (b < 0) b = -b; exit !(d <= r * b) }'
}
report_header=job,first_iteration,last_iteration,warmup_iterations,measured_step_s,min_step_s,max_step_s,predicted_step_s,error,tokens_per_s_per_gpu,predicted_tokens_per_s_per_gpu,mfu,predicted_mfu,max_allocated_gib,max_reserved_gib,predicted_peak_memory_gib,rank,stage,moment,predicted_allocated_gib,allocated_error,predicted_reserved_gib,reserved_error
# rank_rows FILE: report.csv's per-rank rows as "rank:stage" words, in the file's order.
rank_rows() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR > 2 { printf "%s%s:%s", (n++ ? " " : ""), $c["rank"], $c["stage"] } END { print "" }' "$1"; }
# rank_field FILE RANK COLUMN: COLUMN of RANK's row.
rank_field() { awk -F, -v r="$2" -v n="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR > 2 && $c["rank"] == r { print $c[n] }' "$1"; }

# Real training on CPU: tests/tiny_gpt_train.py under torchrun, pipeline- and data-parallel
# (tp 1, pp 2, dp 2: 4 ranks on the 2 nodes, gloo), printing Megatron-LM's log lines, which
# launch report, launch status and calibrate --from-run read. Needs Debian's python3-torch and
# python3-yaml. That torch (1.13) knows only torchrun's underscore flags, and its torchrun crashes
# on Python 3.11 unless given --redirects and --tee (their default "0" parses to None there): 2
# leaves stdout alone. About 10 s on 2 cores (about 14 s through Slurm, below).
"$bin" search --model "$root/tests/data/profiler/tiny.yaml" --cluster "$cluster" --fix tp=1,pp=2,dp=2 --out-dir logs \
  --save-plan train-plan.yaml --quiet > /dev/null || fail "search for the training plan"
train_cmd='/usr/bin/torchrun --nnodes "$NNODES" --nproc_per_node "$GPUS_PER_NODE" --node_rank "$NODE_RANK"'
train_cmd+=' --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" --redirects 2 --tee 2 --monitor_interval 1'
train_cmd+=' --log_dir "$FASOP_RUN_DIR/torchrun-$NODE_RANK" '"$(printf %q "$root/tests/tiny_gpt_train.py")"' --iters 10'
train_predicted=$(sed -n 's/^  step_time_s: //p' train-plan.yaml)
have_torch=0
[ -x /usr/bin/torchrun ] && /usr/bin/python3 -c 'import torch, yaml' 2> /dev/null && have_torch=1
# check_training JOB WHERE: JOB's run (2 nodes, 10 iterations) trained and reads back.
check_training() {
  local job=$1 where=$2 run=main_logs/runs/$1 losses
  [ "$(cat "$run"/node-0.exit "$run"/node-1.exit 2>/dev/null | tr '\n' ' ')" = "0 0 " ] && ok ||
    fail "$where training: node exit codes $(cat "$run"/node-*.exit 2>&1 | tr '\n' ' '); $(tail -n 5 "$run"/node-*.log 2>&1)"
  "$bin" launch report "$job" --warmup 2 > "$job.report" 2>&1 && grep -q "^iterations 3-10 measured" "$job.report" && ok ||
    fail "$where training: launch report: $(cat "$job.report")"
  # The run's row, then the memory lines' ranks: data-parallel rank 0 of each stage (tp 1, dp 2).
  [ -f "$run/report.csv" ] && [ "$(head -1 "$run/report.csv")" = "$report_header" ] && [ "$(wc -l < "$run/report.csv")" -eq 4 ] &&
    [ "$(rank_rows "$run/report.csv")" = "0:0 2:1" ] && ok || fail "$where training: report.csv: $(cat "$run/report.csv" 2>&1)"
  awk -v s="$(csv_field "$run/report.csv" measured_step_s)" 'BEGIN { exit !(s > 0) }' && ok ||
    fail "$where training: measured_step_s not positive: $(cat "$run/report.csv")"
  near "$(csv_field "$run/report.csv" predicted_step_s)" "$train_predicted" 1e-12 && ok ||
    fail "$where training: predicted_step_s is not the plan's $train_predicted: $(cat "$run/report.csv")"
  # The last rank (node 1) logs the loss: it falls from iteration 1 to 10.
  losses=$(awk 'match($0, / iteration +[0-9]+[\/] +10 [|]/) { it = substr($0, RSTART, RLENGTH); sub(/[\/].*/, "", it); gsub(/[^0-9]/, "", it)
                 l = $0; sub(/.*[|] lm loss: */, "", l); sub(/ .*/, "", l); loss[it + 0] = l }
               END { print loss[1], loss[10] }' "$run/node-1.log")
  awk -v a="${losses% *}" -v b="${losses#* }" 'BEGIN { exit !(a != "" && b != "" && b + 0 < a + 0) }' && ok ||
    fail "$where training: lm loss at iterations 1 and 10: '$losses'"
}
if [ "$have_torch" -eq 0 ]; then
  echo "SKIP: the training runs need /usr/bin/torchrun and python3's torch and yaml (python3-torch, python3-yaml)"
else
  "$bin" launch --plan train-plan.yaml --backend local --master-port "$(free_port)" --trainer-cmd "$train_cmd" > train.out 2>&1 ||
    fail "local training: $(cat train.out)"
  train_job=$(sed -n 's/^local job \(local-[0-9]*\):.*/\1/p' train.out)
  check_training "$train_job" local
  "$bin" launch status "$train_job" > train-status.out 2>&1 && grep -q "^iteration 10/10: " train-status.out && ok ||
    fail "local training: launch status: $(cat train-status.out)"
  # The CPU is far slower than the cluster file's made-up peaks: the GEMM share goes down.
  "$bin" calibrate --from-run "$train_job" --warmup 2 > train-cal.out 2>&1 &&
    awk '$2 == "fp16.gemm_peak_share" { n++; if ($4 < $3) down++; if ($4 > $3) up++ }
         END { exit !(n == 2 && down >= 1 && up == 0) }' train-cal.out && ok ||
    fail "local training: calibrate --from-run: $(cat train-cal.out)"
fi

# Exact numbers from hand-made logs: tests/data/launch/run-handmade is a run directory as launch
# writes it (launch.txt, nodes.txt, exit codes, node 0's memory line); the tp 2 / pp 2 plan goes
# in as its plan.yaml, and node 1's log is written here from that plan's predicted step time P:
# iterations 2 to 12 logged every 2, the intervals up to 4 (the warm-up) far off, then those of
# 6, 8, 10 and 12 at 0.75, 1.25, 1 and 1 times F x P, a mean of F x P.
cp -r "$root/tests/data/launch/run-handmade" handmade
cp plan.yaml handmade/plan.yaml
[ "$(cut -d' ' -f2 handmade/nodes.txt | tr '\n' ' ')" = "${order[*]} " ] && ok ||
  fail "run-handmade/nodes.txt is not the plan's node order ${order[*]}"
predicted=$(sed -n 's/^  step_time_s: //p' plan.yaml)
handmade_log() {
  awk -v p="$predicted" -v f="$1" 'BEGIN {
    split("20 10 0.75 1.25 1 1", m, " ")
    for (i = 1; i <= 6; i++)
      printf " [2026-11-23 18:00:00.000000] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.9f | learning rate: 1.000000E-03 | global batch size: %5d | lm loss: %.6E | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n", 2 * i, 12, 16 * i, (i <= 2 ? m[i] : m[i] * f) * p * 1000, 8, 7 - 0.1 * i
  }'
  echo "[Rank 2] (after 2 iterations) memory (MB) | allocated: 150.0 | max allocated: 250.0 | reserved: 350.0 | max reserved: 480.0"
  echo "[Rank 3] (after 2 iterations) memory (MB) | allocated: 150.0 | max allocated: 300.0 | reserved: 350.0 | max reserved: 512.0"
}
# handmade_mean LOG: the mean step (s) of the intervals after iteration 4, from the numbers as printed.
handmade_mean() {
  awk 'match($0, / iteration +[0-9]+[\/]/) { it = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", it)
         ms = $0; sub(/.*elapsed time per iteration \(ms\): /, "", ms); sub(/ .*/, "", ms)
         if (it + 0 > 4) { sum += 2 * ms; n += 2 } }
       END { printf "%.17g\n", sum / n / 1000 }' "$1"
}
handmade_log 1.25 > handmade/node-1.log
mean=$(handmade_mean handmade/node-1.log)
"$bin" launch report "$PWD/handmade" --warmup 4 > handmade.report 2>&1 && grep -q "^iterations 5-12 measured" handmade.report &&
  ok || fail "hand-made run: launch report: $(cat handmade.report)"
csv=handmade/report.csv
[ "$(head -1 $csv 2>/dev/null)" = "$report_header" ] && [ "$(csv_field $csv job)" = handmade-1 ] &&
  [ "$(csv_field $csv first_iteration),$(csv_field $csv last_iteration),$(csv_field $csv warmup_iterations)" = 5,12,4 ] &&
  ok || fail "hand-made run: report.csv: $(cat $csv 2>&1)"
near "$(csv_field $csv measured_step_s)" "$mean" 1e-9 && ok || fail "hand-made run: measured_step_s is not $mean: $(cat $csv)"
near "$(csv_field $csv min_step_s)" "$(awk -v m="$mean" 'BEGIN { printf "%.17g", 0.75 * m }')" 1e-6 &&
  near "$(csv_field $csv max_step_s)" "$(awk -v m="$mean" 'BEGIN { printf "%.17g", 1.25 * m }')" 1e-6 && ok ||
  fail "hand-made run: min/max steps are not 0.75/1.25 x $mean: $(cat $csv)"
near "$(csv_field $csv predicted_step_s)" "$predicted" 1e-12 && ok || fail "hand-made run: predicted_step_s is not $predicted: $(cat $csv)"
near "$(csv_field $csv error)" 0.25 1e-6 && ok || fail "hand-made run: error is not 0.25: $(cat $csv)"
# Tokens per second per GPU: the tiny model's global batch 8 x sequence 32, on 4 GPUs.
near "$(csv_field $csv tokens_per_s_per_gpu)" "$(awk -v m="$mean" 'BEGIN { printf "%.17g", 8 * 32 / m / 4 }')" 1e-9 && ok ||
  fail "hand-made run: tokens_per_s_per_gpu is not 8 x 32 / $mean / 4: $(cat $csv)"
# Memory: the largest max reserved (rank 3's 512 MB) and the largest max allocated (rank 3's
# 300 MB, over rank 2's 250 MB).
near "$(csv_field $csv max_reserved_gib)" 0.5 1e-12 && ok || fail "hand-made run: max_reserved_gib is not 512/1024: $(cat $csv)"
near "$(csv_field $csv max_allocated_gib)" "$(awk 'BEGIN { printf "%.17g", 300 / 1024 }')" 1e-12 && ok ||
  fail "hand-made run: max_allocated_gib is not the largest, 300/1024: $(cat $csv)"
# Per rank: ranks 0-1 run stage 0 and 2-3 stage 1 (tp 2, dp 1); each rank's own maxima against
# its stage's prediction, the error their ratio - 1; the run's row predicts the larger stage's.
[ "$(rank_rows $csv)" = "0:0 2:1 3:1" ] && ok || fail "hand-made run: ranks and stages are not 0:0 2:1 3:1: $(cat $csv)"
near "$(rank_field $csv 2 max_allocated_gib)" "$(awk 'BEGIN { printf "%.17g", 250 / 1024 }')" 1e-12 &&
  near "$(rank_field $csv 0 max_reserved_gib)" "$(awk 'BEGIN { printf "%.17g", 400 / 1024 }')" 1e-12 && ok ||
  fail "hand-made run: ranks 2's max allocated and 0's max reserved are not 250/1024 and 400/1024: $(cat $csv)"
[ "$(rank_field $csv 2 predicted_allocated_gib)" = "$(rank_field $csv 3 predicted_allocated_gib)" ] &&
  [ "$(rank_field $csv 3 predicted_allocated_gib)" = "$(csv_field $csv predicted_allocated_gib)" ] && ok ||
  fail "hand-made run: ranks 2 and 3 (stage 1) predict differently, or the run's row not theirs: $(cat $csv)"
for r in 0 2 3; do
  near "$(rank_field $csv $r allocated_error)" \
    "$(awk -v m="$(rank_field $csv $r max_allocated_gib)" -v p="$(rank_field $csv $r predicted_allocated_gib)" 'BEGIN { printf "%.17g", m / p - 1 }')" 1e-12 &&
    near "$(rank_field $csv $r reserved_error)" \
      "$(awk -v m="$(rank_field $csv $r max_reserved_gib)" -v p="$(rank_field $csv $r predicted_reserved_gib)" 'BEGIN { printf "%.17g", m / p - 1 }')" 1e-12 &&
    ok || fail "hand-made run: rank $r's errors are not measured / predicted - 1: $(cat $csv)"
done
grep -qE "^   3     1 (forward|backward|optimizer step) +0\.29 " handmade.report && ok ||
  fail "hand-made run: no per-rank line for rank 3 in launch report: $(cat handmade.report)"
# Calibrated GPU data makes the estimate meet the run. The tiny model's step is mostly not GEMMs:
# the default parameter (gemm_peak_share, at its bound 0.2) explains about +6% at most, so this
# +25% run fits memory_share; a second copy at +4% fits the default.
estimated_step() { "$bin" estimate --plan plan.yaml --cluster "$1" 2>&1 | sed -n 's/^step time *\([0-9.e+-]*\) s$/\1/p'; }
"$bin" calibrate --from-run "$PWD/handmade" --warmup 4 --fit-params memory_share --out cal.yaml > cal.out 2>&1 &&
  grep -q "fp16.memory_share" cal.out && ok || fail "hand-made run: calibrate --fit-params memory_share: $(cat cal.out)"
step=$(estimated_step cal.yaml)
near "$step" "$mean" 0.005 && ok || fail "hand-made run: estimate with the calibrated memory_share gives '$step' s, measured $mean s"
# The memory lines fit each GPU's workspace_gib: box-b's cpu-b (stage 0) by rank 0's measured -
# predicted max allocated, box-a's cpu-a (stage 1) by the mean of ranks 2's and 3's (the median
# of two); the fit meets rank 0's max allocated exactly.
expected_workspace() {  # GPU RANK...: the GPU's workspace before, plus the median gap of RANKs
  local before gaps
  before=$(awk -v g="$1" '$1 == g && $2 == "memory_runtime.megatron.workspace_gib" { print $3 }' cal.out)
  shift
  gaps=$(for r in "$@"; do echo "$(rank_field $csv $r max_allocated_gib) $(rank_field $csv $r predicted_allocated_gib)"; done)
  awk -v b="$before" '{ s += $1 - $2; n++ } END { printf "%.17g", b + s / n }' <<< "$gaps"
}
fitted_workspace() { sed -n "s/^#   node type $1: gpu_data: {.*workspace_gib: \([0-9.e+-]*\),.*/\1/p" cal.yaml; }
near "$(fitted_workspace box-b)" "$(expected_workspace cpu-b 0)" 1e-9 &&
  near "$(fitted_workspace box-a)" "$(expected_workspace cpu-a 2 3)" 1e-9 && ok ||
  fail "hand-made run: calibrate's workspace_gib is not the GPU's plus its ranks' median gap: $(cat cal.out; head -3 cal.yaml)"
[ "$(grep -c '^ *workspace_gib: ' cal.yaml)" -eq 2 ] && [ "$(grep -c '^ *reserve_share: ' cal.yaml)" -eq 2 ] && ok ||
  fail "hand-made run: cal.yaml does not set memory_runtime on both node types: $(cat cal.yaml)"
awk '$1 == "handmade-1" && $2 == 0 && ($8 == "(+0.0%)" || $8 == "(-0.0%)") { found = 1 } END { exit !found }' cal.out && ok ||
  fail "hand-made run: the fitted workspace does not meet rank 0's max allocated: $(cat cal.out)"
cp -r handmade handmade-4pc
handmade_log 1.04 > handmade-4pc/node-1.log
mean4=$(handmade_mean handmade-4pc/node-1.log)
"$bin" calibrate --from-run "$PWD/handmade-4pc" --warmup 4 --no-fit-memory --out cal4.yaml > cal4.out 2>&1 &&
  awk '$2 == "fp16.gemm_peak_share" && $4 < $3 { down++ } END { exit !down }' cal4.out && ok ||
  fail "hand-made run at +4%: calibrate: $(cat cal4.out)"
! grep -q "memory_runtime" cal4.yaml && ok || fail "hand-made run at +4%: --no-fit-memory fitted memory: $(cat cal4.out)"
step=$(estimated_step cal4.yaml)
near "$step" "$mean4" 0.005 && ok || fail "hand-made run at +4%: estimate with the calibrated gemm_peak_share gives '$step' s, measured $mean4 s"
# Runs that cannot be reported: no node logs, logs without iteration lines, all in the warm-up.
mkdir nologs && cp handmade/launch.txt handmade/nodes.txt handmade/plan.yaml nologs/
expect_error "report of a run without logs" "no node has a log" launch report "$PWD/nologs"
mkdir noiters && cp handmade/launch.txt handmade/nodes.txt handmade/plan.yaml handmade/node-0.log noiters/
grep -v " iteration " handmade/node-1.log > noiters/node-1.log
expect_error "report of logs without iteration lines" "no iteration lines" launch report "$PWD/noiters"
expect_error "report with every iteration in the warm-up" "warm-up" launch report "$PWD/handmade" --warmup 100
# A run a node of which failed (its port taken, say) is no measurement, whatever its logs hold.
cp -r handmade failed && echo 1 > failed/node-0.exit
expect_error "report of a failed run" "node rank 0 (${order[0]}) exited 1; a failed run is not a measurement" \
  launch report "$PWD/failed" --warmup 4
expect_error "calibrate --from-run of a failed run" "node rank 0 (${order[0]}) exited 1" \
  calibrate --from-run "$PWD/failed" --warmup 4

# A real Slurm on loopback: one heterogeneous job, node types on their partitions (box-a: a100
# = n1, box-b: a10 = n2). Needs root and Debian's slurmctld/slurmd/munge (scripts/install-deps.sh).
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld > /dev/null; then
  echo "SKIP: the Slurm part needs root and slurmctld, slurmd, slurm-client, munge"
else
  slurm_dir=$(mktemp -d /tmp/fasop-slurm-test.XXXXXX)
  if ! bash "$root/scripts/slurm-local.sh" start "$slurm_dir" > slurm-start.out 2>&1; then
    fail "slurm-local.sh start: $(tail -n 20 slurm-start.out)"
  else
    export SLURM_CONF=$slurm_dir/slurm.conf
    # wait_for JOB: until every node has exited (at most 60 s).
    wait_for() {
      for _ in $(seq 120); do
        [ "$(ls main_logs/runs/"$1"/node-*.exit 2>/dev/null | wc -l)" -eq 2 ] && return 0
        sleep 0.5
      done
      return 1
    }
    job=$("$bin" launch --plan plan.yaml --backend slurm --trainer-cmd "$probe" | sed -n 's/^submitted Slurm job \([0-9]*\).*/\1/p')
    [ -n "$job" ] && wait_for "$job" && ok || fail "slurm job '$job' did not finish: $(cat main_logs/runs/slurm-$job.out 2>&1)"
    declare -A slurm_node=([box-a]=n1 [box-b]=n2)
    cat main_logs/runs/"$job"/node-0.log main_logs/runs/"$job"/node-1.log > slurm.lines 2>/dev/null
    diff <(expected_lines 127.0.0.1 "${slurm_node[${order[0]}]}" "${slurm_node[${order[1]}]}") slurm.lines > /dev/null && ok ||
      fail "slurm ranks differ from the plan: $(diff <(expected_lines 127.0.0.1 "${slurm_node[${order[0]}]}" "${slurm_node[${order[1]}]}") slurm.lines)"
    "$bin" launch status "$job" > slurm-status.out && grep -q "component 0 COMPLETED" slurm-status.out &&
      grep -q "component 1 COMPLETED" slurm-status.out && ok || fail "slurm status: $(cat slurm-status.out)"
    job=$("$bin" launch --plan plan.yaml --backend slurm --trainer-cmd \
      'if [ "$NODE_RANK" = 1 ]; then echo "rank 1 goes down"; exit 3; fi; true' | sed -n 's/^submitted Slurm job \([0-9]*\).*/\1/p')
    wait_for "$job" || fail "the failing slurm job did not finish"
    sleep 1  # scontrol learns the job's end a moment after the nodes
    "$bin" launch status "$job" > slurm-fail.out; rc=$?
    [ $rc -ne 0 ] && grep -q "node rank 1 (${order[1]} on ${slurm_node[${order[1]}]}) failed with exit code 3" slurm-fail.out &&
      grep -q "rank 1 goes down" slurm-fail.out && ok || fail "slurm failure not reported (exit $rc): $(cat slurm-fail.out)"
    # Options sbatch passes on: a time limit and whole nodes, in both components.
    job=$("$bin" launch --plan plan.yaml --backend slurm --trainer-cmd "$probe" --sbatch-arg=--time=00:05:00 \
      --sbatch-arg=--exclusive | sed -n 's/^submitted Slurm job \([0-9]*\).*/\1/p')
    [ -n "$job" ] && wait_for "$job" && ok || fail "the slurm job with --sbatch-arg '$job' did not finish"
    for _ in $(seq 20); do  # until scontrol knows the end
      "$bin" launch status "$job" > slurm-args.out 2>&1 && break
      sleep 0.5
    done
    grep -q "component 0 COMPLETED" slurm-args.out && grep -q "component 1 COMPLETED" slurm-args.out && ok ||
      fail "slurm job with --sbatch-arg: $(cat slurm-args.out)"
    scontrol show job "$job" > slurm-args.job 2>&1
    [ "$(grep -o 'TimeLimit=00:05:00' slurm-args.job | wc -l)" -eq 2 ] && [ "$(grep -o 'OverSubscribe=NO' slurm-args.job | wc -l)" -eq 2 ] &&
      ok || fail "Slurm did not take --time=00:05:00 and --exclusive for both components: $(cat slurm-args.job)"
    # The training run through Slurm: both "nodes" are this machine, MASTER_ADDR is node rank 0's
    # NodeAddr (127.0.0.1), which the rendezvous must reach.
    if [ "$have_torch" -eq 1 ]; then
      job=$("$bin" launch --plan train-plan.yaml --backend slurm --master-port "$(free_port)" --trainer-cmd "$train_cmd" |
        sed -n 's/^submitted Slurm job \([0-9]*\).*/\1/p')
      [ -n "$job" ] && wait_for "$job" && ok ||
        fail "slurm training job '$job' did not finish: $(cat main_logs/runs/slurm-$job.out 2>&1)"
      check_training "$job" slurm
    fi
  fi
fi

finish
