#!/usr/bin/env bash
# Added cost per wrapped NCCL call: the same program, the same calls, in one run, with and without
# the preloaded library, against the fake NCCL in no-op mode (FAKE_NCCL_NOOP=1: the call itself is a
# few ns, so the difference is the library's cost).  Reports per-call medians and their difference.
# Between repeats the program pauses (untimed) so the writer thread streams the last repeat to disk:
# the measured loop sees warm, recycled chunks, as a long job does.
# The writer thread costs CPU too (~80 ns per event on the development VM, in the kernel's write
# path): it is reported in its own column, measured after a final pause.  Its period is
# FLUSH_MS (default 1000) rather than the library's 200 ms so that, on a machine with as few
# cores as threads, its passes fall in the pauses and not in the timed loops; FLUSH_MS=200 shows
# the default.  Per-repeat figures go to stderr.
#   [FLUSH_MS=N] bench/run_overhead.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
flush_ms="${FLUSH_MS:-1000}"
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch

printf '%-8s %14s %14s %14s %10s %16s\n' threads base_ns/call npkit_ns/call added_ns dropped writer_cpu_ns/call
for threads in 1 2; do
  base=$(bench_overhead "$threads" no | median)
  line=$(bench_overhead "$threads" yes)
  with=$(echo "$line" | median)
  writer=$(echo "$line" | field other_cpu_ns_per_call)
  echo "threads=$threads with the library, repeats sorted (ns/call): $(echo "$line" | field sorted_ns_per_call)" >&2
  dropped=$("$build/src/tool/npkit" info "$out"/*.npkit 2>/dev/null | sed -n 's/.*dropped[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -1)
  rm -f "$out"/*
  awk -v t="$threads" -v b="$base" -v w="$with" -v d="${dropped:-?}" -v c="$writer" \
    'BEGIN { printf "%-8s %14.2f %14.2f %14.2f %10s %16.2f\n", t, b, w, w - b, d, c }'
done
