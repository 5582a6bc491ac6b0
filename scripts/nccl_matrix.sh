#!/usr/bin/env bash
# nccl_matrix.sh: the NPKit test matrix, message sizes × operations × protocols, each cell run under
# npkit_launcher.sh, then one combined report.  See --help.
set -euo pipefail

me=$(basename "$0")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  cat <<EOF
Usage: $me [OPTIONS] -- LAUNCHER [LAUNCHER ARGS...]

Runs a benchmark for every operation × protocol (NCCL_PROTO) × algorithm (NCCL_ALGO, when --algos
is given), each run sweeping the message sizes, under npkit_launcher.sh, and writes one combined
report: per operation, protocol, algorithm and size, the calls, the median time per call and the
bandwidths (nccl-tests definitions) that 'npkit report' computes from the logs of all ranks, with
the protocol NCCL says it used where its profiler plugin reports one.  It ends with a
recommendation per operation and size range: the fastest protocol (and algorithm), by how much,
and the settings to try, as advice to test (a global NCCL_PROTO or NCCL_ALGO applies to every size).  The benchmark binaries are nccl-tests' (all_reduce_perf, ...) or anything
that takes their options -b -e -f -n -w -g.  LAUNCHER is how to start the ranks, e.g.
'mpirun -np 8'; the benchmark and its arguments are appended.

  --bench-dir DIR        folder with the benchmark binaries (required)
  --ops LIST             operations, from allreduce, allgather, reduce_scatter, broadcast, reduce,
                         alltoall, sendrecv (default allreduce,allgather,reduce_scatter)
  --protos LIST          NCCL_PROTO values, from LL, LL128, Simple (default LL,LL128,Simple)
  --algos LIST           NCCL_ALGO values to vary too, from Ring, Tree, CollNetDirect, CollNetChain,
                         NVLS, NVLSTree, PAT (default: not varied, NCCL chooses)
  --min-bytes SIZE       smallest message, with K/M/G (default 1M)
  --max-bytes SIZE       largest message (default 128M)
  --step-factor N        size multiplier between steps (default 2)
  --iters N              timed iterations per size (default 20)
  --warmup N             warm-up iterations per size (default 5)
  --out DIR              results (default ./npkit_matrix): DIR/<op>.<proto>[.<algo>]/ holds the logs,
                         traces and the benchmark's output; DIR/matrix.txt and DIR/matrix.csv the
                         table, DIR/recommendation.txt the recommendation
  --launcher PATH        npkit_launcher.sh (default: the one next to this script)
  --launcher-arg ARG     one more option for npkit_launcher.sh (e.g. --stack-depth); repeatable
  --bench-arg ARG        one more argument for the benchmark; repeatable
  --lib PATH             libnpkit_preload.so (for the launcher)
  --npkit PATH           the npkit command (for the launcher and the report)
  -h, --help             this help

Example:
  $me --bench-dir ~/nccl-tests/build --ops allreduce,allgather -- mpirun -np 8
EOF
}

die_usage() {
  echo "$me: $*" >&2
  echo "Try '$me --help'." >&2
  exit 2
}

is_size() { [[ $1 =~ ^[1-9][0-9]*[KMGkmg]?$ ]]; }
bytes_of() {
  local v=${1%[KMGkmg]}
  case $1 in *[Kk]) echo $((v << 10)) ;; *[Mm]) echo $((v << 20)) ;; *[Gg]) echo $((v << 30)) ;; *) echo "$v" ;; esac
}
need_value() { [ "$2" -ge 2 ] || die_usage "$1 needs a value"; }

bench_dir="" ops=allreduce,allgather,reduce_scatter protos=LL,LL128,Simple algos=""
min=1M max=128M factor=2 iters=20 warmup=5 out=./npkit_matrix
launcher=$here/npkit_launcher.sh lib="" npkit=""
launcher_args=() bench_args=()

