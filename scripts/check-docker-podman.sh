#!/bin/bash
# check-docker-podman.sh: a manual check (not a CI test) that the per-node commands of
# `fasop-cpp launch --backend docker --runtime podman` really run in containers.
#
# It installs podman and runc when missing, builds a minimal Debian rootfs with debootstrap
# once (downloaded from a Debian mirror, cached in $FASOP_PODMAN_CACHE), imports it as the
# image fasop-test:minbase (no registry pull), saves a plan (tiny model on the two-types
# cluster, tp=2 pp=2), prints the docker lines with
#   launch --backend docker --runtime podman --no-gpus --image fasop-test:minbase
#          --master-addr 127.0.0.1 --mount TMP:TMP --mount BUILD:BUILD:ro
#          --trainer-cmd '<rootfs marker test> && exec BUILD/tests/rank_probe'
# and runs the line of each node (both at once) with the flags this host needs added
# (PODMAN_EXTRA, printed), then checks the probe's lines against the plan: two per node,
# node rank 0 = ranks 0,1 of stage 0, node rank 1 = ranks 2,3 of stage 1, tp lanes 0,1,
# world_size=4, nnodes=2, master=127.0.0.1:29500, node_type from the plan's node_order.
# The trainer command only starts rank_probe when /etc/fasop-podman-rootfs exists, a file
# that only the imported rootfs has, so a passing run did run inside the image.
#
# Usage: scripts/check-docker-podman.sh          (as root; Debian/Ubuntu with apt-get)
# Environment:
#   FASOP_BUILD          build directory with fasop-cpp and tests/rank_probe (default REPO/build;
#                        built there with make when missing)
#   FASOP_PODMAN_CACHE   rootfs cache (default /var/cache/fasop-podman-rootfs)
#   DEBIAN_MIRROR        debootstrap mirror (default http://deb.debian.org/debian)
#   PODMAN_OCI_RUNTIME   podman --runtime (default runc; empty: podman's default). crun, which a
#                        plain `apt-get install podman` picks, fails on this cgroup v1/hybrid VM:
#                        "crun: cgroups in hybrid mode not supported"
#   KEEP=1               keep the temporary directory
# Timings: rootfs build (first run only; about 2 min on 2 cores), image import (seconds),
# each node's podman run (about a second). Measured on a 2-core Debian 12 VM: apt-get install
# podman runc 27 s, debootstrap 99-120 s, import 5.5-7 s, each node 0.5-1.3 s.
set -euo pipefail

say() { printf '%s\n' "check-docker-podman: $*"; }
die() { printf '%s\n' "check-docker-podman: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${FASOP_BUILD:-$REPO/build}")
CACHE=${FASOP_PODMAN_CACHE:-/var/cache/fasop-podman-rootfs}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
OCI_RUNTIME=${PODMAN_OCI_RUNTIME-runc}
IMAGE=fasop-test:minbase
SUITE=bookworm
INCLUDE=libyaml-cpp0.7          # rank_probe links libyaml-cpp.so.0.7; minbase has libstdc++6
MARKER=/etc/fasop-podman-rootfs # exists only in the imported rootfs
ROOTFS=$CACHE/$SUITE-minbase

cat <<EOF
==========================================================================================
 MANUAL CHECK, NOT A CI TEST: this script changes the machine it runs on.
 - installs podman and runc with apt-get when missing (and debootstrap),
 - downloads a Debian $SUITE minbase rootfs (~200 MB unpacked) from $MIRROR into
   $CACHE (kept and reused), and imports it as the podman image $IMAGE.
==========================================================================================
EOF

[ "$(id -u)" = 0 ] || die "run as root (apt-get, debootstrap and rootful podman)"

# 1. Packages.
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  say "!!! INSTALLING ${missing[*]} (apt-get install --no-install-recommends) !!!"
  t0=$(now)
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  say "timing: apt-get install ${missing[*]}: $(since "$t0") s"
fi
say "$(podman --version), $(runc --version | head -1)"

