"""Independent readers of the files of live metrics (src/metrics): NCCL Inspector's JSON lines as
its exporter reads them, Prometheus textfiles through promtool and the Python client's parser,
and the Inspector's size buckets and means recomputed from the JSON lines."""

import collections
import glob
import json
import math
import os
import shutil
import subprocess
import sys

# The Inspector's metric names, kept for its dashboards although promtool's lint prefers seconds
INSPECTOR_LINT = {
    'nccl_collective_exec_time_microseconds use base unit "seconds" instead of "microseconds"',
    'nccl_p2p_exec_time_microseconds use base unit "seconds" instead of "microseconds"',
}


def prometheus_parser():
    """prometheus_client.parser, from Debian's python3-prometheus-client also when the tests run
    under another interpreter than /usr/bin/python3."""
    try:
        from prometheus_client import parser
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        from prometheus_client import parser
    return parser


def promtool():
    return shutil.which("promtool")


def promtool_check(text):
    """(exit status, problems): 0 clean, 3 lint problems only, 1 a file it cannot parse."""
    p = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [line.strip() for line in (p.stdout + p.stderr).splitlines() if line.strip()]
    return p.returncode, problems


def no_dup_pairs(pairs):
    return pairs


def inspector_lines(path):
    """The lines of one Inspector file, each as [(key, [(key, value)...])...] in file order."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            assert line.endswith("\n"), path
            out.append(json.loads(line, object_pairs_hook=no_dup_pairs))
    return out


def ops_of(lines):
    """{(comm id, kind, op, peer, sn): perf dict} and [(comm id, dump_stats dict, dump time)]."""
    ops, stats = {}, []
    for line in lines:
        kind = line[2][0]
        head, meta, body = dict(line[0][1]), dict(line[1][1]), dict(line[2][1])
        if kind == "dump_stats":
            stats.append((head["id"], body, meta["dump_timestamp_us"]))
            continue
        if kind == "coll_perf":
            key = (head["id"], kind, body["coll"], None, body["coll_sn"])
        else:
            key = (head["id"], kind, body["p2p"], body["p2p_peer"], body["p2p_sn"])
        assert key not in ops, key
        ops[key] = dict(body, _head=head)
    return ops, stats


def folder_ops(d):
    """{file name: ops_of(...)} of every Inspector file of a folder."""
    return {os.path.basename(p): ops_of(inspector_lines(p)) for p in sorted(glob.glob(os.path.join(d, "*.log")))}


def size_range(n):
    """inspectorPromFormatMessageSizeRange (NVIDIA/nccl plugins/profiler/inspector/inspector_prom.cc)."""
    if n == 0:
        return "0B"
    units, v, i = ["B", "KB", "MB", "GB", "TB"], float(n), 0
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    lo = max(1, math.floor(max(v, 1.0)))
    return "%d-%d%s" % (lo, lo + 1, units[i])


def buckets(ops):
    """The Inspector's Prometheus buckets of one process's operations: mean time, geometric mean
    of the bus bandwidths."""
    acc = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])
    for (cid, kind, op, _peer, _sn), b in ops.items():
        head = b["_head"]
        if kind == "coll_perf":
            key = ("coll", head["comm_name"], op, size_range(b["coll_msg_size_bytes"]),
                   "%s_%s" % (b["coll_algo"], b["coll_proto"]))
            us, bw = b["coll_exec_time_us"], b["coll_busbw_gbs"]
        else:
            key = ("p2p", head["comm_name"], op, size_range(b["p2p_msg_size_bytes"]), None)
            us, bw = b["p2p_exec_time_us"], b["p2p_busbw_gbs"]
        a = acc[key]
        a[0] += 1
        a[1] += us
        if bw > 0:
            a[2] += math.log(bw)
            a[3] += 1
    return {k: (a[1] / a[0], math.exp(a[2] / a[3]) if a[3] else 0.0) for k, a in acc.items()}


def prom_families(text):
    """{metric name: (type, [(labels, value)...])} through the Python client's parser."""
    out = {}
    for fam in prometheus_parser().text_string_to_metric_families(text):
        out[fam.name] = (fam.type, [(s.labels, s.value) for s in fam.samples])
    return out


def prom_buckets(fams):
    """{bucket key: (mean time, busbw)} from the nccl_* families of one textfile."""
    out = {}
    for kind, tname, bname, oplabel in (("coll", "nccl_collective_exec_time_microseconds", "nccl_bus_bandwidth_gbs",
                                         "collective"),
                                        ("p2p", "nccl_p2p_exec_time_microseconds", "nccl_p2p_bus_bandwidth_gbs",
                                         "p2p_operation")):
        times = {key_of(kind, oplabel, lab): v for lab, v in fams.get(tname, (None, []))[1]}
        bws = {key_of(kind, oplabel, lab): v for lab, v in fams.get(bname, (None, []))[1]}
        assert set(times) == set(bws), (times, bws)
        for k in times:
            out[k] = (times[k], bws[k])
    return out


def key_of(kind, oplabel, lab):
    return (kind, lab["comm_name"], lab[oplabel], lab["message_size"], lab.get("algo_proto") if kind == "coll" else None)
