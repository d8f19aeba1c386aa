#!/usr/bin/env bash
# The framework checks of scripts/ must reject what they were found to let through (issue 49),
# and still pass what fasop-cpp writes:
#   check-deepspeed-emit.py  on a DeepSpeed before and since 0.17.1 (which moved fp16_enabled to
#                            float16_config.enabled); wrong: ds_config.json with fp16 and bf16 swapped;
#   check-megatron-emit.py   on FASOP's fork; wrong: a tp 2 plan's arguments with 25 heads (tp does
#                            not divide them), which only the fork's real layers refuse;
#   check-atorch-emit.py     wrong: pipe_config keys misspelt (nstages, insert_before_modules),
#                            which ATorch ignores, taking its defaults;
#   check-torchtitan-emit.py wrong: a layer name moved from one stage's list to the next (the
#                            stages no longer the plan's), tensor_parallel_degree misspelt;
#   check-megatron-bridge-emit.py  wrong: the layout's first '|' moved to just after E (same
#                            layers, another split), model.tensor_model_parallel_size misspelt.
# A wrong input is the binary's own output edited as it is written (a wrapper runs fasop-cpp, then
# sed on the file), so the scripts run as their docstrings say, given that wrapper as the binary.
#
# Usage: check_scripts_test.sh <fasop-cpp binary>
# Framework sources, as the scripts take them: DEEPSPEED_SRC (one DeepSpeed tree), MEGATRON_FASOP
# (FASOP's Megatron-LM-2/), ATORCH_SRC (ATorch's source), TORCHTITAN_SRC (a torchtitan checkout),
# MEGATRON_BRIDGE_SRC and MEGATRON_LM_SRC (Megatron-Bridge and the Megatron-LM it builds on).
# Where one is unset, it is taken from a git mirror under $FASOP_MIRRORS (default /work/.mirror;
# owner+repo/repo) if there is one: DeepSpeed at $DEEPSPEED_REVS (default v0.16.5 and v0.18.6, the
# newest that imports with torch 1.13), FASOP at HEAD, ATorch at dlrover's bfd04ef1df01, torchtitan
# and Megatron-Bridge at HEAD, Megatron-LM at the commit Bridge pins (3rdparty/Megatron-LM) where
# the mirror has it, else at HEAD. A framework with no source, or one this
# Python can't import (DeepSpeed needs pydantic 2 etc. on PYTHONPATH), is reported SKIP, not
# passed. Exit 1 on a failure, 77 when everything was skipped. No network; all in a temporary
# directory.
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
mirrors=${FASOP_MIRRORS:-/work/.mirror}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 skipped=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }

if ! "$python" -c "import torch, yaml" 2>/dev/null; then
  echo "SKIP: $python lacks torch or PyYAML (Debian's python3-torch, python3-yaml)"
  exit 77
fi

# fasop-cpp, with the output of a command whose arguments hold $TAMPER_MATCH edited by sed
# $TAMPER_SED: the file of -o, else standard output.
cat >"$work/fasop-cpp" <<'EOF'
#!/usr/bin/env bash
case " $* " in
*" $TAMPER_MATCH "*)
  args=("$@") out=''
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do [[ ${args[i]} == -o ]] && out=${args[i + 1]}; done
  if [[ -n $out ]]; then
    "$TAMPER_REAL" "$@" && sed -i -e "$TAMPER_SED" "$out"
  else
    set -o pipefail
    "$TAMPER_REAL" "$@" | sed -e "$TAMPER_SED"
  fi ;;
*) exec "$TAMPER_REAL" "$@" ;;
esac
EOF
chmod +x "$work/fasop-cpp"
export TAMPER_REAL=$bin

# The git directory of mirror $1 (owner+repo) that has revision $2, if any.
mirror_with() {
  local git=$mirrors/$1/repo
  [[ -d $git/.git ]] && git=$git/.git
  git --git-dir="$git" rev-parse -q --verify "$2^{commit}" >/dev/null 2>&1 && echo "$git"
}

# Extracts paths $4... of revision $2 of mirror $1 into $3 (missing large files are no matter).
extract() {
  local git
  git=$(mirror_with "$1" "$2") || return 1
  mkdir -p "$3"
  git --git-dir="$git" archive "$2" "${@:4}" 2>/dev/null | tar -x -C "$3" 2>/dev/null
  return 0
}

