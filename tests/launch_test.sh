#!/usr/bin/env bash
# Launching plans: local processes and a real Slurm (scripts/slurm-local.sh: two slurmd
# "nodes" on loopback) run rank_probe on every node of a 2-node heterogeneous plan, and every
# rank's coordinates and environment are checked against the plan; a failing node is reported;
# plans that must not launch are refused; docker commands are written.
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
grep -v "partition: a10}" "$cluster" > no-slurm.yaml
expect_error "node type without Slurm" "'box-b' (used by plan.yaml) has no Slurm mapping" \
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
[ ! -e main_logs/runs/local-5 ] && ok || fail "a dry run or docker launch made a run directory"

# A real Slurm on loopback: one heterogeneous job, node types on their partitions (box-a: a100
# = n1, box-b: a10 = n2). Needs root and Debian's slurmctld/slurmd/munge (scripts/install-deps.sh).
if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld > /dev/null; then
  echo "SKIP: the Slurm part needs root and slurmctld, slurmd, slurm-client, munge"
else
  slurm_dir=$(mktemp -d /tmp/fasop-slurm-test.XXXXXX)
  if ! bash "$root/scripts/slurm-local.sh" start "$slurm_dir" > slurm-start.out 2>&1; then
    fail "slurm-local.sh start: $(tail -20 slurm-start.out)"
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
  fi
fi

finish
