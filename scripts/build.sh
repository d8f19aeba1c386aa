#!/usr/bin/env bash
# Installs what a part of fasop-cpp needs and builds it (Release) into build/, showing the
# build's progress on stderr (the full log, warnings included, is build/build.log). Usage:
#   build.sh planner    fasop-cpp only (scripts/run.sh)
#   build.sh profiler   fasop-cpp and fasop-profile (LibTorch)
#   build.sh tests      (default) everything, the test suite included (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-tests}"
bash scripts/install-deps.sh "$part"
case "$part" in
  planner) targets=(--target fasop-cpp); tests=OFF ;;
  profiler) targets=(--target fasop-cpp --target fasop-profile); tests=OFF ;;
  *) targets=(); tests=ON ;;
esac
mkdir -p build
# A build made for the tests keeps them; the planner's first build leaves Catch2 out.
if [ "$tests" = OFF ] && [ -f build/CMakeCache.txt ] && grep -q '^FASOP_BUILD_TESTS:BOOL=ON' build/CMakeCache.txt; then
  tests=ON
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFASOP_BUILD_TESTS="$tests" > build/build.log 2>&1 ||
  { cat build/build.log; exit 1; }
if [ "$part" = profiler ] && ! grep -q '^Torch_DIR:PATH=/' build/CMakeCache.txt; then
  echo "build.sh: CMake did not find LibTorch (libtorch-dev); see build/build.log" >&2; exit 1
fi
echo "building fasop-cpp ($part) in build/ with $(nproc) jobs; log: build/build.log" >&2
# One line per compiled file ("[ 42%] Building CXX object ...") shows the progress.
if ! cmake --build build -j"$(nproc)" "${targets[@]}" 2>&1 | tee -a build/build.log |
     grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Linking)' | sed -u 's/ object CMakeFiles\/[^ ]*\.dir\// /' >&2; then
  tail -50 build/build.log; exit 1
fi
