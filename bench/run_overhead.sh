#!/usr/bin/env bash
# The whole cost of a recorded NCCL call: the calling thread's added CPU plus the writer thread's
# CPU per call, against the fake NCCL in no-op mode (FAKE_NCCL_NOOP=1: the call itself is a few ns,
# so the difference is the library's cost).  Between repeats the program pauses (untimed) so the
# writer thread streams the last repeat to disk.
#
# The added time is measured inside one process (bench/overhead --paired 10000): each repeat
# alternates blocks of 10,000 calls through the library's wrapper with blocks of 10,000 calls
# straight into the fake libnccl's own ncclAllReduce, so both sides run at the same moment's speed of
# the machine (on a VM the speed of a whole run changes by a third from one run to the next; two
# separate processes, one with and one without the library, compared two such moments).  A run of
# the program without the library is kept as a check that the direct calls cost what a call costs
# with no library loaded (base_cpu against direct_cpu).
#
# One row per thread count and run (RUNS=N runs, default 3), ns per call, medians of 7 repeats; with
# 2 threads the slower thread:
#   base_cpu     the calling thread's CPU per call, program without the library (its own process,
#                calls back to back whatever SPIN is);
#   direct_cpu   the same, the direct blocks inside the profiled process;
#   wrapped_cpu  the same, the blocks through the library;
#   added_cpu    wrapped - direct, each over the whole repeat (the rare slow block counts as it does
#                for a job): the caller's added CPU;
#   writer_cpu   the CPU of the library's other threads (the writer) per call recorded, measured
#                after a final pause (all repeats, the first included);
#   total_cpu    added_cpu + writer_cpu: what one recorded call costs in all;
#   wrapped_ns   wall clock per call of the blocks through the library, for reference;
#   dropped      events the full pool dropped (a dropped event costs less than a kept one).
# CPU times are CLOCK_THREAD_CPUTIME_ID: what other load takes from a thread stays out.  Last, the
# worst total of each thread count over the runs, the goal of issue 18 (at most 100 ns), and the
# floor figures of bench/floor_bench (clock readings, the event's store), measured in the same run.
# The library runs with its default settings; FLUSH_MS=N and BUF_MB=N set NPKIT_FLUSH_MS and
# NPKIT_EVENT_BUF_SIZE; METRICS=LIST sets NPKIT_METRICS (live metrics: their files go to the trace
# folder, their thread's CPU counts in writer_cpu).  SPIN=S paces the calls (bench/overhead --spin S: S iterations of an empty
# loop after each call, in both kinds of block; 3000 is about 1 us here, a million calls a second
# per thread, still more than a job makes): the writer then streams at that rate instead of the
# 2.5 GB/s of calls made back to back.  Per-repeat figures and the load average go to stderr.
#   [RUNS=N] [SPIN=S] [FLUSH_MS=N] [BUF_MB=N] [METRICS=LIST] bench/run_overhead.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
runs="${RUNS:-3}"
spin="${SPIN:-0}"
flush_ms="${FLUSH_MS:-}"
buf_mb="${BUF_MB:-}"
metrics="${METRICS:-}"
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch
block=10000
[ $((calls % block)) -eq 0 ] || { echo "$(basename "$0"): CALLS must be a multiple of $block" >&2; exit 1; }

echo "settings: NPKIT_FLUSH_MS=${flush_ms:-default} NPKIT_EVENT_BUF_SIZE=${buf_mb:-default} NPKIT_METRICS=${metrics:-off} spin=$spin; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf '%-4s %-8s %9s %11s %12s %10s %11s %10s %11s %8s\n' run threads base_cpu direct_cpu wrapped_cpu added_cpu \
  writer_cpu total_cpu wrapped_ns dropped
rows=""
for run in $(seq "$runs"); do
  for threads in 1 2; do
    bline=$(bench_overhead "$threads" no)
    line=$(bench_overhead "$threads" yes ${metrics:+NPKIT_METRICS=$metrics} --paired "$block" --spin "$spin")
    echo "run=$run threads=$threads without the library, repeats sorted (cpu ns/call): $(echo "$bline" | field sorted_cpu_ns_per_call)" >&2
    echo "run=$run threads=$threads with the library, wrapped blocks by repeat (cpu ns/call): $(echo "$line" | field sorted_cpu_ns_per_call)" >&2
    dropped=$("$build/src/tool/npkit" info "$out"/*.npkit 2>/dev/null | sed -n 's/.*dropped[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -1)
    rm -f "$out"/*
    row=$(awk -v r="$run" -v t="$threads" -v bc="$(echo "$bline" | field median_cpu_ns_per_call)" \
      -v dc="$(echo "$line" | field paired_direct_cpu_ns)" -v wc="$(echo "$line" | field paired_wrapped_cpu_ns)" \
      -v a="$(echo "$line" | field paired_added_cpu_ns)" -v c="$(echo "$line" | field other_cpu_ns_per_call)" \
      -v w="$(echo "$line" | median)" -v d="${dropped:-?}" \
      'BEGIN { printf "%-4s %-8s %9.2f %11.2f %12.2f %10.2f %11.2f %10.2f %11.2f %8s\n", r, t, bc, dc, wc, a, c, a + c, w, d }')
    echo "$row"
    rows="$rows$row"$'\n'
  done
done
# the summary from the rows: column 2 is the thread count, column 8 the total
printf '%s' "$rows" | awk '{ t[$2] = t[$2] " " $8; if ($8 > w) w = $8 }
  END { printf "total_cpu by run: 1 thread%s ns; 2 threads%s ns; worst %.2f ns: goal (<= 100 ns) %s\n", t[1], t[2], w, w <= 100 ? "met" : "missed" }'
bench_floor