# run NAME WANT_RC GREP [TAMPER_MATCH TAMPER_SED] -- COMMAND...: COMMAND (its binary "$work/fasop-cpp"
# when tampering) must exit WANT_RC with a line matching GREP; a script's "cannot run" (exit 2 with
# its own message, not argparse's) is SKIP.
run() {
  local name=$1 want=$2 pattern=$3 match='' sed='' rc
  shift 3
  if [[ $1 != -- ]]; then match=$1 sed=$2; shift 2; fi
  shift
  local log=$work/log.$((passed + failed + skipped))
  local start=$SECONDS
  TAMPER_MATCH=${match:-no such command} TAMPER_SED=${sed:-} "$@" >"$log" 2>&1
  rc=$?
  if [[ $rc == 2 ]] && grep -q '^check-[a-z-]*-emit: ' "$log"; then
    skip "$name: cannot run here: $(grep -m1 '^check-[a-z-]*-emit: ' "$log" | cut -c1-200)"
  elif [[ $rc == "$want" ]] && grep -q -- "$pattern" "$log"; then
    pass "$name ($((SECONDS - start)) s): $(grep -m1 -- "$pattern" "$log" | cut -c1-150)"
  else
    fail "$name: exit $rc (want $want, and a line matching '$pattern'):"
    grep -E '^(ok|FAIL|PASS|skip) |Error|error' "$log" | tail -8 | cut -c1-200 | sed 's/^/    /'
  fi
}

# --- DeepSpeed ---------------------------------------------------------------------------------
deepspeed_trees=()
if [[ -n ${DEEPSPEED_SRC:-} ]]; then
  deepspeed_trees=("$DEEPSPEED_SRC")
else
  for rev in ${DEEPSPEED_REVS:-v0.16.5 v0.18.6}; do
    for mirror in deepspeedai+DeepSpeed microsoft+DeepSpeed; do
      if extract "$mirror" "$rev" "$work/deepspeed-$rev" deepspeed accelerator op_builder version.txt; then
        deepspeed_trees+=("$work/deepspeed-$rev")
        break
      fi
    done
    [[ -f $work/deepspeed-$rev/version.txt ]] || skip "DeepSpeed $rev: no DEEPSPEED_SRC, and no mirror in $mirrors has $rev"
  done
fi
swap_precision='s/"fp16"/"was-fp16"/; s/"bf16"/"fp16"/; s/"was-fp16"/"bf16"/'
for tree in "${deepspeed_trees[@]}"; do
  version=$(cat "$tree/version.txt" 2>/dev/null || echo "$tree")
  run "DeepSpeed $version: the emitted plans pass" 0 "^3 of 3 plans" -- \
    "$python" "$root/scripts/check-deepspeed-emit.py" "$tree" --bin "$bin"
  run "DeepSpeed $version: fp16 and bf16 swapped in ds_config.json fail" 1 "^FAIL .*fp16 and bf16 enabled" \
    "--format deepspeed" "$swap_precision" -- \
    "$python" "$root/scripts/check-deepspeed-emit.py" "$tree" --bin "$work/fasop-cpp"
done

# --- FASOP's Megatron fork ---------------------------------------------------------------------
fork=${MEGATRON_FASOP:-}
if [[ -z $fork ]] && extract AvatarHwang+FASOP HEAD "$work/fasop" Megatron-LM-2; then
  fork=$work/fasop/Megatron-LM-2
fi
if [[ -z $fork || ! -d $fork/megatron ]]; then
  skip "FASOP's Megatron fork: no MEGATRON_FASOP, and no AvatarHwang+FASOP mirror in $mirrors"
else
  plan=gpt2xl-tp2-pp4-dp4  # gpt2xl: hidden 1600, 16 heads; 25 heads of 64 still divide the hidden
  run "Megatron fork: $plan passes" 0 "^ok    $plan \[fasop\]" -- \
    "$python" "$root/scripts/check-megatron-emit.py" --fasop-cpp "$bin" --fork "$fork" --only "$plan" \
    --work "$work/megatron-good"
  run "Megatron fork: $plan with 25 heads at tp 2 fails" 1 "^FAIL  $plan \[fasop\].*25 is not divisible by 2" \
    "--format megatron --megatron-flavor fasop" 's/^--num-attention-heads [0-9]* /--num-attention-heads 25 /' -- \
    "$python" "$root/scripts/check-megatron-emit.py" --fasop-cpp "$work/fasop-cpp" --fork "$fork" --only "$plan" \
    --work "$work/megatron-bad"
fi

# --- ATorch ------------------------------------------------------------------------------------
atorch=${ATORCH_SRC:-}
if [[ -z $atorch ]] && extract intelligent-machine-learning+dlrover bfd04ef1df01 "$work/dlrover" atorch; then
  atorch=$work/dlrover/atorch
fi
if [[ -z $atorch || ! -d $atorch ]]; then
  skip "ATorch: no ATORCH_SRC, and no intelligent-machine-learning+dlrover mirror with bfd04ef1df01 in $mirrors"
else
  plan=bert-tp2-pp2-recompute-zero1  # a pipe_config and a tensor_config
  run "ATorch: $plan passes" 0 "^PASS $plan" -- \
    "$python" "$root/scripts/check-atorch-emit.py" --atorch-src "$atorch" --fasop "$bin" --only "$plan" \
    --keep "$work/atorch-good"
  for key in nstages insert_before_modules; do
    run "ATorch: $plan with pipe_config's $key misspelt fails" 1 "^FAIL $plan.*reads no pipe_config.${key}x" \
      "--format atorch" "s/\"$key\"/\"${key}x\"/" -- \
      "$python" "$root/scripts/check-atorch-emit.py" --atorch-src "$atorch" --fasop "$work/fasop-cpp" \
      --only "$plan" --keep "$work/atorch-bad-$key"
  done
