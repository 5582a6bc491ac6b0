#!/usr/bin/env bash
# npkit_launcher.sh: runs any job launcher (mpirun, srun, torchrun, or a plain program) with
# libnpkit_preload.so preloaded into every rank and the settings given as options, then runs
# `npkit report` on the logs the job wrote.  See --help.
set -euo pipefail

me=$(basename "$0")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<EOF
Usage: $me [OPTIONS] [--] COMMAND [ARGS...]

Runs COMMAND with libnpkit_preload.so preloaded into every rank and the npkit settings below
passed to every rank, then runs 'npkit report' on the logs written by this run.
COMMAND is a launcher (mpirun/mpiexec of Open MPI, MPICH or Intel MPI; srun; torchrun) or a
plain program.  The environment reaches every rank: Open MPI gets '-x NAME=VALUE' for each
setting (mpirun itself is not preloaded), MPICH/Intel MPI '-genv NAME VALUE', srun
'--export=ALL' (or the names appended to your own --export); torchrun and plain programs inherit
the environment.  The exit status is COMMAND's.

Recording:
  --trace-dir DIR        output folder (NPKIT_TRACE_DIR; default ./npkit_trace)
  --buffer-size MB       event pool per process, 1-65536 MB (NPKIT_EVENT_BUF_SIZE)
  --ops LIST             NCCL functions to record: names, classes (coll, p2p, group, comm, mem,
                         query, misc) or all; '-' removes (NPKIT_OPS; default all,-query)
  --stack-depth N        call stack of every recorded call, N frames, 0-64 (NPKIT_STACK_DEPTH)
  --gpu-profiling-depth N
                         the same: the call-stack depth recorded with each NCCL call, 0-64
                         (NPKIT_STACK_DEPTH)
  --stack-lines          file:line in the stacks, through addr2line at exit (NPKIT_STACK_LINES=1)
  --window [A]:[B]       record from A to B: a number of collectives or a time since the first
                         NCCL call (30s, 500ms); either side may be empty (NPKIT_START_AFTER=A,
                         NPKIT_STOP_AFTER=B)
  --start-after A        NPKIT_START_AFTER alone
  --stop-after B         NPKIT_STOP_AFTER alone
  --toggle-signal SIG    a signal that pauses/resumes recording, e.g. SIGUSR2 (NPKIT_TOGGLE_SIGNAL)
  --flush-ms MS          how often the log is appended, 1-3600000 (NPKIT_FLUSH_MS)
  --no-json              binary logs only, no per-rank JSON at exit (NPKIT_JSON=0)
  --quiet                no informational npkit lines (NPKIT_QUIET=1)
  --log-level LEVEL      error, warn, info or debug (NPKIT_LOG_LEVEL)
  --nccl-library PATH    the real libnccl when the dynamic linker does not find it
                         (NPKIT_NCCL_LIBRARY)

The machine (a snapshot of host, GPUs, NVLinks, network ports and NCCL settings is always taken):
  --gpu-sample-rate US   sample every US microseconds the GPU (clocks, utilisation, power,
                         temperature, PCIe, NVLink), the network ports' byte counters and the
                         process's CPU time, 1000-3600000000, 0 = off (NPKIT_GPU_SAMPLE_RATE;
                         500000 is a good start on a DGX A100)
  --cpu-profiling-interval NS
                         sample the CPU time every NS nanoseconds instead, 1000000-3600000000000
                         (NPKIT_CPU_SAMPLE_INTERVAL)
  --sysfs-root DIR       read /sys under DIR (NPKIT_SYSFS_ROOT)
  --nvml-library PATH    NVML to load instead of libnvidia-ml.so.1 (NPKIT_NVML_LIBRARY)
  --no-machine           no snapshot, no sampling (NPKIT_MACHINE=0)

The open-file limit: the soft limit (ulimit -n) is raised to the hard one for the job, as NCCL
opens many sockets and files ("Too many open files"); the launcher says when it does.
  --env NAME=VALUE       any other variable for every rank (NCCL_PROTO=LL...); repeatable

