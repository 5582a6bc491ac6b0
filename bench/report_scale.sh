#!/usr/bin/env bash
# How `npkit report` and `npkit merge` grow with the job: for each RANKS:EVENTS of SIZES,
# gen_report_logs writes a job of RANKS ranks on RANKS/8 hosts (clock offsets spread over 2 ms),
# EVENTS events per rank (calls, compute and NCCL kernels in CUPTI's layout, profiler-plugin
# tasks, packed as the library writes them); then `npkit report` at -j 1 and -j 2 (text, to
# /dev/null) and, up to MERGE_MAX_RANKS ranks, `npkit merge` in both formats (to a pipe that counts
# its bytes).  One line per size: generation time and log size, report time and peak memory at
# each -j, merge time, peak memory and output size.
#   [SIZES="64:20000 256:20000 1024:20000 4096:20000 4096:2000 16384:2000"] [MERGE_MAX_RANKS=1024]
#   bench/report_scale.sh [BUILD_DIR]
# The logs go to a temporary folder, deleted after each size (4,096 x 20,000: 1.7 GB).  Needs the
# build's tests (gen_report_logs) and GNU time.
set -euo pipefail
build=${1:-build}
sizes=${SIZES:-"64:20000 256:20000 1024:20000 4096:20000 4096:2000 16384:2000"}
merge_max=${MERGE_MAX_RANKS:-1024}
gen="$build/tests/report/gen_report_logs"
npkit="$build/src/tool/npkit"
for f in "$gen" "$npkit" /usr/bin/time; do
  [ -x "$f" ] || { echo "report_scale.sh: $f not found (build with tests first)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/npkit_report_scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
timed() { # LABEL CMD...: "seconds peak_MB" of CMD (its stdout to /dev/null)
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
  awk '{ printf "%s %d", $1, $2 / 1024 }' "$work/time"
}
printf "%-13s %8s %9s | %14s %14s | %20s %20s\n" "ranks x events" "gen s" "logs MB" "report -j1" "report -j2" \
  "merge json s/MB/out" "merge pftrace s/MB/out"
for size in $sizes; do
  ranks=${size%:*} events=${size#*:}
  hosts=$(( ranks >= 8 ? ranks / 8 : 1 ))
  rm -rf "$work/logs"
  g=$(timed "$gen" "$work/logs" --ranks "$ranks" --hosts "$hosts" --spread-offsets 2000000 --gpu --period 1000000 \
        --sizes 65536,1048576,16777216 --plugin RING:SIMPLE --exit-jitter 500 --events "$events")
  mb=$(( $(du -sb "$work/logs" | cut -f1) / 1000000 ))
  r1=$(timed "$npkit" report "$work/logs" -j 1)
  r2=$(timed "$npkit" report "$work/logs" -j 2)
  mj="-" mp="-"
  if [ "$ranks" -le "$merge_max" ]; then
    for fmt in json perfetto; do
      /usr/bin/time -f "%e %M" -o "$work/time" sh -c "'$npkit' merge '$work/logs' --format $fmt -o - -q | wc -c > '$work/bytes'"
      m="$(awk '{ printf "%s/%d", $1, $2 / 1024 }' "$work/time")/$(( $(cat "$work/bytes") / 1000000 ))"
      [ "$fmt" = json ] && mj=$m || mp=$m
    done
  fi
  printf "%-13s %8s %9s | %14s %14s | %20s %20s\n" "$ranks x $events" "${g% *}" "$mb" "${r1// / s }MB" "${r2// / s }MB" "$mj" "$mp"
done
