#!/usr/bin/env bash
# How many records NCCL's profiler-plugin events become per collective, per rank: an in-place
# float AllReduce of 1 MB and of 128 MB on 8 ranks (communicators of ncclCommInitAll in one
# process) against the fake NCCL with 16 channels and a network (FAKE_NCCL_NCHANNELS=16,
# FAKE_NCCL_NET=1; the fake's tuning and proxy steps are described in tests/fakes/README.md), the
# library at its default settings unless NPKIT_PLUGIN_EVENTS is set.  Prints per size the records
# of each kind per collective and rank.
#   [NPKIT_PLUGIN_EVENTS=...] bench/plugin_events.sh [BUILD_DIR] [ITERS]
set -euo pipefail
build="${1:-build}"
iters="${2:-4}"
ranks=8
bin="$build/bench/plugin_events"
. "$(dirname "$0")/bench_lib.sh"
bench_require "$bin" "$lib"
bench_scratch
echo "NPKIT_PLUGIN_EVENTS=${NPKIT_PLUGIN_EVENTS:-default}, $ranks ranks, 16 channels, network on, $iters AllReduces per size"
for bytes in 1048576 134217728; do
  FAKE_NCCL_NCHANNELS=16 FAKE_NCCL_NET=1 NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 \
    LD_LIBRARY_PATH="$build/tests/fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$(realpath "$lib")" \
    "$bin" job --ranks "$ranks" --bytes "$bytes" --iters "$iters"
  "$bin" count "$out"/*.npkit | awk -v b="$bytes" -v d="$((ranks * iters))" -F'[= ]' '
    { per[$2] = $4 / d; if ($2 != "api_call" && $2 != "plugin_init" && $2 != "plugin_finalize" &&
                            $2 != "plugin_stats" && $2 != "gpu_clock_map") total += $4 / d; order[++n] = $2 }
    END { printf "bytes=%d", b; for (i = 1; i <= n; i++) printf " %s=%.1f", order[i], per[order[i]];
          printf " plugin_records_per_collective=%.1f\n", total }'
  rm -f "$out"/*
done
