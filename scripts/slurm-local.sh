#!/usr/bin/env bash
# A real Slurm (22.05, Debian 12) on loopback, for tests: munged, slurmctld and two slurmd
# (nodes n1 and n2 on one machine), all with their state in one fresh directory.
#
#   scripts/slurm-local.sh start [DIR]   start the daemons (DIR: a fresh state directory, default
#                                        /tmp/fasop-slurm.XXXXXX); waits until both nodes are
#                                        idle, then prints the client environment (also in DIR/env.sh)
#   scripts/slurm-local.sh stop [DIR]    stop the daemons started in DIR (by their recorded PIDs)
#                                        and remove DIR; without DIR, the one in $FASOP_SLURM_DIR
#   scripts/slurm-local.sh status [DIR]  sinfo and squeue of that cluster
#   scripts/slurm-local.sh packages      the Debian packages it needs (install them as root:
#                                        apt-get install -y --no-install-recommends $(... packages))
#
# Partitions: a100 (node n1), a10 (node n2) and all (both; the default), 2 CPUs per node, no GRES.
# A heterogeneous job puts one component per partition: sbatch -p a100 -N1 : -p a10 -N1 job.sh
# Must run as root (the daemons run as root; SlurmUser=root). Jobs stay visible to
# `scontrol show job` for MinJobAge=3600 s after they end; there is no slurmdbd (no sacct).
# The environment variable FASOP_SLURM_TIMEOUT (seconds, default 30) bounds the wait for the nodes.
set -euo pipefail

slurm_packages="slurmctld slurmd slurm-client munge"

die() { echo "slurm-local: $*" >&2; exit 1; }
log() { echo "slurm-local: $*" >&2; }

need_tools() {
  local t missing=()
  for t in munged mungekey slurmctld slurmd sinfo squeue scontrol ss; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "missing ${missing[*]}; install: apt-get install -y --no-install-recommends $slurm_packages"
  fi
}

# Whether the process PID is alive and runs the program NAME (guards against a reused PID).
pid_is() {
  local pid=$1 name=$2 comm
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  local _p _c state
  { read -r comm < "/proc/$pid/comm"; } 2>/dev/null || return 1
  [ "$comm" = "$name" ] || return 1
  # A zombie (State Z: dead, not yet reaped by its parent, here often PID 1) counts as gone.
  { read -r _p _c state _ < "/proc/$pid/stat"; } 2>/dev/null || return 1
  [ "$state" != Z ]
}

# The daemons recorded in DIR/pids ("name pid" lines) that still run.
live_daemons() {
  local dir=$1 name pid
  [ -f "$dir/pids" ] || return 0
  while read -r name pid; do
    if pid_is "$pid" "$name"; then echo "$name $pid"; fi
  done < "$dir/pids"
}

# The recorded daemons whose processes are gone (or zombies), whatever their name now.
exited_daemons() {
  local dir=$1 name pid state _p _c
  [ -f "$dir/pids" ] || return 0
  while read -r name pid; do
    if ! kill -0 "$pid" 2>/dev/null || ! { read -r _p _c state _ < "/proc/$pid/stat"; } 2>/dev/null || [ "$state" = Z ]; then
      echo "$name $pid"
    fi
  done < "$dir/pids"
}

# A base port P such that P, P+1 and P+2 are free on TCP.
pick_ports() {
  local used base i
  used=$(ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); print a[n]}' | sort -u)
  for i in $(seq 1 200); do
    base=$(( 20000 + (RANDOM % 2000) * 3 ))
    if ! grep -qxE "$base|$((base + 1))|$((base + 2))" <<<"$used"; then echo "$base"; return; fi
  done
  die "no free ports found"
}

tails() {
  local dir=$1 f
  for f in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/n1/slurmd.log "$dir"/n2/slurmd.log; do
    [ -f "$f" ] || continue
    echo "--- tail $f" >&2
    tail -n 15 "$f" >&2
  done
}

