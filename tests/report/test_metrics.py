"""`npkit metrics DIR -o OUT`: the collectives of synthetic logs as NCCL Inspector's JSON lines
and Prometheus textfiles (src/metrics).  Read as the Inspector's own reader does (one JSON object per line, keys in
the Inspector's order, no key in two of the objects of a line: perf_summary_exporter.py drops a
file that has one), and checked against the report's nccl-tests table of the same logs: the same
calls per operation, size and communicator, the same mean time, and every line's bandwidths
recomputed here with the nccl-tests factors."""

import collections
import json
import os
import unittest

import metrics_read as mr
import report_testlib as rt
from report_testlib import lib

HEADER = ["id", "comm_name", "rank", "n_ranks", "nnodes"]
METADATA = ["inspector_output_format_version", "git_rev", "rec_mechanism", "dump_timestamp_us", "hostname", "pid"]
COLL = ["coll", "coll_algo", "coll_proto", "coll_sn", "coll_msg_size_bytes", "coll_exec_time_us",
        "coll_timing_source", "coll_algobw_gbs", "coll_busbw_gbs"]
STATS = ["coll_records", "coll_dropped_total", "coll_dropped_since_last_dump", "p2p_records", "p2p_dropped_total",
         "p2p_dropped_since_last_dump"]
FACTOR = {"AllReduce": lambda n: 2 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
          "ReduceScatter": lambda n: (n - 1) / n, "Broadcast": lambda n: 1, "Reduce": lambda n: 1}


def ordered(pairs):
    return pairs  # keep the order and the duplicates: the test checks both


