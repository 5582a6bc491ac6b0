#!/usr/bin/env bash
# The merged trace of a synthetic job in both formats: `npkit merge -o m.json` and
# `npkit merge -o m.pftrace` of the same logs, alternating, R rounds each; the sizes, the medians of
# wall and CPU (user + sys) seconds and peak memory, and the ratios Perfetto / JSON.
#   bench/perfetto_bench.sh [BUILD_DIR [RANKS [EVENTS_PER_RANK]]]
# Defaults: ./build, 256 ranks (on RANKS/16 hosts, offsets to estimate), 20,000 events per rank:
# calls, compute and NCCL kernels (CUPTI layout), profiler-plugin tasks, as bench/report_bench.sh.
# Last, where the Perfetto trace's bytes go (tests/integration/perfetto_read.py --bytes).
# The logs and traces go to a temporary folder that is deleted at the end (256 ranks: 0.6 GB of
# logs, 1.6 GB of JSON).  Needs the build's tests (gen_report_logs) and GNU time.
set -euo pipefail
build=${1:-build}
ranks=${2:-256}
events=${3:-20000}
rounds=${R:-3}
gen="$build/tests/report/gen_report_logs"
npkit="$build/src/tool/npkit"
for f in "$gen" "$npkit" /usr/bin/time; do
  [ -x "$f" ] || { echo "perfetto_bench.sh: $f not found (build with tests first)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/npkit_perfetto_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
hosts=$(( ranks >= 16 ? ranks / 16 : 1 ))
"$gen" "$work/logs" --ranks "$ranks" --hosts "$hosts" --offset 1:1500000 --gpu --period 1000000 \
  --sizes 65536,1048576,16777216 --plugin RING:SIMPLE --exit-jitter 500 --events "$events" >/dev/null
input=$(du -sb "$work/logs" | cut -f1)
echo "input: $ranks logs on $hosts hosts, $events events each, $((input / 1000000)) MB"
for i in $(seq "$rounds"); do
  for fmt in json pftrace; do
    /usr/bin/time -f "$fmt %e %U %S %M" -o "$work/time" "$npkit" merge "$work/logs" -o "$work/m.$fmt" -q
    echo "$(cat "$work/time") $(stat -c %s "$work/m.$fmt")"
    [ "$i" = "$rounds" ] || rm -f "$work/m.$fmt"
  done
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    fmt, wall, user, system, kb, size = line.split()
    runs.setdefault(fmt, []).append((float(wall), float(user) + float(system), int(kb), int(size)))
med = {f: [statistics.median(r[i] for r in runs[f]) for i in range(4)] for f in runs}
for f, name in (("json", "JSON"), ("pftrace", "Perfetto")):
    w, c, kb, size = med[f]
    print("%-8s %8.1f MB   wall %6.2f s   cpu %6.2f s   peak %5d MB   (medians of %d)" %
          (name, size / 1e6, w, c, kb / 1024, len(runs[f])))
j, p = med["json"], med["pftrace"]
print("Perfetto / JSON: size %.3f (1/%.1f), wall %.2f, cpu %.2f" % (p[3] / j[3], j[3] / p[3], p[0] / j[0], p[1] / j[1]))
'
# Where the Perfetto bytes go, and the fifth of the JSON the issue aimed for beside them.
here=$(cd "$(dirname "$0")" && pwd)
echo "the Perfetto trace's bytes (JSON / 5 = $(( $(stat -c %s "$work/m.json") / 5000000 )) MB):"
python3 "$here/../tests/integration/perfetto_read.py" --bytes "$work/m.pftrace"