# Kills the daemons of DIR that still run (all at once: each takes ~1.8 s to exit on SIGTERM);
# waits up to 10 s, then SIGKILLs what is left.
kill_daemons() {
  local dir=$1 name pid i
  local -a pids=() names=() left=()
  [ -f "$dir/pids" ] || return 0
  while read -r name pid; do
    if pid_is "$pid" "$name"; then pids+=("$pid"); names+=("$name"); fi
  done < "$dir/pids"
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  local k
  for i in $(seq 1 200); do
    left=()
    for k in "${!pids[@]}"; do pid_is "${pids[$k]}" "${names[$k]}" && left+=("$k"); done
    [ ${#left[@]} -eq 0 ] && break
    sleep 0.05
  done
  for i in "${left[@]}"; do
    log "${names[$i]} ${pids[$i]} ignored SIGTERM for 10 s; SIGKILL"
    kill -KILL "${pids[$i]}" 2>/dev/null || true
  done
}

# The processes of the jobs of the cluster of DIR: slurmstepd and the tasks, which inherit
# SLURM_CONF from its slurmd, and tasks have SLURM_JOB_ID (a shell that sourced env.sh has not).
job_processes() {
  local dir=$1 p comm envs
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" != "$$" ] || continue
    { read -r comm < "$p/comm"; } 2>/dev/null || continue
    envs=$({ tr '\0' '\n' < "$p/environ"; } 2>/dev/null) || continue
    grep -qxF "SLURM_CONF=$dir/slurm.conf" <<<"$envs" || continue
    if [ "$comm" = slurmstepd ] || grep -q '^SLURM_JOB_ID=' <<<"$envs"; then
      echo "${p#/proc/} $comm"
    fi
  done
  return 0
}

write_conf() {
  local dir=$1 base=$2
  # slurmd 22.05 starts its cgroup plugin whatever the other plugins; where no cgroup
  # filesystem is mounted (containers, chroots) the autodetected one fails, cgroup/v1 does not
  # (nothing here uses cgroups: proctrack/linuxproc, task/none).
  cat > "$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
  cat > "$dir/slurm.conf" <<EOF
# Written by fasop-cpp scripts/slurm-local.sh: a test cluster on loopback.
ClusterName=fasoplocal
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdSpoolDir=$dir/%n/spool
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmdLogFile=$dir/%n/slurmd.log
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
MinJobAge=3600
ReturnToService=2
MailProg=/bin/true
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=all Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
PartitionName=a100 Nodes=n1 MaxTime=INFINITE State=UP
PartitionName=a10 Nodes=n2 MaxTime=INFINITE State=UP
EOF
}

# Starts PROGRAM ARGS... in the foreground mode of the daemon, detached, and records its PID.
spawn() {
  local dir=$1 name=$2 out=$3; shift 3
  setsid "$@" </dev/null >"$out" 2>&1 &
  echo "$name $!" >> "$dir/pids"
}

cmd_start() {
  local dir=${1:-} base i idle
  [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons run as root)"
  need_tools
  if [ -n "$dir" ]; then
    if [ -e "$dir" ]; then
      [ -d "$dir" ] || die "$dir exists and is not a directory"
      if [ -n "$(live_daemons "$dir")" ]; then
        die "$dir has running daemons ($(live_daemons "$dir" | tr '\n' ' ')); stop it first: $0 stop $dir"
      fi
      if [ -n "$(ls -A "$dir")" ]; then
        [ -f "$dir/slurm.conf" ] || [ -f "$dir/pids" ] ||
          die "$dir is not empty and not a slurm-local directory; refusing to wipe it"
        log "removing the leftover state in $dir"
        rm -rf "$dir"
      fi
    fi
    mkdir -p "$dir"
  else
    dir=$(mktemp -d /tmp/fasop-slurm.XXXXXX)
  fi
  dir=$(cd "$dir" && pwd -P)
  chmod 755 "$dir"
  mkdir -p "$dir/munge" "$dir/ctld" "$dir/n1/spool" "$dir/n2/spool"
  chmod 755 "$dir/munge"
  : > "$dir/pids"
  base=$(pick_ports)
  write_conf "$dir" "$base"

  # If anything below fails, leave nothing running.
  trap 'tails "$dir"; kill_daemons "$dir"; log "start failed; state left in $dir"' ERR

  mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  spawn "$dir" munged "$dir/munge/munged.out" munged --foreground --force \
    --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  for i in $(seq 1 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
  [ -S "$dir/munge/munge.socket" ] || { tails "$dir"; kill_daemons "$dir"; die "munged did not start"; }

  export SLURM_CONF="$dir/slurm.conf"
  spawn "$dir" slurmctld "$dir/slurmctld.out" slurmctld -D -i -f "$dir/slurm.conf"
  spawn "$dir" slurmd "$dir/n1/slurmd.out" slurmd -D -N n1 -f "$dir/slurm.conf"
  spawn "$dir" slurmd "$dir/n2/slurmd.out" slurmd -D -N n2 -f "$dir/slurm.conf"

  local timeout=${FASOP_SLURM_TIMEOUT:-30}
  idle=0
  for i in $(seq 1 $((timeout * 5))); do
    # A daemon that died ends the wait. (Not "fewer than 4 live daemons": spawn records the PID
    # of a subshell that execs setsid and then the daemon, and on a busy machine the first
    # checks come before those execs, when its name is not yet the daemon's.)
    if [ "$(exited_daemons "$dir" | wc -l)" -ne 0 ]; then break; fi
    idle=$(sinfo -h -N -p all -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l || true)
    [ "$idle" -eq 2 ] && break
    sleep 0.2
  done
  trap - ERR
  if [ "$idle" -ne 2 ]; then
    echo "slurm-local: the nodes did not become idle within ${timeout} s; daemons running:" >&2
    live_daemons "$dir" >&2 || true
    sinfo -N 2>&1 | sed 's/^/  /' >&2 || true
    tails "$dir"
    for f in "$dir"/slurmctld.out "$dir"/n1/slurmd.out "$dir"/n2/slurmd.out "$dir"/munge/munged.out; do
      [ -s "$f" ] && { echo "--- $f" >&2; tail -n 5 "$f" >&2; }
    done
    kill_daemons "$dir"
    die "start failed; state left in $dir (remove it, or start again with it as DIR)"
  fi
  cat > "$dir/env.sh" <<EOF
export SLURM_CONF=$dir/slurm.conf
export FASOP_SLURM_DIR=$dir
EOF
  cat "$dir/env.sh"
}

cmd_stop() {
  local dir=${1:-${FASOP_SLURM_DIR:-}} i p
  [ -n "$dir" ] || die "stop: which directory? ($0 stop DIR, or set FASOP_SLURM_DIR)"
  [ -d "$dir" ] || die "stop: $dir is not a directory"
  [ -f "$dir/slurm.conf" ] || [ -f "$dir/pids" ] ||
    die "stop: $dir is not a slurm-local directory; not removing it"
  dir=$(cd "$dir" && pwd -P)
  export SLURM_CONF="$dir/slurm.conf"
  # Cancel the jobs still running, so that no slurmstepd or task outlives the daemons.
  if [ -n "$(live_daemons "$dir")" ] &&
     [ -n "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null || true)" ]; then
    scancel --full --quiet -u root 2>/dev/null || scancel --full --quiet 2>/dev/null || true
    for i in $(seq 1 50); do
      [ -z "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null || true)" ] && break
      sleep 0.1
    done
  fi
  kill_daemons "$dir"
  if [ -n "$(live_daemons "$dir")" ]; then die "stop: daemons still running: $(live_daemons "$dir")"; fi
  local procs
  procs=$(job_processes "$dir")
  if [ -n "$procs" ]; then
    log "killing leftover job processes: $(tr '\n' ' ' <<<"$procs")"
    # shellcheck disable=SC2046  # one PID per word
    kill -KILL $(cut -d' ' -f1 <<<"$procs") 2>/dev/null || true
  fi
  rm -rf "$dir"
}

cmd_status() {
  local dir=${1:-${FASOP_SLURM_DIR:-}}
  if [ -n "$dir" ]; then export SLURM_CONF="$dir/slurm.conf"; fi
  { [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; } ||
    die "status: no cluster ($0 status DIR, or source DIR/env.sh)"
  if [ -n "$dir" ]; then echo "daemons:"; live_daemons "$dir" | sed 's/^/  /'; fi
  sinfo
  squeue
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  packages) echo "$slurm_packages" ;;
  *) echo "usage: $0 start [DIR] | stop [DIR] | status [DIR] | packages" >&2; exit 2 ;;
esac
