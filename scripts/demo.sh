#!/usr/bin/env bash
# The demo of npkit-preload, from a fresh clone: installs what is missing (Debian/Ubuntu, as root;
# otherwise it prints the command to run), builds the library, the tool and the test suite's fakes,
# runs a 4-rank data-parallel training job under the library with rank 2 arriving 20 ms late at
# every AllReduce, and shows what npkit finds: the report (text, JSON, an HTML page), the per-rank
# traces and one merged trace.
#
# Without a GPU the job runs against the fake NCCL (tests/fakes: the collectives really move data
# between the processes, drive NCCL's profiler plugin and, with FAKE_NCCL_NET=1, report network
# proxy operations) and the fake CUPTI (tests/fakes_cupti: GPU kernels with GPU times), so the trace
# has GPU tracks and arrows and the report GPU-timed bandwidth, overlap and idle time.  Everything
# it records is labelled as simulated (NPKIT_SIMULATED=1).  With a GPU, NCCL and nvcc, it runs the
# GPU check job (tests/gpu) against the real NCCL and CUPTI instead, and says so.
#
#   scripts/demo.sh [--out DIR] [--no-build]
# Options: --out DIR (default <clone>/npkit_demo), --no-build (use the build as it is).
# Environment: NPKIT_DEMO_BUILD (build folder, default <clone>/build), NPKIT_DEMO_NP (ranks, 4),
#   NPKIT_DEMO_ITERS (5), NPKIT_DEMO_LATE (the late rank, 2), NPKIT_DEMO_DELAY_US (20000),
#   NPKIT_DEMO_SIMULATE=1 (simulate even where a GPU is found), NPKIT_SKIP_DEPS=1 (install nothing).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=$root/npkit_demo
build_it=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "demo.sh: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
    --no-build) build_it=0; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $out in /*) ;; *) out="$PWD/$out" ;; esac
build=${NPKIT_DEMO_BUILD:-build}
case $build in /*) ;; *) build="$root/$build" ;; esac
np=${NPKIT_DEMO_NP:-4}
iters=${NPKIT_DEMO_ITERS:-5}
late=${NPKIT_DEMO_LATE:-2}
delay_us=${NPKIT_DEMO_DELAY_US:-20000}
say() { echo "demo.sh: $*"; }
if [ $((delay_us % 1000)) = 0 ]; then delay_text="$((delay_us / 1000)) ms"; else delay_text="$delay_us us"; fi

source scripts/lib/deps.sh
npkit_deps_ensure demo.sh demo || exit 1

# ---- a real GPU, or the simulation
mode=simulated
if [ "${NPKIT_DEMO_SIMULATE:-0}" != 1 ] && command -v nvidia-smi > /dev/null 2>&1 &&
   nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  nccl=""
  for d in ${NCCL_HOME:+"$NCCL_HOME/lib"} "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/libnccl.so.2" ] && nccl=$d/libnccl.so.2 && break
  done
  if [ -z "$nccl" ]; then
    say "a GPU is there, but no libnccl.so.2 (set NCCL_HOME): running the simulation instead"
  elif ! command -v "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" > /dev/null 2>&1; then
    say "a GPU and $nccl are there, but no nvcc (set CUDA_HOME): running the simulation instead"
  else
    mode=real
  fi
fi

if [ "$build_it" = 1 ]; then
  echo "== build ($build)"
  log=$(mktemp)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPKIT_BUILD_BENCH=OFF > "$log" 2>&1 ||
    { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  cmake --build "$build" -j "$(nproc)" --target npkit_preload npkit fake_nccl fake_cupti nccl_mix
fi
preload="$build/src/runtime/libnpkit_preload.so"
npkit="$build/src/tool/npkit"
fakes="$build/tests/fakes"
job="$build/tests/programs/nccl_mix"

# only what an earlier demo left there
mkdir -p "$out"
rm -f "$out"/npkit_*.npkit "$out"/npkit_*.json "$out"/report.html "$out"/report.txt "$out"/report.json \
  "$out"/merged.json.gz
if [ "$mode" = real ]; then
  ngpus=$(nvidia-smi -L | grep -c '^GPU ')
  [ "$ngpus" -gt 8 ] && ngpus=8
  echo
  echo "== run: a real GPU job (tests/gpu/gpu_job: compute kernels and NCCL collectives on $ngpus GPU(s) of"
  echo "   one process) against the real NCCL ($nccl) and CUPTI: no simulation, and no late rank"
  NGPUS=$ngpus tests/gpu/run_gpu_check.sh "$build"
  cp "$build"/tests/gpu/trace/* "$out"/
else
  for f in "$preload" "$npkit" "$fakes/libnccl.so.2" "$fakes/libcupti.so.13" "$job"; do
    [ -e "$f" ] || { echo "demo.sh: $f was not built" >&2; exit 1; }
  done
  # Open MPI refuses to run as root unless told, and a small machine needs oversubscription.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  echo
  echo "== run: $np ranks of a data-parallel training step ($iters iterations: forward, backward beside the"
  echo "   gradient AllReduces, ZeRO ReduceScatter/AllGather, ...), rank $late arriving $delay_text late at every"
  echo "   AllReduce; SIMULATED GPU: the fake NCCL and CUPTI of the test suite stand in for a GPU"
  # mpirun passes on only the variables named with -x
  env LD_PRELOAD="$preload" LD_LIBRARY_PATH="$fakes${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    NPKIT_TRACE_DIR="$out" NPKIT_SIMULATED=1 NPKIT_CUPTI_LIBRARY="$fakes/libcupti.so.13" \
    NPKIT_STACK_DEPTH=8 FAKE_NCCL_NET=1 NPKIT_METRICS=inspector,prometheus NPKIT_METRICS_DIR="$out/metrics" \
    mpirun -np "$np" --oversubscribe --bind-to none \
      -x LD_PRELOAD -x LD_LIBRARY_PATH -x NPKIT_TRACE_DIR -x NPKIT_SIMULATED -x NPKIT_CUPTI_LIBRARY \
      -x NPKIT_STACK_DEPTH -x FAKE_NCCL_NET -x NPKIT_METRICS -x NPKIT_METRICS_DIR \
      "$job" --medium --iters "$iters" --compute-us 20000 --marks --delay-rank "$late" --delay-us "$delay_us"
fi

# ---- the report, as text, JSON and a page; one merged trace
echo
echo "== npkit report $out"
"$npkit" report "$out" --html "$out/report.html" > "$out/report.txt"
"$npkit" report "$out" --json > "$out/report.json"
sed -n '1,/^== Clock alignment/p' "$out/report.txt" | sed '$d'
echo "   ... the whole report: $out/report.txt"
echo
echo "== npkit merge $out"
"$npkit" merge "$out" -o "$out/merged.json.gz"

if [ "$mode" = simulated ]; then
  python3 - "$out/report.json" "$late" <<'EOF'
import json, sys
rep, late = json.load(open(sys.argv[1])), int(sys.argv[2])
found = [f for f in rep["findings"] if f["kind"] == "straggler"]
gpu = [r for r in rep["collectives"] if r["time_source"] == "gpu"]
print()
if [f.get("rank") for f in found] == [late]:
    print("The report names rank %d, the late one, as the straggler (finding %d of %d), from GPU times of %d"
          " table rows." % (late, found[0]["position"], len(rep["findings"]), len(gpu)))
    waited = {r["rank"]: r["waited_us"] for r in rep["stragglers"]["ranks"]}
    for f in rep["findings"]:
        if f["kind"] == "exposed_communication" and f.get("rank") in waited:
            print("Finding %d (rank %d's exposed communication, %.0f ms) counts the time its NCCL kernels spent"
                  " waiting: %.0f ms passed between its arrivals at collectives and the last rank's." % (f["position"], f["rank"],
                                                                        f["time_at_stake_us"] / 1e3,
                                                                        waited[f["rank"]] / 1e3))
else:
    print("demo.sh: the report does not name rank %d as the straggler (the machine may have been too busy:"
          " run it again)" % late, file=sys.stderr)
EOF
fi

echo
echo "== what to open"
for f in "$out"/npkit_rank*.json; do [ -e "$f" ] && echo "  $f"; done
echo "      one trace per rank: drag it into https://ui.perfetto.dev (or open chrome://tracing and Load)"
echo "  $out/merged.json.gz"
echo "      all ranks on one timeline, clocks aligned: ui.perfetto.dev or chrome://tracing, as it is"
echo "  $out/report.html"
echo "      the report as a page with plots and the timeline of the worst collective: any browser"
echo "      (file://$out/report.html)"
echo "  $out/report.txt, $out/report.json: the same report as text and as JSON (docs/report.md)"
if [ -d "$out/metrics" ]; then
  echo "  $out/metrics"
  echo "      the live metrics the ranks wrote while they ran (NPKIT_METRICS): NCCL Inspector's JSON lines"
  echo "      (<host>-pid<pid>.log) and Prometheus textfiles for node_exporter (README, \"Live metrics\")"
fi