Tools:
  --lib PATH             libnpkit_preload.so (default: found next to this script)
  --preload PATH         another library to preload into the ranks, before libnpkit_preload.so
                         (a sanitizer runtime, another tool); repeatable
  --npkit PATH           the npkit command (default: next to this script, else PATH)
  --no-report            do not run 'npkit report' at the end
  --report-html FILE     also write the report as an HTML page
  --dry-run              print the command and the variables instead of running
  -h, --help             this help

Example:
  $me --trace-dir run1 --stack-depth 8 --window 100:200 -- mpirun -np 8 ./train
EOF
}

die_usage() {
  echo "$me: $*" >&2
  echo "Try '$me --help'." >&2
  exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# A window point: a number of collectives or a time with s/ms.
is_window_point() { [[ -z $1 || $1 =~ ^[0-9]+$ || $1 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)(s|ms)$ ]]; }

check_range() { # option value lo hi
  if ! is_uint "$2" || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
    die_usage "$1 takes a whole number from $3 to $4, not '$2'"
  fi
}

need_value() { # option count-of-remaining-args
  [ "$2" -ge 2 ] || die_usage "$1 needs a value"
}

settings=()   # NAME=VALUE for every rank
extra_env=()  # --env NAME=VALUE, after the settings
lib="" npkit="" report=1 report_html="" dry_run=0 preload_first=""

add_setting() { settings+=("$1=$2"); }

