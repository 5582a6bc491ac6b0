#!/usr/bin/env bash
# What the profiler-plugin path costs the thread NCCL calls it on: bench/plugin_bench drives the
# library's ncclProfiler tables as NCCL does for one collective with 16 channels, in one run:
# v4 (NCCL 2.27: tasks and kernel channels only), v5 (2.28: API-level events, the links the trace
# joins by), v6 (2.29: v5's layout) and v7 (2.31.2: the user tag, the kernel variant); each without
# network (steps=0) and with a send and a receive proxy op per channel of STEPS proxy steps (the
# proxy thread's part of a network collective).  Prints ns_per_event, what the library adds to the
# calling thread's CPU per event over a plugin that does nothing driven alike in the same run
# (raw_ns_per_event and baseline_ns_per_event beside it), and the writer thread's CPU per event,
# the library at its default settings; last, the floor figures of bench/floor_bench, measured in
# the same run.
#   [STEPS=4] bench/run_plugin_overhead.sh [BUILD_DIR] [COLLECTIVES]
set -euo pipefail
build="${1:-build}"
n="${2:-200000}"
steps="${STEPS:-4}"
bin="$build/bench/plugin_bench"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_scratch
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for abi in 4 5 6 7; do
  for s in 0 "$steps"; do
    NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 \
      "$bin" "$(realpath "$lib")" --abi "$abi" --collectives "$n" --channels 16 --steps "$s" --repeats 5
    rm -f "$out"/*
  done
done
bench_floor
