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

# bench_floor: what no change of the library removes, measured in the same run (clock readings, the
# event's store, an indirect call; bench/floor_bench.c), beside the script's own figures.
bench_floor() {
  local f="$build/bench/floor_bench"
  if [ -x "$f" ]; then
    echo "floor on this machine (bench/floor_bench, ns):"
    "$f" --n 10000000 | sed 's/^/  /'
  else
    echo "($f not built: no floor figures)" >&2
  fi
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

# bench_overhead THREADS yes|no [NAME=VALUE...] [--OPTION VALUE...]: one run of bench/overhead ($bin,
# $calls calls, 7 repeats, 1.5 s untimed pauses), with the preloaded library and the settings given
# or without it, and the program's options given (--paired B); the writer's period is $flush_ms and
# the pool $buf_mb MB where set, else the library's defaults.  Prints the program's line.
bench_overhead() {
  local threads="$1" preload="$2" a
  local -a settings=() options=()
  shift 2
  for a in "$@"; do
    if [ "${#options[@]}" -gt 0 ] || [ "${a#--}" != "$a" ]; then options+=("$a"); else settings+=("$a"); fi
  done
  local -a prog=("$bin" --calls "$calls" --repeats 7 --threads "$threads" --pause-ms 1500 ${options[@]+"${options[@]}"})
  if [ "$preload" = yes ]; then
    env NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 ${buf_mb:+NPKIT_EVENT_BUF_SIZE=$buf_mb} \
      ${flush_ms:+NPKIT_FLUSH_MS=$flush_ms} ${settings[@]+"${settings[@]}"} \
      LD_PRELOAD="$(realpath "$lib")" "${prog[@]}"
  else
    "${prog[@]}"
  fi
}

# field NAME: the NAME= value of a bench program's output; the whole name (paired_added_cpu_ns is
# not sorted_paired_added_cpu_ns).
field() { tr ' ' '\n' | sed -n "s/^$1=\([0-9.,-]*\)\$/\1/p" | head -1; }