fi

# --- torchtitan --------------------------------------------------------------------------------
torchtitan=${TORCHTITAN_SRC:-}
if [[ -z $torchtitan ]] && extract pytorch+torchtitan HEAD "$work/torchtitan" torchtitan; then
  torchtitan=$work/torchtitan
fi
if [[ -z $torchtitan || ! -f $torchtitan/torchtitan/__init__.py ]]; then
  skip "torchtitan: no TORCHTITAN_SRC, and no pytorch+torchtitan mirror in $mirrors"
else
  plan=llama3-8b-tp2-pp4-ddp  # four stages, uneven
  run "torchtitan: the emitted plans pass" 0 "^3 of 3 plans" -- \
    "$python" "$root/scripts/check-torchtitan-emit.py" "$torchtitan" --bin "$bin"
  # The first stage's last layer name moved to the front of the second stage's list (the whole
  # file in sed's pattern space: the emitter wraps long lists).
  run "torchtitan: $plan with a layer moved to the next stage fails" 1 "^FAIL  $plan: .*units per pipeline rank" \
    "--format torchtitan" ':a;N;$!ba;s/, \("layers\.[0-9]*"\)\],\(\n *\)\[/],\2[\1, /' -- \
    "$python" "$root/scripts/check-torchtitan-emit.py" "$torchtitan" --bin "$work/fasop-cpp" --only "$plan"
  run "torchtitan: $plan with tensor_parallel_degree misspelt fails" 1 \
    "^FAIL  $plan: .*has no field 'tensor_parallel_size'" \
    "--format torchtitan" 's/\.tensor_parallel_degree =/.tensor_parallel_size =/' -- \
    "$python" "$root/scripts/check-torchtitan-emit.py" "$torchtitan" --bin "$work/fasop-cpp" --only "$plan"
fi

# --- Megatron-Bridge ---------------------------------------------------------------------------
bridge=${MEGATRON_BRIDGE_SRC:-} megatron_lm=${MEGATRON_LM_SRC:-}
if [[ -z $bridge ]] && extract NVIDIA-NeMo+Megatron-Bridge HEAD "$work/bridge" src/megatron/bridge scripts/training; then
  bridge=$work/bridge
fi
if [[ -z $megatron_lm && -n $bridge ]]; then
  pin=$(git --git-dir="$(mirror_with NVIDIA-NeMo+Megatron-Bridge HEAD)" ls-tree HEAD 3rdparty/Megatron-LM 2>/dev/null |
    awk '{print $3}')
  for rev in $pin HEAD; do
    if extract NVIDIA+Megatron-LM "$rev" "$work/megatron-lm-$rev" megatron; then
      megatron_lm=$work/megatron-lm-$rev
      break
    fi
  done
fi
if [[ -z $bridge || ! -d $bridge/src/megatron/bridge || -z $megatron_lm || ! -d $megatron_lm/megatron/core ]]; then
  skip "Megatron-Bridge: no MEGATRON_BRIDGE_SRC and MEGATRON_LM_SRC, and no NVIDIA-NeMo+Megatron-Bridge and NVIDIA+Megatron-LM mirrors in $mirrors"
else
  plan=qwen3-30b-a3b-tp2-pp2-ep8-fsdp  # MoE, two stages, uneven
  run "Megatron-Bridge: the emitted plans pass" 0 "^2 of 2 plans" -- \
    "$python" "$root/scripts/check-megatron-bridge-emit.py" "$bridge" --megatron "$megatron_lm" --bin "$bin"
  # The layout's first '|' moved to just after E: the same layers, split [1, rest].
  run "Megatron-Bridge: $plan with its layout's first stage cut to E fails" 1 \
    "^FAIL  $plan: .*units per pipeline rank" \
    "--format megatron-bridge" 's/layout="E\([^|]*\)|/layout="E|\1/' -- \
    "$python" "$root/scripts/check-megatron-bridge-emit.py" "$bridge" --megatron "$megatron_lm" \
    --bin "$work/fasop-cpp" --only "$plan"
  run "Megatron-Bridge: $plan with model.tensor_model_parallel_size misspelt fails" 1 \
    "^FAIL  $plan: .*model.tensor_parallel_size: .* has no field 'tensor_parallel_size'" \
    "--format megatron-bridge" 's/model\.tensor_model_parallel_size=/model.tensor_parallel_size=/' -- \
    "$python" "$root/scripts/check-megatron-bridge-emit.py" "$bridge" --megatron "$megatron_lm" \
    --bin "$work/fasop-cpp" --only "$plan"
fi

echo "$passed passed, $failed failed, $skipped skipped"
if ((failed)); then exit 1; fi
if ((passed == 0)); then exit 77; fi
exit 0
