#!/usr/bin/env bash
# The flight recorder's cost per wrapped NCCL call next to the normal mode's, in one run: the same
# program and calls as run_overhead.sh (bench/overhead against the fake NCCL in no-op mode) without
# the library, with it streaming its log to disk, and with it keeping the log in a ring of RING_MB
# (default 64) written only at exit.  Reports per-call medians, what each mode adds, the ring's
# ratio to the normal mode, and the writer thread's CPU per call in each mode.
#   [FLUSH_MS=N] [RING_MB=N] bench/run_ring_overhead.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
flush_ms="${FLUSH_MS:-1000}"
ring_mb="${RING_MB:-64}"
buf_mb=1024
bin="$build/bench/overhead"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_noop_nccl
bench_scratch

printf '%-8s %12s %12s %12s %12s %12s %10s %12s %12s\n' threads base_ns normal_ns ring_ns normal_added \
  ring_added ring/normal writer_normal writer_ring
for threads in 1 2; do
  base=$(bench_overhead "$threads" no | median)
  normal=$(bench_overhead "$threads" yes)
  rm -f "$out"/*
  ring=$(bench_overhead "$threads" yes NPKIT_RING_MB="$ring_mb")
  ls "$out"/*.npkit > /dev/null # the ring was written at exit
  rm -f "$out"/*
  echo "threads=$threads normal, repeats sorted (ns/call): $(echo "$normal" | field sorted_ns_per_call)" >&2
  echo "threads=$threads ring, repeats sorted (ns/call): $(echo "$ring" | field sorted_ns_per_call)" >&2
  awk -v t="$threads" -v b="$base" -v n="$(echo "$normal" | median)" -v r="$(echo "$ring" | median)" \
    -v wn="$(echo "$normal" | field other_cpu_ns_per_call)" -v wr="$(echo "$ring" | field other_cpu_ns_per_call)" \
    'BEGIN { printf "%-8s %12.2f %12.2f %12.2f %12.2f %12.2f %10.3f %12.2f %12.2f\n", t, b, n, r, n - b, r - b, (r - b) / (n - b), wn, wr }'
done
