# Shared by the shell tests (source it after setting `bin`, the fasop-cpp binary): counters,
# and expect_error for commands that must fail with a clear message.
passed=0 failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_error WHAT NEEDLE ARGS...: `$bin ARGS` exits 2 (bad input or usage) with a one-line
# message holding NEEDLE (LibTorch's errors may run longer: set EXPECT_ONE_LINE=0 to allow that).
expect_error() {
  local what=$1 needle=$2; shift 2
  local out rc
  out=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 2 ]; then fail "$what: exit $rc, not 2: $out"; return; fi
  if [ "${EXPECT_ONE_LINE:-1}" = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
    fail "$what: message is not one line: $out"; return
  fi
  case "$out" in *"$needle"*) ok ;; *) fail "$what: message '$out' lacks '$needle'" ;; esac
}

# finish: the summary line, and the exit status.
# A TCP port the OS says is free now (no test takes a fixed port: two suites may share a machine).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
