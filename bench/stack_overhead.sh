#!/usr/bin/env bash
# Added cost per wrapped NCCL call of call stacks: bench/stack_overhead (calls issued 25 frames deep)
# under the library at NPKIT_STACK_DEPTH=0 and 8 (one call site, then 16 call sites in turn),
# against the fake NCCL in no-op mode, so that the differences are the library's own cost.
# Reports per-call medians over the repeats and the difference to depth 0.
#   bench/stack_overhead.sh [BUILD_DIR] [CALLS] [REPEATS]
set -euo pipefail
build="${1:-build}"
calls="${2:-200000}"
repeats="${3:-7}"
bin="$build/bench/stack_overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch

run() { # label, sites, [NAME=VALUE...]: one line of the table
  local label=$1 sites=$2
  shift 2
  # the pause between repeats lets the writer thread stream the previous repeat to disk
  local ns
  ns=$(env "$@" "$bin" --calls "$calls" --repeats "$repeats" --sites "$sites" --pause-ms 500 | median)
  rm -rf "${out:?}"/*
  printf '%-28s %8s %14s\n' "$label" "$sites" "$ns"
  echo "$ns" > "$out.$label"
}
with_lib=(LD_PRELOAD="$(realpath "$lib")" NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 NPKIT_EVENT_BUF_SIZE=1024)
printf '%-28s %8s %14s\n' setting sites ns/call
run no-library 1
run depth-0 1 "${with_lib[@]}"
run depth-8 1 "${with_lib[@]}" NPKIT_STACK_DEPTH=8
run depth-8-16-sites 16 "${with_lib[@]}" NPKIT_STACK_DEPTH=8
run depth-32 1 "${with_lib[@]}" NPKIT_STACK_DEPTH=32
base=$(cat "$out.depth-0")
echo
for label in depth-8 depth-8-16-sites depth-32; do
  awk -v l="$label" -v b="$base" -v w="$(cat "$out.$label")" \
    'BEGIN { printf "added by stacks, %-17s %8.1f ns/call\n", l ":", w - b }'
done
rm -f "$out".*
