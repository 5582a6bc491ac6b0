#!/usr/bin/env bash
# Two settings of the event pool against each other: by default its file in /dev/shm (FILE, the
# library's default) against private memory (BASE=none); FILE=trace or a folder on a disk measures
# a pool that the page cache writes back.  PAIRS pairs of bench/overhead runs (1 and 2 threads, the
# library's default settings otherwise), the two settings alternating within each pair and the
# order of the pair alternating from one pair to the next, so that both see the same moments of the
# machine.  Per run: the caller's added CPU (--paired: blocks through the library against direct
# blocks in the same process), the writer's CPU per call, ns, medians of 7 repeats, and the process's
# minor page faults during the repeats.  Last, per thread count, the medians over the pairs of each
# setting ("file" is FILE, "base" is BASE), the median of the paired differences (FILE - BASE)
# and its ratio.
#   [PAIRS=N] [FILE=DIR|trace] [BASE=DIR|none] bench/pool_pairs.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
pairs="${PAIRS:-12}"
file_dir="${FILE:-/dev/shm}"
base_dir="${BASE:-none}"
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch
flush_ms="" buf_mb=""

one() { # one run: THREADS POOL_DIR -> "added writer faults"
  local line
  line=$(bench_overhead "$1" yes NPKIT_POOL_DIR="$2" --paired 10000)
  rm -f "$out"/*
  echo "$(echo "$line" | field paired_added_cpu_ns) $(echo "$line" | field other_cpu_ns_per_call)" \
    "$(echo "$line" | field minor_faults)"
}

echo "settings: $pairs pairs, $calls calls a repeat, file: NPKIT_POOL_DIR=$file_dir, base:" \
  "NPKIT_POOL_DIR=$base_dir; vm.dirty_expire_centisecs $(cat /proc/sys/vm/dirty_expire_centisecs)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf '%-5s %-8s %-8s %10s %11s %8s\n' pair threads pool added_cpu writer_cpu faults
rows=""
for p in $(seq "$pairs"); do
  for threads in 1 2; do
    if [ $((p % 2)) -eq 1 ]; then order="$file_dir $base_dir"; else order="$base_dir $file_dir"; fi
    for dir in $order; do
      name=file
      [ "$dir" = "$base_dir" ] && name=base
      row="$p $threads $name $(one "$threads" "$dir")"
      printf '%-5s %-8s %-8s %10.2f %11.2f %8d\n' $row
      rows="$rows$row"$'\n'
    done
  done
done
printf '%s' "$rows" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
for t in ("1", "2"):
    for col, what, unit in ((3, "added", " ns"), (4, "writer", " ns"), (5, "faults", "")):
        f = {r[0]: float(r[col]) for r in rows if r[1] == t and r[2] == "file"}
        p = {r[0]: float(r[col]) for r in rows if r[1] == t and r[2] == "base"}
        mf, mp = statistics.median(f.values()), statistics.median(p.values())
        d = statistics.median(f[k] - p[k] for k in f)
        print("threads %s %-6s file %.2f%s, base %.2f%s (medians of %d); paired difference %+.2f%s (median)%s"
              % (t, what, mf, unit, mp, unit, len(f), d, unit,
                 ", ratio of medians %.3f" % (mf / mp) if mp > 0 else ""))
'
