#!/usr/bin/env bash
# Smoke test of scripts/slurm-local.sh: starts the loopback Slurm, submits a two-component
# heterogeneous job (component 0 on partition a100 = node n1, component 1 on a10 = node n2)
# whose one srun step spans both components, waits for it, checks where each task ran and
# what it saw, then checks that a failing task gives the job FAILED with ExitCode 3:0, and stops
# the cluster. Exits 0 on success, 1 on failure, 77 (skip) without root or without Slurm installed.
# Takes ~5 s.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
harness=$here/scripts/slurm-local.sh

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root"; exit 77; fi
for t in slurmctld slurmd munged sbatch; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not installed ($("$harness" packages))"; exit 77; }
done

work=$(mktemp -d /tmp/fasop-slurm-smoke.XXXXXX)
dir=$work/cluster
fail() { echo "FAIL: $*"; for f in "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
cleanup() { "$harness" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

"$harness" start "$dir" >/dev/null || fail "start"
# shellcheck disable=SC1091
. "$dir/env.sh"

# The `scontrol -o show job` line of job $1 alone (for a hetjob leader, scontrol shows all components).
job_line() { scontrol -o show job "$1" | grep "^JobId=$1 "; }

# Waits for job $1 to leave the queue (at most $2 s), then prints its JobState and ExitCode
# (`scontrol show job` keeps it for MinJobAge=3600 s; there is no sacct).
wait_job() {
  local id=$1 limit=$2
  for _ in $(seq 1 $((limit * 5))); do
    [ -z "$(squeue -h -j "$id" -o %i 2>/dev/null)" ] && break
    sleep 0.2
  done
  job_line "$id" | tr ' ' '\n' | grep -E '^(JobState|ExitCode)=' | tr '\n' ' '
}

cat > "$work/het.sh" <<'EOF'
#!/bin/bash
#SBATCH --partition=a100 --nodes=1 --ntasks=2
#SBATCH hetjob
#SBATCH --partition=a10 --nodes=1 --ntasks=1
echo "BATCH node=$SLURMD_NODENAME hetsize=$SLURM_HET_SIZE g0=$SLURM_JOB_NODELIST_HET_GROUP_0 g1=$SLURM_JOB_NODELIST_HET_GROUP_1"
srun --het-group=0,1 bash -c 'echo "TASK procid=$SLURM_PROCID nodeid=$SLURM_NODEID node=$SLURMD_NODENAME ntasks=$SLURM_NTASKS g0=$SLURM_JOB_NODELIST_HET_GROUP_0 n0=$SLURM_NTASKS_HET_GROUP_0"'
EOF
id=$(cd "$work" && sbatch --parsable -o "$work/het-%j.out" het.sh) || fail "sbatch"
id=${id%%+*}
state=$(wait_job "$id" 20)
[[ $state == *"JobState=COMPLETED"*"ExitCode=0:0"* ]] || fail "hetjob $id: $state"
state1=$(wait_job "$((id + 1))" 5)
[[ $state1 == *"JobState=COMPLETED"* ]] || fail "hetjob component 1 ($((id + 1))): $state1"
out=$(sort "$work/het-$id.out")
expected="BATCH node=n1 hetsize=2 g0=n1 g1=n2
TASK procid=0 nodeid=0 node=n1 ntasks=3 g0=n1 n0=2
TASK procid=1 nodeid=0 node=n1 ntasks=3 g0=n1 n0=2
TASK procid=2 nodeid=1 node=n2 ntasks=3 g0=n1 n0=2"
[ "$out" = "$expected" ] || fail "hetjob output:
$out
expected:
$expected"
[ "$(job_line "$id" | tr ' ' '\n' | grep '^NodeList=')" = NodeList=n1 ] || fail "component 0 not on n1"
[ "$(job_line "$((id + 1))" | tr ' ' '\n' | grep '^NodeList=')" = NodeList=n2 ] || fail "component 1 not on n2"

# A task that exits 3: the job is FAILED with ExitCode=3:0 (the batch script's status, which
# is srun's, which is its worst task's).
# shellcheck disable=SC2016  # expanded by the task
id=$(sbatch --parsable -o "$work/fail-%j.out" -p a100 -N1 -n1 : -p a10 -N1 -n1 \
  --wrap 'srun --het-group=0,1 bash -c "[ \$SLURM_PROCID = 1 ] && exit 3; exit 0"') || fail "sbatch (failing job)"
id=${id%%+*}
state=$(wait_job "$id" 20)
[[ $state == *"JobState=FAILED"*"ExitCode=3:0"* ]] || fail "failing job $id: $state"

"$harness" stop "$dir" || fail "stop"
echo "PASS: slurm smoke (hetjob on n1+n2, failing task -> FAILED ExitCode=3:0)"
