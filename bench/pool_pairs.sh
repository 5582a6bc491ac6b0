#!/usr/bin/env bash
# The event pool in a file of /dev/shm (the default) against private memory (NPKIT_POOL_DIR=none):
# PAIRS pairs of bench/overhead runs (1 and 2 threads, the library's default settings otherwise),
# the two settings alternating within each pair and the order of the pair alternating from one pair
# to the next, so that both see the same moments of the machine.  Per run: the caller's added CPU
# (--paired: blocks through the library against direct blocks in the same process) and the writer's
# CPU per call, ns, medians of 7 repeats.  Last, per thread count, the medians over the pairs of each
# setting, the median of the paired differences (file - private) and its ratio.
#   [PAIRS=N] bench/pool_pairs.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
pairs="${PAIRS:-12}"
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch
flush_ms="" buf_mb=""

one() { # one run: THREADS POOL_DIR -> "added writer"
  local line
  line=$(bench_overhead "$1" yes NPKIT_POOL_DIR="$2" --paired 10000)
  rm -f "$out"/*
  echo "$(echo "$line" | field paired_added_cpu_ns) $(echo "$line" | field other_cpu_ns_per_call)"
}

echo "settings: $pairs pairs, $calls calls a repeat; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf '%-5s %-8s %-8s %10s %11s\n' pair threads pool added_cpu writer_cpu
rows=""
for p in $(seq "$pairs"); do
  for threads in 1 2; do
    if [ $((p % 2)) -eq 1 ]; then order="/dev/shm none"; else order="none /dev/shm"; fi
    for dir in $order; do
      name=file
      [ "$dir" = none ] && name=private
      row="$p $threads $name $(one "$threads" "$dir")"
      printf '%-5s %-8s %-8s %10.2f %11.2f\n' $row
      rows="$rows$row"$'\n'
    done
  done
done
printf '%s' "$rows" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
for t in ("1", "2"):
    for col, what in ((3, "added"), (4, "writer")):
        f = {r[0]: float(r[col]) for r in rows if r[1] == t and r[2] == "file"}
        p = {r[0]: float(r[col]) for r in rows if r[1] == t and r[2] == "private"}
        mf, mp = statistics.median(f.values()), statistics.median(p.values())
        d = statistics.median(f[k] - p[k] for k in f)
        print("threads %s %-6s file %.2f ns, private %.2f ns (medians of %d); paired difference %+.2f ns "
              "(median), ratio of medians %.3f" % (t, what, mf, mp, len(f), d, mf / mp))
'
