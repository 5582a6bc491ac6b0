#!/usr/bin/env bash
# The prepared check for a machine with one NVIDIA GPU, against the real CUDA driver, CUPTI and
# NCCL, in about five minutes.  What the fakes of tests/fakes* model is checked here:
#   1. the library and the tool: taken from BUILD_DIR when already built there (built on another
#      machine and carried over), else built;
#   2. globaltimer: the GPU's %globaltimer against CLOCK_REALTIME (offset, drift) - what the
#      library's GPU clock map absorbs for NCCL's kernel-channel stamps;
#   3. cupti_probe: CUPTI's external correlation (only in front of traced API records), per-cbid
#      API tracing, timestamp callbacks, a second subscriber - one process per mode;
#   4. run_gpu_check.sh: the CUPTI source against the real NCCL and CUPTI, one rank
#      (tests/gpu/README.md);
#   5. two ranks on the one GPU, NCCL taking them for two hosts (NCCL_HOSTID) joined by its socket
#      transport: NCCL's profiler plugin for real (tasks, kernel channels with %globaltimer stamps,
#      proxy operations, network steps, a CUDA graph's replays), checked by check_plugin_trace.py,
#      then `npkit report` and `npkit merge` on the two logs; once more with the library named in
#      NCCL_PROFILER_PLUGIN only, not preloaded (calls from NCCL's API events); and a hang (rank 1
#      stops before collective 9) under the flight recorder and the hang watchdog, which must name
#      AllReduce #9, rank 1 missing and rank 0 waiting;
#   6. a one-rank torch.distributed NCCL job under the library with NPKIT_CUPTI=1: every call
#      recorded, its GPU work tied to it (check_torch_trace.py); and once with the default, which
#      must leave CUPTI to PyTorch with one line;
#   7. all_gather bandwidth 1 KB .. 1 GB without the library, with it (default settings: CUPTI
#      left to PyTorch), and with it and CUPTI (same run).
#
#   tests/gpu/device_check.sh [BUILD_DIR]      (default ./build-gpu)
# Environment: BUDGET_S (420: no step starts later), BIN_DIR (gpu_job, globaltimer, cupti_probe built elsewhere; else compiled here with
# nvcc), CUDA_HOME, OUT (where summary.txt and device_check.tgz go; default ./device_check_out).
# libnccl and libcupti are those PyTorch loads, else the toolkit's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(mkdir -p "${1:-$src/build-gpu}" && cd "${1:-$src/build-gpu}" && pwd)
out=${OUT:-$PWD/device_check_out}
work=$(mktemp -d /tmp/device_check.XXXXXX)
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$cuda/bin/nvcc}
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary" >&2; }
budget=${BUDGET_S:-420}   # no step starts after this many seconds: the device time is counted
step() { # name, seconds, command...: runs it with a time limit, notes ok/FAIL and the time taken
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  if [ "$SECONDS" -ge "$budget" ]; then note "SKIP $name (the budget of $budget s is spent)"; return; fi
  if timeout "$limit" "$@" > "$work/$name.out" 2> "$work/$name.err"; then
    note "ok   $name ($((SECONDS - t0)) s)"
  else
    note "FAIL $name (exit $?, $((SECONDS - t0)) s): see $name.err"
    tail -n 5 "$work/$name.err" | sed 's/^/     | /' >> "$summary"
  fi
}
finish() {
  note "done in $SECONDS s"
  cp "$summary" "$work/"
  tar czf "$out/device_check.tgz" --exclude=bench_with_cupti_trace --exclude=bench_trace \
    -C "$(dirname "$work")" "$(basename "$work")" 2> /dev/null
  ls -la "$out" >&2
}
trap finish EXIT

note "device_check $(date -u +%FT%TZ) on $(hostname), kernel $(uname -r)"
nvidia-smi -L >> "$summary" 2>&1 || note "no nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$summary" 2>&1
python3 - >> "$summary" 2>&1 <<'PY'
import torch
v = torch.cuda.nccl.version()
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", v)
for l in open("/proc/self/maps"):
    p = l.split()[-1]
    if ("libnccl" in p or "libcupti" in p) and p.startswith("/"):
        print("torch-loaded", p)