while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    --) shift; break ;;
    -h|--help) usage; exit 0 ;;
    --trace-dir)
      need_value "$opt" $#; [ -n "$2" ] || die_usage "--trace-dir needs a folder"
      add_setting NPKIT_TRACE_DIR "$2"; shift 2 ;;
    --buffer-size)
      need_value "$opt" $#; check_range "$opt" "$2" 1 65536
      add_setting NPKIT_EVENT_BUF_SIZE "$2"; shift 2 ;;
    --ops)
      need_value "$opt" $#; [ -n "$2" ] || die_usage "--ops needs a list"
      [[ $2 =~ ^[A-Za-z0-9_,\ -]+$ ]] || die_usage "--ops takes names and classes separated by commas, not '$2'"
      add_setting NPKIT_OPS "$2"; shift 2 ;;
    --stack-depth|--gpu-profiling-depth)
      need_value "$opt" $#; check_range "$opt" "$2" 0 64
      add_setting NPKIT_STACK_DEPTH "$2"; shift 2 ;;
    --gpu-sample-rate)
      need_value "$opt" $#; check_range "$opt" "$2" 0 3600000000
      [ "$2" -eq 0 ] || [ "$2" -ge 1000 ] || die_usage "$opt takes 0 (off) or a number of microseconds from 1000 to 3600000000, not '$2'"
      add_setting NPKIT_GPU_SAMPLE_RATE "$2"; shift 2 ;;
    --cpu-profiling-interval)
      need_value "$opt" $#; check_range "$opt" "$2" 1000000 3600000000000
      add_setting NPKIT_CPU_SAMPLE_INTERVAL "$2"; shift 2 ;;
    --sysfs-root)
      need_value "$opt" $#; [ -d "$2" ] || die_usage "--sysfs-root: no such folder '$2'"
      add_setting NPKIT_SYSFS_ROOT "$2"; shift 2 ;;
    --nvml-library)
      need_value "$opt" $#; [ -n "$2" ] || die_usage "--nvml-library needs a path"
      add_setting NPKIT_NVML_LIBRARY "$2"; shift 2 ;;
    --no-machine) add_setting NPKIT_MACHINE 0; shift ;;
    --stack-lines) add_setting NPKIT_STACK_LINES 1; shift ;;
    --window)
      need_value "$opt" $#
      [[ $2 == *:* ]] || die_usage "--window takes START:STOP (either may be empty), not '$2'"
      a=${2%%:*} b=${2#*:}
      { is_window_point "$a" && is_window_point "$b" && [ -n "$a$b" ]; } ||
        die_usage "--window takes START:STOP, each a number of collectives or a time such as 30s or 500ms, not '$2'"
      [ -n "$a" ] && add_setting NPKIT_START_AFTER "$a"
      [ -n "$b" ] && add_setting NPKIT_STOP_AFTER "$b"
      shift 2 ;;
    --start-after|--stop-after)
      need_value "$opt" $#
      { [ -n "$2" ] && is_window_point "$2"; } ||
        die_usage "$opt takes a number of collectives or a time such as 30s or 500ms, not '$2'"
      if [ "$opt" = --start-after ]; then add_setting NPKIT_START_AFTER "$2"; else add_setting NPKIT_STOP_AFTER "$2"; fi
      shift 2 ;;
    --toggle-signal)
      need_value "$opt" $#
      sig=${2#SIG}
      case ${sig^^} in
        USR1|USR2|HUP|WINCH|URG) add_setting NPKIT_TOGGLE_SIGNAL "SIG${sig^^}" ;;
        *) die_usage "--toggle-signal takes SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH or SIGURG, not '$2'" ;;
      esac
      shift 2 ;;
    --flush-ms)
      need_value "$opt" $#; check_range "$opt" "$2" 1 3600000
      add_setting NPKIT_FLUSH_MS "$2"; shift 2 ;;
    --no-json) add_setting NPKIT_JSON 0; shift ;;
    --quiet) add_setting NPKIT_QUIET 1; shift ;;
    --log-level)
      need_value "$opt" $#
      case $2 in error|warn|info|debug) ;; *) die_usage "--log-level takes error, warn, info or debug, not '$2'" ;; esac
      add_setting NPKIT_LOG_LEVEL "$2"; shift 2 ;;
    --nccl-library)
      need_value "$opt" $#; [ -n "$2" ] || die_usage "--nccl-library needs a path"
      add_setting NPKIT_NCCL_LIBRARY "$2"; shift 2 ;;
    --env)
      need_value "$opt" $#
      [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die_usage "--env takes NAME=VALUE, not '$2'"
      [[ $2 == LD_PRELOAD=* ]] && die_usage "--env LD_PRELOAD is set by $me itself"
      extra_env+=("$2"); shift 2 ;;
    --lib)
      need_value "$opt" $#; [ -f "$2" ] || die_usage "--lib: no such file '$2'"
      lib=$2; shift 2 ;;
    --npkit)
      need_value "$opt" $#; [ -x "$2" ] || die_usage "--npkit: '$2' is not an executable"
      npkit=$2; shift 2 ;;
    --preload)
      need_value "$opt" $#; [ -f "$2" ] || die_usage "--preload: no such file '$2'"
      [[ $2 == *:* ]] && die_usage "--preload takes one library, not a list"
      preload_first+="$2:"; shift 2 ;;
    --no-report) report=0; shift ;;
    --report-html)
      need_value "$opt" $#; [ -n "$2" ] || die_usage "--report-html needs a file name"
      report_html=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -*) die_usage "unknown option '$opt'" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || die_usage "missing COMMAND (e.g. mpirun -np 8 ./train)"