# 2. fasop-cpp and rank_probe.
if [ ! -x "$BUILD/fasop-cpp" ] || [ ! -x "$BUILD/tests/rank_probe" ]; then
  [ -f "$BUILD/Makefile" ] || die "$BUILD is not configured: cmake -S $REPO -B $BUILD -DFASOP_WITH_PROFILER=OFF"
  say "building fasop-cpp and rank_probe in $BUILD"
  make -C "$BUILD" -j"$(nproc)" fasop-cpp rank_probe >/dev/null
fi
FASOP=$BUILD/fasop-cpp
PROBE=$BUILD/tests/rank_probe

# 3. The rootfs, built once. The stamp names what it was built with; a different list rebuilds.
stamp="suite=$SUITE variant=minbase include=$INCLUDE marker=$MARKER"
if [ -f "$ROOTFS/.fasop-stamp" ] && [ "$(cat "$ROOTFS/.fasop-stamp")" = "$stamp" ]; then
  say "rootfs: reusing $ROOTFS ($(du -sh "$ROOTFS" | cut -f1))"
else
  say "rootfs: debootstrap --variant=minbase --include=$INCLUDE $SUITE $ROOTFS ($MIRROR); minutes"
  mkdir -p "$CACHE"
  rm -rf "$ROOTFS.tmp" "$ROOTFS"
  t0=$(now)
  debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOTFS.tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $CACHE/debootstrap.log"
  echo "fasop-cpp check-docker-podman rootfs" >"$ROOTFS.tmp$MARKER"
  echo "$stamp" >"$ROOTFS.tmp/.fasop-stamp"
  mv "$ROOTFS.tmp" "$ROOTFS"
  say "timing: rootfs build (debootstrap): $(since "$t0") s, $(du -sh "$ROOTFS" | cut -f1)"
fi
[ ! -e "$MARKER" ] || die "$MARKER exists on this host too, so it cannot tell the container from the host"
# Every library rank_probe needs must be in the rootfs.
for lib in $(ldd "$PROBE" | awk '/=>/ { print $1 }'); do
  found=$(find "$ROOTFS/lib" "$ROOTFS/usr/lib" "$ROOTFS/lib64" -name "$lib" -print -quit 2>/dev/null || true)
  [ -n "$found" ] || die "the rootfs lacks $lib (needed by $PROBE); add its package to INCLUDE"
done

# 4. The image, imported again when the rootfs is newer than the import.
t0=$(now)
if podman image exists "$IMAGE" && [ -f "$CACHE/image-id" ] && [ "$CACHE/image-id" -nt "$ROOTFS/.fasop-stamp" ] &&
   [ "$(podman image inspect --format '{{.Id}}' "$IMAGE")" = "$(cat "$CACHE/image-id")" ]; then
  say "image: reusing $IMAGE ($(cut -c1-12 "$CACHE/image-id"))"
else
  podman image exists "$IMAGE" && podman rmi "$IMAGE" >/dev/null
  tar -C "$ROOTFS" -c . | podman import - "$IMAGE" >/dev/null
  podman image inspect --format '{{.Id}}' "$IMAGE" >"$CACHE/image-id"
  say "timing: podman import $IMAGE: $(since "$t0") s"
fi

