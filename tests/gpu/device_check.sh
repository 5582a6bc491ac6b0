#!/usr/bin/env bash
# The prepared check for a machine with one NVIDIA GPU (one rank), against the real CUDA driver,
# CUPTI and NCCL, in well under 8 minutes.  What the fakes of tests/fakes* model is checked here:
#   1. build the library and the tool;
#   2. globaltimer: the GPU's %globaltimer against CLOCK_REALTIME (offset, drift) - what the
#      library's GPU clock map absorbs for NCCL's kernel-channel stamps;
#   3. cupti_probe: CUPTI's external correlation (only in front of traced API records), per-cbid
#      API tracing, timestamp callbacks, a second subscriber - one process per mode;
#   4. run_gpu_check.sh: the GPU source against the real NCCL and CUPTI (tests/gpu/README.md);
#   5. a one-rank torch.distributed NCCL job under the library with NPKIT_CUPTI=1 (by default the
#      library leaves CUPTI to PyTorch's profiler): every call recorded, the GPU work of each (NCCL
#      copies for one rank) tied to it (check_torch_trace.py); and once with the default, which
#      must say it leaves CUPTI to PyTorch;
#   6. all_gather bandwidth 1 KB .. 1 GB with and without the library (same run).
# One line per step in $OUT/summary.txt (or ./device_check_out/), every output kept there.
#   tests/gpu/device_check.sh [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-$src/build-gpu}
out=${OUT:-$PWD/device_check_out}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$cuda/bin/nvcc}
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary" >&2; }
step() { # name, command...: runs it with a time limit, notes ok/FAIL and the time taken
  local name=$1; shift
  local t0=$SECONDS
  if timeout 240 "$@" > "$out/$name.out" 2> "$out/$name.err"; then
    note "ok   $name ($((SECONDS - t0)) s)"
  else
    note "FAIL $name (exit $?, $((SECONDS - t0)) s): see $out/$name.err"
  fi
}

note "device_check $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L >> "$summary" 2>&1 || note "no nvidia-smi"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' \
  >> "$summary" 2>&1 || note "no torch"

step build bash -c "cmake -S '$src' -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPKIT_BUILD_TESTS=OFF \
  -DNPKIT_BUILD_BENCH=OFF > /dev/null && cmake --build '$build' -j \$(nproc) --target npkit_preload npkit"
lib="$build/src/runtime/libnpkit_preload.so"

arch="-arch=native"
"$nvcc" $arch -o /dev/null -x cu - <<< '__global__ void k() {} int main() { return 0; }' 2> /dev/null || arch=""
step globaltimer_build "$nvcc" -O2 $arch -o "$out/globaltimer" "$here/globaltimer.cu"
step globaltimer "$out/globaltimer" 3
grep -h "globaltimer:" "$out/globaltimer.out" >> "$summary" 2> /dev/null

step cupti_probe_build "$nvcc" -O1 $arch -o "$out/cupti_probe" "$here/cupti_probe.cu" -I"$cuda/include" \
  -L"$cuda/lib64" -L"$cuda/lib64/stubs" -lcupti -lcuda -Xlinker -rpath -Xlinker "$cuda/lib64"
for m in ext_only ext_drvapi drv_then_disable replace_cb ts_cb subscribe_twice; do
  step "cupti_probe_$m" "$out/cupti_probe" "$m"
  grep -h "RESULT\|NOTE" "$out/cupti_probe_$m.out" >> "$summary" 2> /dev/null
done

step gpu_check env ITERS=2 "$here/run_gpu_check.sh" "$build"
tail -n 30 "$out/gpu_check.out" >> "$summary" 2> /dev/null

trace="$out/torch_trace"
rm -rf "$trace"
step torch_job env NPKIT_TRACE_DIR="$trace" NPKIT_LOG_LEVEL=debug NPKIT_CUPTI=1 LD_PRELOAD="$lib" \
  python3 "$here/torch_one_rank.py" check
grep -h "^npkit:" "$out/torch_job.err" >> "$summary" 2> /dev/null
step torch_check python3 "$here/check_torch_trace.py" "$trace"
cat "$out/torch_check.out" >> "$summary" 2> /dev/null
step torch_auto env NPKIT_TRACE_DIR="$out/torch_auto_trace" LD_PRELOAD="$lib" python3 "$here/torch_one_rank.py" check
if grep -q "^npkit: GPU timing is off: PyTorch is loaded" "$out/torch_auto.err" 2> /dev/null; then
  note "ok   torch_auto_yields (CUPTI left to PyTorch's profiler by default)"
else
  note "FAIL torch_auto_yields: no 'PyTorch is loaded' line in $out/torch_auto.err"
fi

step bench_without python3 "$here/torch_one_rank.py" bench 40
step bench_with env NPKIT_TRACE_DIR="$out/bench_trace" NPKIT_JSON=0 NPKIT_CUPTI=1 LD_PRELOAD="$lib" \
  python3 "$here/torch_one_rank.py" bench 40
python3 - "$out/bench_without.out" "$out/bench_with.out" >> "$summary" 2>&1 <<'PY'
import re, sys
def read(p):
    try:
        return {int(m.group(1)): float(m.group(2)) for m in
                (re.search(r"bytes=(\d+) us=([\d.]+)", l) for l in open(p)) if m}
    except OSError:
        return {}
a, b = read(sys.argv[1]), read(sys.argv[2])
for n in sorted(set(a) & set(b)):
    print("bench all_gather %10d B: %10.2f us without, %10.2f us with the library: %.1f %% of the "
          "unprofiled bandwidth" % (n, a[n], b[n], 100 * a[n] / b[n]))
PY
note "done in $SECONDS s"