PY
lib_dir() { # the folder of the first $1 that PyTorch loads, else of the toolkit
  local p
  p=$(grep -m1 "^torch-loaded .*/$1" "$summary" | cut -d' ' -f2)
  [ -n "$p" ] && { dirname "$p"; return; }
  for d in "$cuda/lib64" "$cuda/extras/CUPTI/lib64" /usr/lib/x86_64-linux-gnu; do
    ls "$d"/$1* > /dev/null 2>&1 && { echo "$d"; return; }
  done
  find / -xdev -name "$1*" -path '*lib*' 2> /dev/null | head -n 1 | xargs -r dirname
}
nccl_dir=$(lib_dir libnccl.so)
cupti_dir=$(lib_dir libcupti.so)
note "libnccl from ${nccl_dir:-nowhere}: $(ls "$nccl_dir" 2> /dev/null | grep nccl | tr '\n' ' ')"
note "libcupti from ${cupti_dir:-nowhere}: $(ls "$cupti_dir" 2> /dev/null | grep cupti | tr '\n' ' ')"
note "nvcc: $("$nvcc" --version 2> /dev/null | tail -n 1)"
export LD_LIBRARY_PATH="${nccl_dir:+$nccl_dir:}${cupti_dir:+$cupti_dir:}$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

lib="$build/src/runtime/libnpkit_preload.so"
npkit="$build/src/tool/npkit"
if [ -f "$lib" ] && [ -x "$npkit" ]; then
  note "ok   build (taken from $build)"
else
  step build 400 bash -c "cmake -S '$src' -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPKIT_BUILD_TESTS=OFF \
    -DNPKIT_BUILD_BENCH=OFF > /dev/null && cmake --build '$build' -j \$(nproc) --target npkit_preload npkit"
fi

bin=${BIN_DIR:-}
if [ -z "$bin" ] || [ ! -x "$bin/gpu_job" ]; then
  bin="$work/bin"
  mkdir -p "$bin"
  arch="-arch=native"
  "$nvcc" $arch -o /dev/null -x cu - <<< '__global__ void k() {} int main() { return 0; }' 2> /dev/null || arch=""
  step globaltimer_build 120 "$nvcc" -O2 $arch -o "$bin/globaltimer" "$here/globaltimer.cu"
  step cupti_probe_build 120 "$nvcc" -O1 $arch -o "$bin/cupti_probe" "$here/cupti_probe.cu" -I"$cuda/include" \
    -L"$cupti_dir" -L"$cuda/lib64" -L"$cuda/lib64/stubs" -lcupti -lcuda
  step gpu_job_build 120 "$nvcc" -O2 -std=c++17 $arch -o "$bin/gpu_job" "$here/gpu_job.cu" -I"$cuda/include" \
    -L"$nccl_dir" -l:libnccl.so.2
fi

step globaltimer 30 "$bin/globaltimer" 3
grep -h "globaltimer:" "$work/globaltimer.out" >> "$summary" 2> /dev/null

for m in ext_only ext_drvapi drv_then_disable replace_cb ts_cb subscribe_twice; do
  step "cupti_probe_$m" 60 "$bin/cupti_probe" "$m"
  grep -h "RESULT\|NOTE" "$work/cupti_probe_$m.out" >> "$summary" 2> /dev/null
done

step gpu_check 180 env ITERS=2 GPU_JOB="$bin/gpu_job" NCCL_LIB_DIR="$nccl_dir" "$here/run_gpu_check.sh" "$build"
grep -h "^ok\|^FAIL\|^info\|^PASS\|^FAILED" "$work/gpu_check.out" >> "$summary" 2> /dev/null
cp -r "$build/tests/gpu" "$work/gpu_check_files" 2> /dev/null

# two ranks on the one GPU as two hosts (two_ranks.sh): NCCL's socket transport over loopback
step plugin2 180 "$here/two_ranks.sh" "$work/plugin2" "$bin/gpu_job" "LD_PRELOAD=$lib NPKIT_GPU_SAMPLE_RATE=100000" \
  --iters 2 --max-mb 32 --spin-us 500 --graph-replays 5
