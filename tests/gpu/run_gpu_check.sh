#!/usr/bin/env bash
# The GPU check of the CUPTI source, for a machine with an NVIDIA GPU, a driver, the CUDA toolkit
# (nvcc, CUPTI) and NCCL: builds gpu_job.cu with nvcc, runs it under the preloaded library against
# the real NCCL and CUPTI, and checks the trace (check_gpu_trace.py).  See README.md here.
#
#   tests/gpu/run_gpu_check.sh [BUILD_DIR]      (default: ./build; the library is built if missing)
#
# Environment: CUDA_HOME (/usr/local/cuda), NCCL_HOME (NCCL's prefix if not in the toolkit),
# NGPUS (1: one rank), ITERS (2), SPIN_US (2000), NVCC_ARCH (-arch=native when it works);
# GPU_JOB (a gpu_job built elsewhere: nothing is compiled, no nccl.h needed) with NCCL_LIB_DIR (the
# folder of the libnccl.so.2 to run it with).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(mkdir -p "${1:-$src/build}" && cd "${1:-$src/build}" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$cuda/bin/nvcc}
ngpus=${NGPUS:-1}
iters=${ITERS:-2}
spin_us=${SPIN_US:-2000}
say() { echo "run_gpu_check: $*" >&2; }

[ -n "${GPU_JOB:-}" ] || command -v "$nvcc" > /dev/null || { say "nvcc not found (set CUDA_HOME or NVCC)"; exit 2; }
if command -v nvidia-smi > /dev/null; then nvidia-smi -L >&2 || true; else say "no nvidia-smi: is there a GPU?"; fi

# NCCL: header and library from NCCL_HOME, the toolkit, or the system
nccl_inc="" nccl_lib="${NCCL_LIB_DIR:-}"
[ -z "${GPU_JOB:-}" ] || nccl_inc=unused
for p in ${NCCL_HOME:+"$NCCL_HOME"} "$cuda" /usr; do
  [ -z "$nccl_inc" ] && [ -f "$p/include/nccl.h" ] && nccl_inc="$p/include"
  for l in "$p/lib64" "$p/lib" "$p/lib/x86_64-linux-gnu"; do
    [ -z "$nccl_lib" ] && [ -e "$l/libnccl.so.2" ] && nccl_lib="$l"
  done
done
[ -n "$nccl_inc" ] && [ -n "$nccl_lib" ] || { say "nccl.h or libnccl.so.2 not found (set NCCL_HOME)"; exit 2; }
say "NCCL from $nccl_lib, headers $nccl_inc"

lib="$build/src/runtime/libnpkit_preload.so"
if [ ! -f "$lib" ]; then
  say "building the library in $build"
  cmake -S "$src" -B "$build" -DNPKIT_BUILD_TESTS=OFF -DNPKIT_BUILD_BENCH=OFF > /dev/null
  cmake --build "$build" -j "$(nproc)" --target npkit_preload > /dev/null
fi

out="$build/tests/gpu"
mkdir -p "$out"
job=${GPU_JOB:-$out/gpu_job}
if [ -z "${GPU_JOB:-}" ]; then
  arch=${NVCC_ARCH:-}
  if [ -z "$arch" ]; then
    arch="-arch=native"
    "$nvcc" $arch -o /dev/null -x cu - <<< '__global__ void k() {} int main() { return 0; }' 2> /dev/null \
      || arch=""   # no GPU visible to nvcc: its default architecture (PTX, compiled at load)
  fi
  say "compiling gpu_job ${arch:-(default architecture)}"
  "$nvcc" -O2 -std=c++17 $arch -o "$job" "$here/gpu_job.cu" -I"$nccl_inc" -L"$nccl_lib" -lnccl \
    -Xlinker -rpath -Xlinker "$nccl_lib"
fi

trace="$out/trace"
rm -rf "$trace"
say "running gpu_job --ngpus $ngpus --iters $iters under $lib"
set +e
env -u CUDA_INJECTION64_PATH NPKIT_TRACE_DIR="$trace" NPKIT_LOG_LEVEL=debug LD_PRELOAD="$lib" \
  LD_LIBRARY_PATH="$nccl_lib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$job" --ngpus "$ngpus" --iters "$iters" --spin-us "$spin_us" > "$out/stdout.txt" 2> "$out/stderr.txt"
rc=$?
set -e
cat "$out/stderr.txt" >&2
[ "$rc" -eq 0 ] || { say "gpu_job failed (exit status $rc)"; exit 1; }
[ ! -s "$out/stdout.txt" ] || { say "something was printed on stdout"; exit 1; }
python3 "$here/check_gpu_trace.py" "$trace" "$out/stderr.txt" "$ngpus" "$iters"
