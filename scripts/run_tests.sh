#!/usr/bin/env bash
# Builds npkit-preload and runs the whole test suite with ctest.
#   scripts/run_tests.sh                     normal build in ./build
#   scripts/run_tests.sh --sanitize address  ASan+UBSan build in ./build-asan
#   scripts/run_tests.sh --sanitize thread   TSan build in ./build-tsan
# Extra arguments after `--` go to ctest (e.g. `-- -R integration`).
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize="${2:?--sanitize needs address or thread}"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "run_tests.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

case "$sanitize" in
  "") build=build ;;
  address) build=build-asan ;;
  thread) build=build-tsan ;;
  *) echo "run_tests.sh: --sanitize takes 'address' or 'thread', not '$sanitize'" >&2; exit 2 ;;
esac

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPKIT_SANITIZE="$sanitize" >/dev/null
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure "$@"
