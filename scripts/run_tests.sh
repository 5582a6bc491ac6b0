#!/usr/bin/env bash
# Builds npkit-preload and runs the whole test suite with ctest, three times, after installing what
# it needs on Debian/Ubuntu (scripts/packages.txt; as root with apt-get, else it says what to run):
#   1. a normal build (./build), with the libFuzzer targets (clang) run for a bounded time,
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build (./build-asan),
#   3. a ThreadSanitizer build (./build-tsan).
# Options:
#   --quick               only the normal build (no fuzzing)
#   --sanitize address|thread   only that sanitizer build
#   -- ARGS               passed to every ctest run (e.g. `-- -R integration`)
set -euo pipefail
cd "$(dirname "$0")/.."

variants=(normal address thread)
fuzz=ON
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) variants=(normal); fuzz=OFF; shift ;;
    --sanitize)
      case "${2:-}" in
        address|thread) variants=("$2"); shift 2 ;;
        *) echo "run_tests.sh: --sanitize takes 'address' or 'thread', not '${2:-}'" >&2; exit 2 ;;
      esac ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "run_tests.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

source scripts/lib/deps.sh
npkit_deps_ensure run_tests.sh test || exit 1

jobs=$(nproc)
failed=()
rerun=()
for v in "${variants[@]}"; do
  case "$v" in
    normal) build=build; opts=(-DNPKIT_SANITIZE= -DNPKIT_FUZZ="$fuzz") ;;
    address) build=build-asan; opts=(-DNPKIT_SANITIZE=address) ;;
    thread) build=build-tsan; opts=(-DNPKIT_SANITIZE=thread) ;;
  esac
  echo "=== $v build ($build)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${opts[@]}" >/dev/null
  cmake --build "$build" -j "$jobs"
  if ! ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"; then
    # Once more, alone, the tests that failed: several compare times of processes that share the
    # machine's cores (sanitizer builds make them 5-20 times slower), and a loaded CI host can push
    # one past its margin.  A test that fails twice fails the run; one that passed only the second
    # time is named on stderr, so that it is seen and its margin looked at, not forgotten.
    flaky=$(sed -n 's/^[0-9]*:\(.*\)$/\1/p' "$build/Testing/Temporary/LastTestsFailed.log" | tr '\n' ' ')
    echo "=== $v: running again, one at a time, the tests that failed: $flaky"
    if ctest --test-dir "$build" --output-on-failure --rerun-failed -j 1; then
      echo "run_tests.sh: warning: passed only when run again ($v build): $flaky" >&2
      rerun+=("$v: $flaky")
    else
      failed+=("$v")
    fi
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_tests.sh: tests failed in: ${failed[*]}" >&2
  exit 1
fi
for r in "${rerun[@]}"; do echo "run_tests.sh: warning: passed only when run again: $r" >&2; done
echo "run_tests.sh: all test runs passed (${variants[*]})"
