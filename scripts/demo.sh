#!/usr/bin/env bash
# Demo of npkit-preload from a fresh clone: builds everything, runs a 4-rank training-like NCCL job
# (tests/programs/nccl_mix, against the fake libnccl that moves data between processes through
# shared memory, so no GPU is needed) under the preloaded library, then shows what was recorded.
#
#   scripts/demo.sh            # from anywhere; the build goes to <clone>/build
# Environment: NPKIT_DEMO_BUILD (build folder, default build), NPKIT_DEMO_NP (ranks, default 4),
#              NPKIT_DEMO_ITERS (iterations, default 5).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${NPKIT_DEMO_BUILD:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
np=${NPKIT_DEMO_NP:-4}
iters=${NPKIT_DEMO_ITERS:-5}
trace_dir=./npkit_demo

for tool in cmake mpirun; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "demo.sh: '$tool' not found in PATH." >&2
    [ "$tool" = mpirun ] && echo "demo.sh: install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev)." >&2
    exit 1
  fi
done

echo "== build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j

preload="$build/src/runtime/libnpkit_preload.so"
fake_dir="$build/tests/fakes"
job="$build/tests/programs/nccl_mix"
npkit="$build/src/tool/npkit"
for f in "$preload" "$fake_dir/libnccl.so.2" "$job" "$npkit"; do
  [ -e "$f" ] || { echo "demo.sh: $f was not built" >&2; exit 1; }
done

# Open MPI refuses to run as root unless told, and a small machine needs oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

echo
echo "== run: $np ranks, $iters iterations, rank 2 arriving 2 ms late at every AllReduce"
rm -rf "$trace_dir"
export NPKIT_TRACE_DIR="$trace_dir"
export LD_LIBRARY_PATH="$fake_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# mpirun forwards only the variables named with -x
LD_PRELOAD="$preload" mpirun -np "$np" --oversubscribe --bind-to none \
  -x LD_PRELOAD -x LD_LIBRARY_PATH -x NPKIT_TRACE_DIR \
  "$job" --iters "$iters" --check --delay-rank 2 --delay-us 2000

echo
echo "== trace files in $trace_dir"
ls -l "$trace_dir"

log=$(ls "$trace_dir"/*.npkit | head -n 1)
echo
echo "== npkit info $log"
"$npkit" info "$log"

# ---- report: the table and findings for all ranks, an HTML page, and one merged trace
echo
echo "== npkit report $trace_dir"
"$npkit" report "$trace_dir" --html "$trace_dir/report.html"
echo
echo "== npkit merge $trace_dir"
"$npkit" merge "$trace_dir" -o "$trace_dir/merged.json.gz"
echo "The report as a page: $trace_dir/report.html; all ranks on one timeline: $trace_dir/merged.json.gz"
# ----

echo
echo "Open the .json files in https://ui.perfetto.dev or chrome://tracing to see the timelines."
