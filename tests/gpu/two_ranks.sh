#!/usr/bin/env bash
# Two ranks of gpu_job on the one GPU of a machine, which NCCL takes for two hosts: each process has
# its own NCCL_HOSTID (NCCL 2.28 src/misc/utils.cc getHostHashOnce), so NCCL does not refuse two
# ranks of one host on one GPU (src/init.cc, "Duplicate GPU detected") and joins them through its
# socket transport on the loopback interface.  Run by device_check.sh.
#
#   two_ranks.sh DIR GPU_JOB "VAR=VALUE ..." [gpu_job options]
# DIR gets the traces (DIR/trace), each rank's stdout and stderr, NCCL's unique id.  The settings
# are given to both ranks (LD_PRELOAD=..., NCCL_PROFILER_PLUGIN=...); RANK1_OPTS, more options for
# rank 1 only (--stall-at K); KILL_AFTER=S, SIGTERM to both after S seconds (a hung job stopped as a
# launcher stops it).  Exit status: the first failed rank's, else 0.  Prints the lines of rank 0
# about npkit and NCCL's profiler plugin.
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
dir=$1 job=$2 settings=$3
shift 3
rm -rf "$dir"
mkdir -p "$dir"
pids=()
for r in 0 1; do
  # shellcheck disable=SC2086 # the settings are words on purpose
  env NCCL_HOSTID="npkit-check-host-$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_NET=Socket \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,PROFILE,TUNING NPKIT_TRACE_DIR="$dir/trace" \
    NPKIT_LOG_LEVEL=debug $settings "$job" --rank $r --nranks 2 --id-file "$dir/id" "$@" \
    $([ $r = 1 ] && echo "${RANK1_OPTS:-}") \
    > "$dir/rank$r.out" 2> "$dir/rank$r.err" &
  pids+=($!)
done
if [ -n "${KILL_AFTER:-}" ]; then
  sleep "$KILL_AFTER"
  kill -TERM "${pids[@]}" 2> /dev/null
fi
rc=0
for r in 0 1; do
  wait "${pids[$r]}" || { s=$?; [ $rc -ne 0 ] || rc=$s; }
done
grep -h "^npkit:\|gpu_job\|[Pp]rofiler" "$dir/rank0.err" | head -n 40
exit $rc
