#!/usr/bin/env bash
# What the profiler-plugin path costs the thread NCCL calls it on: bench/plugin_bench drives the
# library's ncclProfiler tables as NCCL 2.28 (v5: API-level events, the links the trace joins by)
# and NCCL 2.27 (v4: tasks and kernel channels only) do for one collective with 16 channels, in one
# run.  Prints ns_per_event for the calling thread and the writer thread's CPU per event.
#   bench/run_plugin_overhead.sh [BUILD_DIR] [COLLECTIVES]
set -euo pipefail
build="${1:-build}"
n="${2:-200000}"
bin="$build/bench/plugin_bench"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_scratch
for abi in 4 5; do
  NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 NPKIT_EVENT_BUF_SIZE=1024 NPKIT_FLUSH_MS=1000 \
    "$bin" "$(realpath "$lib")" --abi "$abi" --collectives "$n" --channels 16 --repeats 5
  rm -f "$out"/*
done
