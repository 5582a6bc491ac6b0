#!/usr/bin/env bash
# Added cost per wrapped NCCL call: the same program, the same calls, in one run, with and without
# the preloaded library, against the fake NCCL in no-op mode (FAKE_NCCL_NOOP=1: the call itself is a
# few ns, so the difference is the library's cost).  Reports per-call medians and their difference.
# Between repeats the program pauses (untimed) so the writer thread streams the last repeat to disk
# with the default NPKIT_FLUSH_MS: the measured loop sees warm, recycled chunks, as a long job does.
#   bench/run_overhead.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build="${1:-build}"
calls="${2:-1000000}"
bin="$build/bench/overhead"
lib="$build/src/runtime/libnpkit_preload.so"
fakes="$build/tests/fakes"
for f in "$bin" "$lib" "$fakes/libnccl.so.2"; do
  [ -e "$f" ] || { echo "run_overhead.sh: $f is missing; build first (cmake --build $build)" >&2; exit 1; }
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export FAKE_NCCL_NOOP=1 LD_LIBRARY_PATH="$fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

median() { sed -n 's/.*median_ns_per_call=\([0-9.]*\).*/\1/p'; }
run() { # threads, preload?
  if [ "$2" = yes ]; then
    NPKIT_TRACE_DIR="$out" NPKIT_JSON=0 NPKIT_QUIET=1 NPKIT_EVENT_BUF_SIZE=1024 \
      LD_PRELOAD="$(realpath "$lib")" "$bin" --calls "$calls" --repeats 7 --threads "$1" --pause-ms 1500
  else
    "$bin" --calls "$calls" --repeats 7 --threads "$1" --pause-ms 1500
  fi
}
printf '%-8s %14s %14s %14s %10s\n' threads base_ns/call npkit_ns/call added_ns dropped
for threads in 1 2; do
  base=$(run "$threads" no | median)
  with=$(run "$threads" yes | median)
  dropped=$("$build/src/tool/npkit" info "$out"/*.npkit 2>/dev/null | sed -n 's/.*dropped[^0-9]*\([0-9][0-9]*\).*/\1/p' | head -1)
  rm -f "$out"/*
  awk -v t="$threads" -v b="$base" -v w="$with" -v d="${dropped:-?}" \
    'BEGIN { printf "%-8s %14.2f %14.2f %14.2f %10s\n", t, b, w, w - b, d }'
done