cat "$work/plugin2.out" >> "$summary"
step plugin2_check 60 python3 "$here/check_plugin_trace.py" "$work/plugin2/trace" 2 2 6 5
grep -h "^ok\|^FAIL\|^info\|^PASS\|^FAILED" "$work/plugin2_check.out" >> "$summary" 2> /dev/null
step plugin2_report 60 "$npkit" report "$work/plugin2/trace" --html "$work/plugin2/report.html"
head -n 60 "$work/plugin2_report.out" >> "$summary"
step plugin2_report_json 60 "$npkit" report "$work/plugin2/trace" --json
cp "$work/plugin2_report_json.out" "$work/plugin2/report.json" 2> /dev/null
step plugin2_merge 60 "$npkit" merge "$work/plugin2/trace" -o "$work/plugin2/merged.json"
for f in "$work"/plugin2/trace/*.npkit; do "$npkit" info "$f" >> "$work/plugin2_info.out" 2>&1; done
head -n 80 "$work/plugin2_info.out" | sed 's/^/info | /' >> "$summary"

step plugin2_named 120 "$here/two_ranks.sh" "$work/plugin2_named" "$bin/gpu_job" "NCCL_PROFILER_PLUGIN=$lib" \
  --iters 1 --max-mb 4 --spin-us 500
cat "$work/plugin2_named.out" >> "$summary"
python3 - "$work/plugin2_named/trace" >> "$summary" 2>&1 <<'PY'
import glob, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    ev = json.load(open(p))["traceEvents"]
    api = [e for e in ev if e.get("cat") == "nccl_api" and e.get("ph") == "X"]
    coll = [e for e in api if e["name"] in ("ncclAllReduce", "ncclAllGather", "ncclReduceScatter")]
    print("%s plugin2_named %s: %d collective calls (want 12), %d from NCCL's events, %d with an algorithm, %d with gpu_time_us"
          % ("ok  " if len(coll) == 12 and all(e["args"].get("from_nccl_events") for e in coll) else "FAIL",
             p.rsplit("/", 1)[-1], len(coll), sum(bool(e["args"].get("from_nccl_events")) for e in coll),
             sum("algorithm" in e["args"] for e in coll), sum("gpu_time_us" in e["args"] for e in coll)))
PY

# a hang: rank 1 stops before collective 9 (AllReduce sum of 4 MB) and sleeps; rank 0 enters it and
# waits on the GPU; both are stopped with SIGTERM after 8 s.  Both run the flight recorder (a ring,
# nothing on disk until a dump) and the hang watchdog: rank 0 must name AllReduce #9 on stderr within
# the timeout and dump its work in flight (the kernel channel started and not stopped, the proxy
# steps not done, from NCCL's profiler plugin), and `npkit report` must find rank 1 missing from #9
# and rank 0 waiting in it.
step stall 60 env RANK1_OPTS="--stall-at 9" KILL_AFTER=8 "$here/two_ranks.sh" "$work/stall" "$bin/gpu_job" \
  "LD_PRELOAD=$lib NPKIT_RING_MB=64 NPKIT_HANG_TIMEOUT=3s" --iters 1 --max-mb 8 --spin-us 500
cat "$work/stall.out" >> "$summary"
grep -h "^npkit: hang:" "$work"/stall/rank*.err >> "$summary" 2> /dev/null
step stall_report 60 "$npkit" report "$work/stall/trace"
head -n 40 "$work/stall_report.out" >> "$summary"
step stall_report_json 60 "$npkit" report "$work/stall/trace" --json
python3 - "$work/stall_report_json.out" "$work/stall" >> "$summary" 2>&1 <<'PY'
import glob, json, sys
hangs = json.load(open(sys.argv[1])).get("hangs", [])
lines = [l for p in glob.glob(sys.argv[2] + "/rank0.err") for l in open(p) if l.startswith("npkit: hang:")]
h = hangs[0] if hangs else {}
ok = (h.get("seq"), h.get("missing_ranks"), h.get("waiting_ranks")) == (9, [1], [0])
print("%s stall_hangs: %d hangs; first: %s #%s missing %s waiting %s since_ns %s" % (
    "ok  " if ok else "FAIL", len(hangs), h.get("op"), h.get("seq"), h.get("missing_ranks"),
    h.get("waiting_ranks"), h.get("since_ns")))
for r in h.get("ranks", []):
    print("info stall_hangs rank %s: %s, last entered %s, completed %s; where %s" % (
        r.get("rank"), r.get("status"), r.get("last_entered"), r.get("last_completed"), r.get("where")))
print("%s stall_watchdog: rank 0 named #9 on stderr: %r" % (
    "ok  " if any("#9 " in l for l in lines) else "FAIL", lines[:2]))
PY
python3 - "$work/stall/trace" >> "$summary" 2>&1 <<'PY'
import glob, json, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.json")):
    ev = json.load(open(p))["traceEvents"]
    api = [e for e in ev if e.get("cat") == "nccl_api" and e.get("ph") == "X"]
    last = max(api, key=lambda e: e["ts"]) if api else None
    chans = [e for e in ev if e.get("cat") == "nccl_kernel"]
    open_ch = [e["args"] for e in chans if e["args"].get("stop_missing")]
    prox = [e for e in ev if e.get("cat") == "nccl_proxy" and e["name"].startswith("proxy ")]
    undone = [(e["name"], e["args"].get("steps_done"), e["args"].get("steps")) for e in prox
              if e["args"].get("steps_done") != e["args"].get("steps")]
    print("stall %s: %d calls, last %s seq %s; %d channel slices, %d without a stop %r; %d proxy ops, %d not done %r"
          % (p.rsplit("/", 1)[-1], len(api), last and last["name"], last and last["args"].get("seq"), len(chans),
             len(open_ch), open_ch[:2], len(prox), len(undone), undone[:4]))
PY
step nvml_probe 60 python3 "$here/nvml_probe.py"
cat "$work/nvml_probe.out" >> "$summary"

step torch_job 120 env NPKIT_TRACE_DIR="$work/torch_trace" NPKIT_LOG_LEVEL=debug NPKIT_CUPTI=1 LD_PRELOAD="$lib" \
  python3 "$here/torch_one_rank.py" check
grep -h "^npkit:" "$work/torch_job.err" | head -n 20 >> "$summary"
step torch_check 60 python3 "$here/check_torch_trace.py" "$work/torch_trace"
cat "$work/torch_check.out" >> "$summary" 2> /dev/null
step torch_auto 120 env NPKIT_TRACE_DIR="$work/torch_auto_trace" LD_PRELOAD="$lib" python3 "$here/torch_one_rank.py" check
if grep -q "^npkit: GPU timing is off: PyTorch is loaded" "$work/torch_auto.err" 2> /dev/null; then
  note "ok   torch_auto_yields (CUPTI left to PyTorch's profiler by default)"
else
  note "FAIL torch_auto_yields: no 'PyTorch is loaded' line in torch_auto.err"
fi

# without, with, with CUPTI, without again: the GPU's clocks rise during the first run (345 MHz
# idle), so each size's figure without the library is the better of the two runs
step bench_without 120 python3 "$here/torch_one_rank.py" bench 12
step bench_with 120 env NPKIT_TRACE_DIR="$work/bench_trace" NPKIT_JSON=0 LD_PRELOAD="$lib" \
  python3 "$here/torch_one_rank.py" bench 12
step bench_with_cupti 120 env NPKIT_TRACE_DIR="$work/bench_with_cupti_trace" NPKIT_JSON=0 NPKIT_CUPTI=1 \
  LD_PRELOAD="$lib" python3 "$here/torch_one_rank.py" bench 12
step bench_without_again 120 python3 "$here/torch_one_rank.py" bench 12
python3 - "$work/bench_without.out" "$work/bench_without_again.out" "$work/bench_with.out" \
  "$work/bench_with_cupti.out" >> "$summary" 2>&1 <<'PY'
import re, sys
def read(p):
    try:
        return {int(m.group(1)): float(m.group(2)) for m in
                (re.search(r"bytes=(\d+) us=([\d.]+)", l) for l in open(p)) if m}
    except OSError:
        return {}
a1, a2, b, c = (read(p) for p in sys.argv[1:5])
print("bench all_gather, one rank: median us per call without the library (the better of two runs), "
      "with it (default settings), with it and CUPTI; the last two as % of the unprofiled bandwidth")
for n in sorted(set(a1) & set(a2) & set(b) & set(c)):
    a = min(a1[n], a2[n])
    print("bench %10d B: %10.2f %10.2f %10.2f us  %6.1f %%  %6.1f %%" % (n, a, b[n], c[n], 100 * a / b[n], 100 * a / c[n]))
PY
