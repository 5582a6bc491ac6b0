#!/usr/bin/env bash
# Throughput and peak memory of `npkit convert` on generated NPKit dumps of ~1 GB and ~100 MB.
#
#   bench/convert_bench.sh [BUILD_DIR]        (default BUILD_DIR: ./build)
#
# The dumps (realistic kernels of nested ENTRY/EXIT pairs in full 1 MiB GPU buffers, plus network
# channels) are written by tests/npkit/npkit_gen.py into a temporary folder that is removed at the
# end (TMPDIR picks its place; it needs ~1.1 GB plus ~5 GB for the largest trace).  Each set is
# converted twice: into a file next to it (what users do; bound by the disk when the trace is
# several times the dump) and into /dev/null (the converter's own speed).  MB/s are of dump input;
# peak RSS comes from /usr/bin/time -v and must not grow with the size of the dump.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
gen=$here/tests/npkit/npkit_gen.py

if [[ -n "${NPKIT_CONVERT:-}" ]]; then
  read -r -a convert <<<"$NPKIT_CONVERT"
elif [[ -x $build/src/tool/npkit ]]; then
  convert=("$build/src/tool/npkit" convert)
else
  echo "convert_bench: no 'npkit convert' in $build (build the project first, or set NPKIT_CONVERT)" >&2
  exit 2
fi
[[ -x /usr/bin/time ]] || { echo "convert_bench: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/npkit_convert_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
avail_mb=$(df -Pm "$work" | awk 'NR == 2 {print $4}')
if (( avail_mb < 7000 )); then
  echo "convert_bench: only ${avail_mb} MB free in $work; ~7000 MB are needed" >&2
  exit 2
fi

# run LABEL DUMP OUTPUT: one conversion, one result line
run() {
  local label=$1 dump=$2 out=$3 log=$work/time.log
  local bytes
  bytes=$(du -sb "$dump" | awk '{print $1}')
  sync
  if ! /usr/bin/time -v "${convert[@]}" "$dump" -o "$out" -q 2>"$log"; then
    cat "$log" >&2
    echo "convert_bench: conversion failed" >&2
    exit 1
  fi
  local secs rss json_mb
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  if [[ -f $out ]]; then json_mb=$(( $(stat -c %s "$out") / 1000000 )); else json_mb=-; fi
  awk -v l="$label" -v b="$bytes" -v s="$secs" -v r="$rss" -v j="$json_mb" 'BEGIN {
        printf "%-34s %8.0f MB %8.2f s %9.1f MB/s %8.1f MB RSS %8s MB JSON\n", l, b / 1e6, s, (s > 0 ? b / 1e6 / s : 0), r / 1024, j }'
  [[ -f $out ]] && rm -f "$out"
  return 0
}

echo "npkit convert: ${convert[*]}"
echo "machine: $(nproc) CPU(s), $(awk '/MemTotal/ {printf "%.0f GB RAM", $2 / 1048576}' /proc/meminfo), temp folder on $(df -P "$work" | awk 'NR == 2 {print $1}')"
for mb in 100 1000; do
  dump=$work/dump_${mb}
  python3 "$gen" bench "$dump" --mb "$mb" >/dev/null
  run "${mb} MB dump -> trace file" "$dump" "$work/trace_${mb}.json"
  run "${mb} MB dump -> /dev/null" "$dump" /dev/null
  rm -rf "$dump"
done
