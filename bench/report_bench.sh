#!/usr/bin/env bash
# Times `npkit report` on a large synthetic job and measures its peak memory.
#   bench/report_bench.sh [BUILD_DIR [EVENTS_PER_RANK [RANKS]]]
# Defaults: ./build, 2000000 events per rank, 8 ranks on 2 hosts (a clock offset to estimate),
# each collective as an API call, a compute and an NCCL kernel (CUPTI layout) and a profiler-plugin
# task, so that every analysis runs.  The logs go to a temporary folder (about 256 MB per rank)
# that is deleted at the end.  Needs the build's tests (gen_report_logs) and GNU time.
set -euo pipefail
build=${1:-build}
events=${2:-2000000}
ranks=${3:-8}
gen="$build/tests/report/gen_report_logs"
npkit="$build/src/tool/npkit"
for f in "$gen" "$npkit" /usr/bin/time; do
  [ -x "$f" ] || { echo "report_bench.sh: $f not found (build with tests first)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/npkit_report_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$gen" "$work/logs" --ranks "$ranks" --hosts 2 --offset 1:1500000 --gpu --period 1000000 \
  --sizes 65536,1048576,16777216 --plugin RING:SIMPLE --exit-jitter 500 --events "$events" >/dev/null
input=$(du -sb "$work/logs" | cut -f1)
echo "input: $ranks logs, $events events each, $((input / 1000000)) MB"

# the logs were just written and are in the page cache; the first run reads them once more
for run in 1 2; do
  /usr/bin/time -f "%e %M" -o "$work/time" "$npkit" report "$work/logs" >"$work/report.txt"
  read -r secs kb <"$work/time"
  echo "npkit report, run $run: ${secs} s, peak RSS $((kb / 1024)) MB ($(awk -v k="$kb" -v b="$input" \
    'BEGIN { printf "%.1f", 100 * k * 1024 / b }') % of the input)"
done
/usr/bin/time -f "%e %M" -o "$work/time" "$npkit" report --json "$work/logs" >/dev/null
read -r secs kb <"$work/time"
echo "npkit report --json: ${secs} s, peak RSS $((kb / 1024)) MB"
grep -m1 "^npkit report:" "$work/report.txt"