while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    -h|--help) usage; exit 0 ;;
    --bench-dir) need_value "$1" $#; bench_dir=$2; shift 2 ;;
    --ops) need_value "$1" $#; ops=$2; shift 2 ;;
    --protos) need_value "$1" $#; protos=$2; shift 2 ;;
    --algos) need_value "$1" $#; [ -n "$2" ] || die_usage "--algos is empty"; algos=$2; shift 2 ;;
    --min-bytes) need_value "$1" $#; is_size "$2" || die_usage "--min-bytes takes a size such as 1M, not '$2'"; min=$2; shift 2 ;;
    --max-bytes) need_value "$1" $#; is_size "$2" || die_usage "--max-bytes takes a size such as 128M, not '$2'"; max=$2; shift 2 ;;
    --step-factor) need_value "$1" $#; [[ $2 =~ ^[0-9]+$ && $2 -ge 2 ]] || die_usage "--step-factor takes a whole number >= 2, not '$2'"; factor=$2; shift 2 ;;
    --iters) need_value "$1" $#; [[ $2 =~ ^[1-9][0-9]*$ ]] || die_usage "--iters takes a whole number >= 1, not '$2'"; iters=$2; shift 2 ;;
    --warmup) need_value "$1" $#; [[ $2 =~ ^[0-9]+$ ]] || die_usage "--warmup takes a whole number, not '$2'"; warmup=$2; shift 2 ;;
    --out) need_value "$1" $#; [ -n "$2" ] || die_usage "--out needs a folder"; out=$2; shift 2 ;;
    --launcher) need_value "$1" $#; [ -x "$2" ] || die_usage "--launcher: '$2' is not an executable"; launcher=$2; shift 2 ;;
    --launcher-arg) need_value "$1" $#; launcher_args+=("$2"); shift 2 ;;
    --bench-arg) need_value "$1" $#; bench_args+=("$2"); shift 2 ;;
    --lib) need_value "$1" $#; lib=$2; shift 2 ;;
    --npkit) need_value "$1" $#; npkit=$2; shift 2 ;;
    -*) die_usage "unknown option '$1'" ;;
    *) die_usage "unexpected '$1': the launcher command follows '--'" ;;
  esac