def read_lines(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            assert line.endswith("\n") and " " not in line.replace("npkit-preload ", ""), line
            out.append(json.loads(line, object_pairs_hook=ordered))
    return out


class Metrics(lib.TempDirTestCase):

    def test_inspector_lines(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 9, "--hosts", 3, "--offset", "1:2500000", "--iters", 20, "--sizes", "4096,65536,1048576",
               "--gpu", "--period", 1000000, "--plugin", "RING:SIMPLE", "--subcomm")
        out = self.path("metrics")
        run = rt.tool("metrics", d, "-o", out)
        self.assertEqual(run.rc, 0, run.describe())
        logs = sorted(f for f in os.listdir(d) if f.endswith(".npkit"))
        files = sorted(f for f in os.listdir(out) if f.endswith(".log"))
        self.assertEqual(len(files), len(logs))
        self.assertEqual(len([f for f in os.listdir(out) if f.endswith(".prom")]), len(logs))
        per_row = collections.defaultdict(list)    # (op, comm id, S) -> exec times
        sources, algos = collections.defaultdict(set), collections.defaultdict(set)
        for name in files:
            host, pid = name[:-len(".log")].rsplit("-pid", 1)
            lines = read_lines(os.path.join(out, name))
            self.assertTrue(lines)
            i = 0
            while i < len(lines):
                line = lines[i]
                self.assertEqual([k for k, _ in line], ["header", "metadata", "dump_stats"])
                head, meta, stats = (dict(v) for _, v in line)
                self.assertEqual([k for k, _ in line[0][1]], HEADER)
                self.assertEqual([k for k, _ in line[1][1]], METADATA)
                self.assertEqual([k for k, _ in line[2][1]], STATS)
                self.assertEqual((meta["hostname"], meta["pid"], meta["inspector_output_format_version"]),
                                 (host, int(pid), "v4.2"))
                self.assertEqual(stats["coll_dropped_total"], 0)
                n = stats["coll_records"]
                body = lines[i + 1:i + 1 + n]
                self.assertEqual(len(body), n)
                last_sn = -1
                for b in body:
                    self.assertEqual([k for k, _ in b], ["header", "metadata", "coll_perf"])
                    keys = [k for _, obj in b for k, _ in obj]
                    self.assertEqual(len(keys), len(set(keys)), "a key in two objects: the exporter drops the file")
                    self.assertEqual(dict(b[0][1]), head)
                    c = dict(b[2][1])
                    self.assertEqual([k for k, _ in b[2][1]], COLL)
                    self.assertGreater(c["coll_sn"], last_sn)
                    last_sn = c["coll_sn"]
                    sources[(c["coll"], head["id"], c["coll_msg_size_bytes"])].add(c["coll_timing_source"])
                    algos[(c["coll"], head["id"], c["coll_msg_size_bytes"])].add((c["coll_algo"], c["coll_proto"]))
                    us, size, nr = c["coll_exec_time_us"], c["coll_msg_size_bytes"], head["n_ranks"]
                    algbw = size / 1e9 / (us / 1e6) if us > 0 else 0.0
                    self.assertAlmostEqual(c["coll_algobw_gbs"], algbw, places=5)
                    self.assertAlmostEqual(c["coll_busbw_gbs"], algbw * FACTOR[c["coll"]](nr), places=5)
                    per_row[(c["coll"], head["id"], size)].append(us)
                i += 1 + n
        # the report's table of the same logs: every timed call is a line, times agree
        rep = rt.report_json(self, d)
        self.assertEqual(len(per_row), len(rep["collectives"]))
        for row in rep["collectives"]:
            got = per_row[(row["op"], row["comm_id"], row["bytes"])]
            self.assertEqual(len(got), row["timed_calls"], row)
            key = (row["op"], row["comm_id"], row["bytes"])
            self.assertEqual(sources[key], {{"gpu": "kernel_gpu", "cpu": "collective_cpu"}[row["time_source"]]}, row)
            self.assertEqual(algos[key], {(row["algorithm"] or "unknown", row["protocol"] or "unknown")}, row)
            # lines hold whole microseconds (the Inspector's integer division)
            self.assertLessEqual(abs(sum(got) / len(got) - row["time_mean_us"]), 1.0, row)

    def test_prometheus_files(self):
        """Every .prom file is read by promtool (only the Inspector's own metric names draw its
        lint) and by the Python client; its buckets are the Inspector's (size ranges, mean time,
        geometric mean of busbw) of the same process's JSON lines, and the npkit_* counters are the
        report's calls per communicator."""
        if mr.promtool() is None:
            self.skipTest("promtool (Debian's prometheus) is not installed: scripts/packages.txt")
        d = self.path("logs")
        rt.gen(d, "--ranks", 6, "--hosts", 2, "--iters", 12, "--sizes", "3000,65536,5000000", "--gpu",
               "--plugin", "TREE:LL128", "--subcomm")
        out = self.path("metrics")
        run = rt.tool("metrics", d, "-o", out)
        self.assertEqual(run.rc, 0, run.describe())
        # promtool really reads: a damaged file is an error, not a lint
        rc, problems = mr.promtool_check("nccl_bus_bandwidth_gbs{node=\"a\" 1\n")
        self.assertEqual(rc, 1, problems)
        per_comm = collections.Counter()
        proms = sorted(f for f in os.listdir(out) if f.endswith(".prom"))
        self.assertEqual(len(proms), 6)
        for name in proms:
            with open(os.path.join(out, name), encoding="utf-8") as f:
                text = f.read()
            rc, problems = mr.promtool_check(text)
            self.assertIn(rc, (0, 3), problems)
            self.assertTrue(set(problems) <= mr.INSPECTOR_LINT, problems)
            fams = mr.prom_families(text)
            self.assertEqual(fams["nccl_bus_bandwidth_gbs"][0], "gauge")
            host_pid = name[len("npkit_metrics_"):-len(".prom")]
            ops, _ = mr.ops_of(mr.inspector_lines(os.path.join(out, host_pid + ".log")))
            want = mr.buckets(ops)
            got = mr.prom_buckets(fams)
            self.assertEqual(set(got), set(want))
            for k, (us, bw) in want.items():
                self.assertAlmostEqual(got[k][0], us, delta=us * 1e-5 + 1e-9)   # %.6g
                self.assertAlmostEqual(got[k][1], bw, delta=bw * 1e-5 + 1e-9)
            # labels the Inspector's dashboards select on, for every sample
            for lab, _ in fams["nccl_bus_bandwidth_gbs"][1]:
                self.assertTrue({"node", "gpu", "comm_name", "n_nodes", "nranks", "collective", "message_size",
                                 "algo_proto", "slurm_job_id"} <= set(lab), lab)
                self.assertEqual(lab["n_nodes"], "2" if lab["comm_name"] == "world" else lab["n_nodes"])
            counters = fams.get("npkit_collectives") or fams["npkit_collectives_total"]
            self.assertEqual(counters[0], "counter")
            for lab, v in counters[1]:
                per_comm["0x" + lab["comm_id"].lstrip("0")] += v
        rep = rt.report_json(self, d)
        want = collections.Counter()
        for row in rep["collectives"]:
            want["0x" + row["comm_id"][2:].lstrip("0")] += row["timed_calls"]
        self.assertEqual(per_comm, want)

    def test_bad_use(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 2, "--iters", 2)
        run = rt.tool("metrics", d)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("-o OUTDIR is required", run.stderr)
        blocker = self.path("file")
        open(blocker, "w").close()
        run = rt.tool("metrics", d, "-o", os.path.join(blocker, "x"))
        self.assertEqual(run.rc, 1, run.describe())


if __name__ == "__main__":
    unittest.main()