# ---- the library and the tool --------------------------------------------------------------
find_first() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done; return 1; }
if [ -z "$lib" ]; then
  lib=$(find_first "$here/../lib/libnpkit_preload.so" "$here/../lib64/libnpkit_preload.so" \
        "$here"/../lib/*-linux-gnu/libnpkit_preload.so "$here/../build/src/runtime/libnpkit_preload.so") ||
    die_usage "libnpkit_preload.so not found next to this script; give --lib PATH"
fi
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
if [ -z "$npkit" ] && [ $report -eq 1 ]; then
  npkit=$(find_first "$here/npkit" "$here/../build/src/tool/npkit") || npkit=$(command -v npkit || true)
  [ -n "$npkit" ] || echo "$me: warning: the npkit command was not found (give --npkit PATH); no report at the end" >&2
fi

# after what is preloaded already and what --preload names (a sanitizer runtime must come first)
preload=${LD_PRELOAD:+$LD_PRELOAD:}$preload_first$lib
vars=("${settings[@]}" "${extra_env[@]}")
trace_dir=${NPKIT_TRACE_DIR:-./npkit_trace}
for v in "${vars[@]}"; do [[ $v == NPKIT_TRACE_DIR=* ]] && trace_dir=${v#NPKIT_TRACE_DIR=}; done

# ---- how the variables reach the ranks --------------------------------------------------------
cmd=("$@")
launcher=$(basename "$1")
kind="env"
case $launcher in
  mpirun|mpiexec|orterun|oshrun|mpiexec.hydra)
    if "$1" --version 2>&1 | grep -qi "open mpi\|open-mpi\|OpenRTE"; then kind=ompi; else kind=hydra; fi ;;
  srun) kind=slurm ;;
esac
case $kind in
  ompi)
    ins=(-x "LD_PRELOAD=$preload")
    for v in "${vars[@]}"; do ins+=(-x "$v"); done
    cmd=("$1" "${ins[@]}" "${@:2}") ;;
  hydra)
    ins=(-genv LD_PRELOAD "$preload")
    for v in "${vars[@]}"; do ins+=(-genv "${v%%=*}" "${v#*=}"); done
    cmd=("$1" "${ins[@]}" "${@:2}") ;;
  slurm)
    names=LD_PRELOAD
    for v in "${vars[@]}"; do names+=",${v%%=*}"; done
    rest=() exported=0
    for a in "${@:2}"; do
      if [[ $exported -eq 0 && $a == --export=* ]]; then rest+=("$a,$names"); exported=1; else rest+=("$a"); fi
    done
    if [ $exported -eq 1 ]; then cmd=("$1" "${rest[@]}"); else cmd=("$1" --export=ALL "${@:2}"); fi ;;
esac

# ---- the open-file limit: NCCL opens sockets and files per peer and channel ---------------------------
nofile_soft=$(ulimit -S -n) nofile_hard=$(ulimit -H -n)
nofile_raise=0
if [ "$nofile_soft" != unlimited ] && { [ "$nofile_hard" = unlimited ] || [ "$nofile_soft" -lt "$nofile_hard" ]; }; then
  nofile_raise=1
fi

if [ $dry_run -eq 1 ]; then
  echo "launcher: $kind"
  if [ $nofile_raise -eq 1 ]; then echo "open files: the soft limit $nofile_soft would be raised to $nofile_hard"
  else echo "open files: the soft limit $nofile_soft is the hard limit already"; fi
  [ "$kind" = ompi ] || [ "$kind" = hydra ] || echo "environment: LD_PRELOAD=$preload ${vars[*]}"
  printf 'command:'; printf ' %q' "${cmd[@]}"; echo
  exit 0
fi

# ---- run ---------------------------------------------------------------------------------------
mkdir -p "$trace_dir" || { echo "$me: cannot create $trace_dir" >&2; exit 1; }
stamp=$(mktemp "$trace_dir/.npkit_launch.XXXXXX")
if [ $nofile_raise -eq 1 ]; then
  if ulimit -S -n "$nofile_hard" 2>/dev/null; then
    echo "$me: raised the open-file limit (ulimit -n) from $nofile_soft to $nofile_hard for this job" >&2
  else
    echo "$me: warning: could not raise the open-file limit (ulimit -n) from $nofile_soft to $nofile_hard" >&2
  fi
fi
trap 'rm -f "$stamp"' EXIT
set +e
if [ "$kind" = ompi ] || [ "$kind" = hydra ]; then
  "${cmd[@]}" # the variables travel on the command line; the launcher itself stays unprofiled
else
  env LD_PRELOAD="$preload" "${vars[@]}" "${cmd[@]}"
fi
rc=$?
set -e

# ---- report on this run's logs -------------------------------------------------------------------
if [ $report -eq 1 ] && [ -n "$npkit" ]; then
  mapfile -t logs < <(find "$trace_dir" -maxdepth 1 -name '*.npkit' -newer "$stamp" | sort)
  if [ ${#logs[@]} -eq 0 ]; then
    echo "$me: no event log was written in $trace_dir (did the job call NCCL?)" >&2
  else
    echo
    echo "== npkit report (${#logs[@]} logs in $trace_dir)"
    rargs=()
    [ -n "$report_html" ] && rargs+=(--html "$report_html")
    "$npkit" report "${rargs[@]}" "${logs[@]}" || echo "$me: npkit report failed" >&2
  fi
fi
exit $rc