done
[ $# -gt 0 ] || die_usage "missing the launcher command after '--' (e.g. -- mpirun -np 8)"
[ -n "$bench_dir" ] || die_usage "--bench-dir is required"
[ -d "$bench_dir" ] || die_usage "--bench-dir: no such folder '$bench_dir'"
[ "$(bytes_of "$min")" -le "$(bytes_of "$max")" ] || die_usage "--min-bytes is larger than --max-bytes"

# operation → benchmark binary and the name npkit report gives the NCCL function
declare -A bin_of=([allreduce]=all_reduce_perf [allgather]=all_gather_perf [reduce_scatter]=reduce_scatter_perf
                   [broadcast]=broadcast_perf [reduce]=reduce_perf [alltoall]=alltoall_perf [sendrecv]=sendrecv_perf)
declare -A fn_of=([allreduce]=AllReduce [allgather]=AllGather [reduce_scatter]=ReduceScatter
                  [broadcast]=Broadcast [reduce]=Reduce [alltoall]=AlltoAll [sendrecv]="Send,Recv")
IFS=, read -r -a op_list <<< "$ops"
IFS=, read -r -a proto_list <<< "$protos"
algo_list=("")
[ -n "$algos" ] && IFS=, read -r -a algo_list <<< "$algos"
[ ${#op_list[@]} -gt 0 ] || die_usage "--ops is empty"
[ ${#proto_list[@]} -gt 0 ] || die_usage "--protos is empty"
for op in "${op_list[@]}"; do
  [ -n "${bin_of[$op]:-}" ] || die_usage "unknown operation '$op' (allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv)"
  [ -x "$bench_dir/${bin_of[$op]}" ] || die_usage "$bench_dir/${bin_of[$op]} is missing (build nccl-tests, or drop '$op' from --ops)"
done
for p in "${proto_list[@]}"; do
  case ${p,,} in ll|ll128|simple) ;; *) die_usage "unknown protocol '$p' (LL, LL128, Simple)" ;; esac
done
for a in "${algo_list[@]}"; do
  case ${a,,} in ""|ring|tree|collnetdirect|collnetchain|nvls|nvlstree|pat) ;;
    *) die_usage "unknown algorithm '$a' (Ring, Tree, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT)" ;; esac
done
if [ -z "$npkit" ]; then
  for f in "$here/npkit" "$here/../build/src/tool/npkit"; do [ -x "$f" ] && { npkit=$f; break; }; done
  [ -n "$npkit" ] || npkit=$(command -v npkit || true)
  [ -n "$npkit" ] || die_usage "the npkit command was not found; give --npkit PATH"
fi
tool_args=(--npkit "$npkit")
[ -n "$lib" ] && tool_args+=(--lib "$lib")

mkdir -p "$out"
failed=0
cells=()
for op in "${op_list[@]}"; do
  for proto in "${proto_list[@]}"; do
   for algo in "${algo_list[@]}"; do
    cell="$out/$op.$proto${algo:+.$algo}"
    rm -rf "$cell"
    mkdir -p "$cell"
    echo "== $op, NCCL_PROTO=$proto${algo:+, NCCL_ALGO=$algo}, $min to $max"
    algo_env=()
    [ -n "$algo" ] && algo_env=(--env "NCCL_ALGO=$algo")
    set +e
    "$launcher" "${tool_args[@]}" --no-report --quiet --trace-dir "$cell" --env "NCCL_PROTO=$proto" "${algo_env[@]}" \
      "${launcher_args[@]}" -- "$@" "$bench_dir/${bin_of[$op]}" -b "$min" -e "$max" -f "$factor" \
      -n "$iters" -w "$warmup" -g 1 "${bench_args[@]}" > "$cell/bench.out" 2> "$cell/bench.err"
    rc=$?
    set -e
    if [ $rc -ne 0 ]; then
      echo "$me: $op with NCCL_PROTO=$proto${algo:+ NCCL_ALGO=$algo} failed (exit $rc); see $cell/bench.err" >&2
      failed=1
      continue
    fi
    if ! "$npkit" report --json "$cell" > "$cell/report.json" 2> "$cell/report.err"; then
      echo "$me: npkit report failed for $cell; see $cell/report.err" >&2
      failed=1
      continue
    fi
    cells+=("$op|$proto|$algo|${fn_of[$op]}|$cell/report.json")
   done
  done
done

# ---- the combined report ------------------------------------------------------------------------
python3 - "$out" "$(bytes_of "$min")" "$(bytes_of "$max")" "${cells[@]}" <<'EOF'
import csv, json, sys

out, lo, hi, cells = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rows = []
for cell in cells:
    op, proto, algo, fns, path = cell.split("|", 4)
    fns = fns.split(",")
    with open(path) as f:
        rep = json.load(f)
    for r in rep.get("collectives", []):
        if r.get("op") not in fns or not lo <= (r.get("bytes") or 0) <= hi:
            continue
        rows.append({"op": op, "nccl_proto": proto, "nccl_algo": algo, "function": r["op"], "bytes": r["bytes"],
                     "nranks": r.get("nranks"), "calls": r.get("calls"),
                     "time_p50_us": r.get("time_p50_us"), "algbw_gbs": r.get("algbw_gbs"),
                     "busbw_gbs": r.get("busbw_gbs"), "protocol_seen": r.get("protocol") or ""})
rows.sort(key=lambda r: (r["op"], r["nccl_proto"], r["nccl_algo"], r["function"], r["bytes"]))
varied_algo = any(r["nccl_algo"] for r in rows)
keys = ["op", "nccl_proto"] + (["nccl_algo"] if varied_algo else []) + [
        "function", "bytes", "nranks", "calls", "time_p50_us", "algbw_gbs", "busbw_gbs", "protocol_seen"]
with open(out + "/matrix.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)

def num(v, fmt):
    return "-" if v is None else fmt % v

def setting(r):
    return r["nccl_proto"] + ("/" + r["nccl_algo"] if r["nccl_algo"] else "")

lines = ["%-15s %-18s %-14s %12s %6s %8s %12s %10s %10s  %s" % (
    "op", "proto" + ("/algo" if varied_algo else ""), "function", "bytes", "ranks", "calls", "p50 (us)", "algbw",
    "busbw", "protocol seen")]
for r in rows:
    lines.append("%-15s %-18s %-14s %12d %6s %8s %12s %10s %10s  %s" % (
        r["op"], setting(r), r["function"], r["bytes"], num(r["nranks"], "%d"), num(r["calls"], "%d"),
        num(r["time_p50_us"], "%.2f"), num(r["algbw_gbs"], "%.3f"), num(r["busbw_gbs"], "%.3f"),
        r["protocol_seen"] or "-"))
text = "\n".join(lines) + "\n"


# ---- the recommendation: per operation and size, the fastest setting and by how much --------------
def size_text(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def env_of(r):
    return "NCCL_PROTO=" + r["nccl_proto"] + (" NCCL_ALGO=" + r["nccl_algo"] if r["nccl_algo"] else "")


by_size = {}
for r in rows:
    if r["time_p50_us"] is not None and r["time_p50_us"] > 0:
        by_size.setdefault((r["op"], r["function"]), {}).setdefault(r["bytes"], []).append(r)
rec = ["== recommendation: the fastest setting per operation and size range (median time per call)",
       "%-15s %-14s %-22s %-18s %s" % ("op", "function", "sizes", "fastest", "by")]
winners = set()
for (op, fn), sizes in sorted(by_size.items()):
    ranges = []
    for b in sorted(sizes):
        cells = sorted(sizes[b], key=lambda r: r["time_p50_us"])
        if len(cells) < 2:
            continue
        best, runner = cells[0], cells[1]
        ratio = runner["time_p50_us"] / best["time_p50_us"]
        if ranges and ranges[-1]["best"] == setting(best) and ranges[-1]["last"] == prev:
            ranges[-1].update(last=b)
            ranges[-1]["ratios"].append(ratio)
            ranges[-1]["runners"].add(setting(runner))
        else:
            ranges.append({"best": setting(best), "env": env_of(best), "first": b, "last": b, "ratios": [ratio],
                           "runners": {setting(runner)}})
        prev = b
    for g in ranges:
        span = size_text(g["first"]) if g["first"] == g["last"] else "%s - %s" % (size_text(g["first"]), size_text(g["last"]))
        lo, hi = min(g["ratios"]), max(g["ratios"])
        by = ("%.2fx" % lo if abs(hi - lo) < 0.005 else "%.2fx-%.2fx" % (lo, hi))
        rec.append("%-15s %-14s %-22s %-18s %s faster than %s (next best); try %s" % (
            op, fn, span, g["best"], by, ", ".join(sorted(g["runners"])), g["env"]))
        winners.add(g["env"])
if len(rec) == 2:
    rec.append("  (no operation ran with two or more settings: nothing to compare)")
rec.append("This is advice to test, not a promise: NCCL_PROTO and NCCL_ALGO are global, they apply to every size and "
           "every collective of the job.")
if len(winners) > 1:
    rec.append("The fastest setting changes with the operation or the size here: one global setting would slow the "
               "other sizes. Leave NCCL's own choice unless one setting wins at every size your job uses, and compare "
               "with a run without NCCL_PROTO/NCCL_ALGO before fixing one.")
elif winners:
    rec.append("%s was the fastest at every size measured: worth a run of the job with it, against a run without it "
               "(NCCL's own choice)." % next(iter(winners)))
rec_text = "\n".join(rec) + "\n"
with open(out + "/matrix.txt", "w") as f:
    f.write(text)
with open(out + "/recommendation.txt", "w") as f:
    f.write(rec_text)
print()
print("== combined report (%s/matrix.txt, %s/matrix.csv, %s/recommendation.txt)" % (out, out, out))
sys.stdout.write(text + "\n" + rec_text)
EOF
exit $failed
