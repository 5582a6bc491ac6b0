#!/usr/bin/env bash
# finish_bench.sh BUILD [DIR] [EVENTS...]: how long a process takes to finish its trace after
# SIGTERM, for logs of EVENTS events (default 100000 1000000 10000000).
#
# Runs BUILD/tests/runtime/signal_victim --calls EVENTS under the library against the fake NCCL in
# no-op mode (FAKE_NCCL_NOOP=1: the calls cost nothing, so that even 10 million are made quickly),
# sends SIGTERM once it has made its calls, and reports the library's own account of the finish
# (NPKIT_LOG_LEVEL=debug: "the log was closed after X ms, the trace written after Y ms", measured
# from the signal), the time until the process ended, and the sizes of the log and the trace.
# DIR (default /tmp) holds the output; each run's files are removed after it.
set -euo pipefail
build=${1:?usage: finish_bench.sh BUILD [DIR] [EVENTS...]}
dir=${2:-/tmp}
shift $(( $# >= 2 ? 2 : 1 ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000 10000000)
victim=$build/tests/runtime/signal_victim
lib=$build/src/runtime/libnpkit_preload.so
[ -x "$victim" ] && [ -f "$lib" ] || { echo "finish_bench.sh: build $build first" >&2; exit 1; }
printf '%-10s %12s %14s %10s %10s %10s\n' events "log closed" "trace written" "exited" "log MB" "trace MB"
for n in "${sizes[@]}"; do
  work=$(mktemp -d "$dir/finish_bench.XXXXXX")
  # a pool large enough that nothing is dropped while the calls run as fast as they can
  LD_PRELOAD=$lib LD_LIBRARY_PATH=$build/tests/fakes FAKE_NCCL_NOOP=1 NPKIT_TRACE_DIR=$work/trace \
    NPKIT_EVENT_BUF_SIZE=2048 NPKIT_LOG_LEVEL=debug \
    "$victim" --ready "$work/ready" --calls "$n" 2> "$work/err" &
  pid=$!
  while [ ! -e "$work/ready" ]; do sleep 0.05; done
  sleep 1 # the writer has streamed the calls: the finish is what a long job's would be
  t0=$(date +%s%N)
  kill -TERM $pid
  wait $pid || true
  t1=$(date +%s%N)
  line=$(grep -o 'closed after [0-9.]* ms, the trace written after [0-9.]* ms' "$work/err" || true)
  closed=$(echo "$line" | awk '{print $3}')
  written=$(echo "$line" | awk '{print $9}')
  log_mb=$(du -m "$work"/trace/*.npkit | awk '{print $1}')
  trace_mb=$(du -m "$work"/trace/*.json 2>/dev/null | awk '{print $1}')
  printf '%-10s %9s ms %11s ms %7d ms %10s %10s\n' "$n" "${closed:-?}" "${written:-?}" $(((t1 - t0) / 1000000)) \
    "$log_mb" "${trace_mb:-none}"
  grep "were dropped\|warning" "$work/err" >&2 || true
  rm -rf "$work"
done