# 5. A plan and its per-node commands.
TMP=$(mktemp -d /tmp/fasop-podman.XXXXXX)
cleanup() {
  local n
  for n in 0 1; do
    if podman container exists "fasop-node$n" 2>/dev/null; then podman rm -f "fasop-node$n" >/dev/null 2>&1 || true; fi
  done
  if [ "${KEEP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
for n in 0 1; do
  ! podman container exists "fasop-node$n" || die "a container fasop-node$n exists already (podman rm -f fasop-node$n)"
done
cd "$REPO"
"$FASOP" search --model tests/data/profiler/tiny.yaml --cluster tests/data/launch/two-types.yaml --fix tp=2,pp=2 \
  --save-plan "$TMP/plan.yaml" --out-dir "$TMP/logs" --quiet >"$TMP/search.out"
trainer="test -f $MARKER || { echo 'rank_probe: not in the $IMAGE rootfs' >&2; exit 9; }; exec $PROBE"
# 6. The flags podman needs on this host, given to the launcher with --container-args. Rootful podman asks for
# RLIMIT_NOFILE 1048576 and a large RLIMIT_NPROC in the container; runc (started by conmon)
# cannot raise a hard limit without CAP_SYS_RESOURCE, which this VM's root lacks, so the
# generated line fails with "error setting rlimit type 7 (nofile) / 6 (nproc): operation not
# permitted". Limits at or below those of the runtime's process work: nofile up to this
# shell's, nproc up to 32768 (conmon runs with RLIMIT_NPROC 32768 here, whatever the shell's).
lim() { local v; v=$(ulimit "$1" "$2"); [ "$v" = unlimited ] && v=$3; [ "$v" -gt "$3" ] && v=$3; echo "$v"; }
PODMAN_EXTRA=(--ulimit "nofile=$(lim -S -n 1048576):$(lim -H -n 1048576)"
              --ulimit "nproc=$(lim -S -u 32768):$(lim -H -u 32768)")
[ -z "$OCI_RUNTIME" ] || PODMAN_EXTRA+=(--runtime "$OCI_RUNTIME")
launch_args=(launch --plan "$TMP/plan.yaml" --backend docker --runtime podman --no-gpus --image "$IMAGE"
             --master-addr 127.0.0.1 --mount "$TMP:$TMP" --mount "$BUILD:$BUILD:ro" --trainer-cmd "$trainer"
             --container-args "${PODMAN_EXTRA[*]}")
"$FASOP" "${launch_args[@]}" >"$TMP/launch.sh"
say "generated ($FASOP ${launch_args[*]}):"
sed 's/^/    /' "$TMP/launch.sh"
mapfile -t lines < <(grep '^podman run ' "$TMP/launch.sh")
[ ${#lines[@]} = 2 ] || die "expected 2 'podman run' lines, got ${#lines[@]}"

# 7. Run both nodes at once.
pids=()
for n in 0 1; do
  line=${lines[$n]}
  case "$line" in "podman run ${PODMAN_EXTRA[*]} --rm --name fasop-node$n "*) ;; *) die "unexpected line for node $n: $line" ;; esac
  (
    t0=$(now)
    set +e
    eval "$line" >"$TMP/node$n.out" 2>"$TMP/node$n.err"
    rc=$?
    echo "$rc $(since "$t0")" >"$TMP/node$n.rc"
  ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

# 8. Check the probe's lines against the plan.
mapfile -t order < <(sed -n 's/^node_order: *\[\(.*\)\].*/\1/p' "$TMP/plan.yaml" | tr -d '" ' | tr ',' '\n')
[ ${#order[@]} = 2 ] || die "cannot read node_order from $TMP/plan.yaml"
fail=0
for n in 0 1; do
  read -r rc secs <"$TMP/node$n.rc"
  say "timing: node rank $n podman run: $secs s (exit $rc)"
  sed 's/^/    /' "$TMP/node$n.out"
  if [ "$rc" != 0 ]; then sed 's/^/    stderr: /' "$TMP/node$n.err"; fail=1; continue; fi
  [ "$(wc -l <"$TMP/node$n.out")" = 2 ] || { say "node rank $n: expected 2 lines"; fail=1; }
  for local in 0 1; do
    rank=$((2 * n + local))
    want="rank=$rank local_rank=$local node_rank=$n stage=$n dp=0 tp=$local world_size=4 nnodes=2"
    want+=" master=127.0.0.1:29500 node_type=${order[$n]} node="
    awk -v w="$want" 'index($0, w) == 1 { found = 1 } END { exit !found }' "$TMP/node$n.out" ||
      { say "node rank $n: no line '$want...'"; fail=1; }
  done
done
[ "$fail" = 0 ] || die "the containers' output does not match the plan"
say "PASS: both nodes' generated podman lines ran in $IMAGE and every rank matches the plan"
