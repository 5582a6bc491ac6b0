#!/usr/bin/env bash
# The whole cost of a recorded NCCL call: the same program, the same calls, in one run, with and
# without the preloaded library, against the fake NCCL in no-op mode (FAKE_NCCL_NOOP=1: the call
# itself is a few ns, so the difference is the library's cost).  Between repeats the program pauses
# (untimed) so the writer thread streams the last repeat to disk.
# Columns, ns per call, medians of 7 repeats (with 2 threads: the slower thread of each repeat):
#   base_ns, npkit_ns, added_ns    wall clock without and with the library, and the difference;
#   base_cpu, npkit_cpu, added_cpu the calling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID),
#                                  which other load on the machine does not inflate;
#   writer_cpu                     the CPU time of the library's writer thread per call recorded,
#                                  measured after a final pause (all repeats, the first included);
#   total_cpu                      added_cpu + writer_cpu: what one recorded call costs in all.
# The library runs with its default settings; FLUSH_MS=N and BUF_MB=N set NPKIT_FLUSH_MS and
# NPKIT_EVENT_BUF_SIZE.  Per-repeat figures and the load average go to stderr.  Last, the floor
# figures of bench/floor_bench (clock readings, the event's store), measured in the same run.
#   [FLUSH_MS=N] [BUF_MB=N] bench/run_overhead.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
flush_ms="${FLUSH_MS:-}"
buf_mb="${BUF_MB:-}"
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch

echo "settings: NPKIT_FLUSH_MS=${flush_ms:-default} NPKIT_EVENT_BUF_SIZE=${buf_mb:-default}; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf '%-8s %13s %13s %9s %13s %13s %10s %11s %10s %10s\n' threads base_ns/call npkit_ns/call added_ns \
  base_cpu_ns npkit_cpu_ns added_cpu writer_cpu total_cpu dropped
for threads in 1 2; do
  bline=$(bench_overhead "$threads" no)
  line=$(bench_overhead "$threads" yes)
  echo "threads=$threads without the library, repeats sorted (ns/call wall; cpu): $(echo "$bline" | field sorted_ns_per_call); $(echo "$bline" | field sorted_cpu_ns_per_call)" >&2
  echo "threads=$threads with the library,    repeats sorted (ns/call wall; cpu): $(echo "$line" | field sorted_ns_per_call); $(echo "$line" | field sorted_cpu_ns_per_call)" >&2
  dropped=$("$build/src/tool/npkit" info "$out"/*.npkit 2>/dev/null | sed -n 's/.*dropped[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -1)
  rm -f "$out"/*
  awk -v t="$threads" -v b="$(echo "$bline" | median)" -v w="$(echo "$line" | median)" \
    -v bc="$(echo "$bline" | field median_cpu_ns_per_call)" -v wc="$(echo "$line" | field median_cpu_ns_per_call)" \
    -v c="$(echo "$line" | field other_cpu_ns_per_call)" -v d="${dropped:-?}" \
    'BEGIN { printf "%-8s %13.2f %13.2f %9.2f %13.2f %13.2f %10.2f %11.2f %10.2f %10s\n", t, b, w, w - b, bc, wc, wc - bc, c, wc - bc + c, d }'
done
bench_floor
