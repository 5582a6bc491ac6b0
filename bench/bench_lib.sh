# Shell functions of the bench scripts that run a bench program under the preloaded library;
# sourced after the script has set $build (the build folder).

lib="$build/src/runtime/libnpkit_preload.so"

# bench_require FILE...: stops the script with a message when a built file is missing.
bench_require() {
  local f
  for f in "$@"; do
    [ -e "$f" ] || { echo "$(basename "$0"): $f is missing; build first (cmake --build $build)" >&2; exit 1; }
  done
}

# bench_scratch: $out, a folder for the traces, removed when the script exits.
bench_scratch() {
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
}

# bench_noop_nccl: the fake NCCL in no-op mode (FAKE_NCCL_NOOP=1: a call costs a few ns, so a
# difference in the time of a call is the library's cost) first on LD_LIBRARY_PATH.
bench_noop_nccl() {
  local fakes="$build/tests/fakes"
  bench_require "$fakes/libnccl.so.2"
  export FAKE_NCCL_NOOP=1 LD_LIBRARY_PATH="$fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# median: the median_ns_per_call= of a bench program's output.
median() { sed -n 's/.*median_ns_per_call=\([0-9.]*\).*/\1/p'; }
