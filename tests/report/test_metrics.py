"""`npkit metrics DIR -o OUT`: the collectives of synthetic logs as NCCL Inspector's JSON lines
and Prometheus textfiles (src/metrics).  Read as the Inspector's own reader does (one JSON object per line, keys in
the Inspector's order, no key in two of the objects of a line: perf_summary_exporter.py drops a
file that has one), and checked against the report's nccl-tests table of the same logs: the same
calls per operation, size and communicator, the same mean time, and every line's bandwidths
recomputed here with the nccl-tests factors."""

import collections
import json
import os
import shutil
import socket
import subprocess
import time
import unittest
import urllib.request

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
          "ReduceScatter": lambda n: (n - 1) / n, "Broadcast": lambda n: 1, "Bcast": lambda n: 1, "Reduce": lambda n: 1,
          "AlltoAll": lambda n: (n - 1) / n, "Gather": lambda n: (n - 1) / n, "Scatter": lambda n: (n - 1) / n}


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

    def test_node_exporter_scrape(self):
        """node_exporter's textfile collector serves the folder `npkit metrics` wrote: a scrape over
        loopback returns every process's npkit_* and nccl_* samples, with no textfile error."""
        exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
        if exporter is None:
            self.skipTest("prometheus-node-exporter is not installed: scripts/packages.txt")
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--hosts", 2, "--iters", 5, "--sizes", "4096,1048576", "--gpu", "--plugin", "RING:SIMPLE")
        out = self.path("metrics")
        run = rt.tool("metrics", d, "-o", out)
        self.assertEqual(run.rc, 0, run.describe())
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen([exporter, "--web.listen-address=127.0.0.1:%d" % port, "--collector.disable-defaults",
                              "--collector.textfile", "--collector.textfile.directory=" + out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.wait, 10)
        self.addCleanup(p.terminate)
        body, deadline = None, time.time() + 20
        while body is None and time.time() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.1)
        self.assertIsNotNone(body, "node_exporter did not answer: %s" % (p.stderr.read() if p.poll() is not None else ""))
        fams = mr.prom_families(body)
        self.assertEqual([v for _, v in fams["node_textfile_scrape_error"][1]], [0.0])
        counters = fams.get("npkit_collectives") or fams["npkit_collectives_total"]
        self.assertEqual(sorted(lab["rank"] for lab, _ in counters[1]), ["0", "1", "2", "3"])
        self.assertEqual(sum(v for _, v in counters[1]), 4 * 5 * 2)
        served = {mr.key_of("coll", "collective", lab) + (lab["rank"],) for lab, _ in fams["nccl_bus_bandwidth_gbs"][1]}
        self.assertEqual(len(served), 4 * 2)

    def test_min_bytes(self):
        """--min-bytes N (NPKIT_METRICS_MIN_BYTES live; the Inspector's
        NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES): operations of fewer bytes are not lines nor buckets,
        and are counted per communicator instead, as many as the report's calls below N."""
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--hosts", 2, "--iters", 6, "--sizes", "3000,65535,65536,1048576", "--gpu",
               "--plugin", "RING:SIMPLE", "--subcomm")
        out = self.path("metrics")
        run = rt.tool("metrics", d, "-o", out, "--min-bytes", 65536)
        self.assertEqual(run.rc, 0, run.describe())
        rep = rt.report_json(self, d)
        written = lambda row: row["bytes"] // (row["nranks"] if row["op"] in ("AllGather", "ReduceScatter") else 1)
        want_lines, want_small = collections.Counter(), collections.Counter()
        for row in rep["collectives"]:
            cid = "0x" + row["comm_id"][2:].lstrip("0")
            if written(row) >= 65536:
                want_lines[(row["op"], cid, written(row))] += row["timed_calls"]
            else:
                want_small[cid] += row["calls"]
        self.assertGreater(sum(want_small.values()), 0)
        got_lines, got_small = collections.Counter(), collections.Counter()
        for name in os.listdir(out):
            if name.endswith(".log"):
                ops, stats = mr.ops_of(mr.inspector_lines(os.path.join(out, name)))
                for (cid, kind, op, _, _), b in ops.items():
                    got_lines[(op, "0x" + cid[2:].lstrip("0"), b["coll_msg_size_bytes"])] += 1
                self.assertEqual(sum(st["coll_records"] for _, st, _ in stats), len(ops))
            elif name.endswith(".prom"):
                with open(os.path.join(out, name), encoding="utf-8") as f:
                    text = f.read()
                fams = mr.prom_families(text)
                for lab, v in (fams.get("npkit_collectives_below_min") or fams["npkit_collectives_below_min_total"])[1]:
                    got_small["0x" + lab["comm_id"].lstrip("0")] += v
                # the Inspector's buckets hold the written lines only
                ops, _ = mr.ops_of(mr.inspector_lines(os.path.join(out, name[len("npkit_metrics_"):-len(".prom")] + ".log")))
                self.assertEqual(set(mr.prom_buckets(fams)), set(mr.buckets(ops)))
                if mr.promtool():
                    rc, problems = mr.promtool_check(text)
                    self.assertTrue(rc in (0, 3) and set(problems) <= mr.INSPECTOR_LINT, problems)
        self.assertEqual(got_lines, +want_lines)
        self.assertEqual(got_small, +want_small)
        self.assertIn("%d operations of fewer than 65536 bytes left out" % sum(want_small.values()), run.stderr)
        # without the option nothing is left out and no such counter is written
        run = rt.tool("metrics", d, "-o", self.path("all"), "-f", "prometheus")
        self.assertEqual(run.rc, 0, run.describe())
        for name in os.listdir(self.path("all")):
            with open(os.path.join(self.path("all"), name), encoding="utf-8") as f:
                self.assertNotIn("below_min", f.read())

    def test_bad_use(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 2, "--iters", 2)
        run = rt.tool("metrics", d)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("-o OUTDIR is required", run.stderr)
        for bad in ("-1", "8k", "", "99999999999999999999999"):
            run = rt.tool("metrics", d, "-o", self.path("m"), "--min-bytes", bad)
            self.assertEqual(run.rc, 2, run.describe())
            self.assertIn("--min-bytes takes a whole number of bytes", run.stderr)
        blocker = self.path("file")
        open(blocker, "w").close()
        run = rt.tool("metrics", d, "-o", os.path.join(blocker, "x"))
        self.assertEqual(run.rc, 1, run.describe())


class LiveJob(lib.TempDirTestCase):
    """NPKIT_METRICS under the real mpirun: nccl_mix on 4 ranks with the fake NCCL, one dump a
    second.  The files written while the job ran equal, line for line, what `npkit metrics` writes
    from the logs afterwards; their counts are the report's and the journal's."""

    NP = 4

    def job(self, settings):
        fake = os.path.join(lib.need_env("NPKIT_FAKES_DIR"), "libcupti.so.13")
        if not os.path.exists(fake):
            self.skipTest("the fake CUPTI (tests/fakes_cupti) is not built")
        trace, live, journal = self.path("trace"), self.path("live"), self.path("journal")
        s = {"NPKIT_TRACE_DIR": trace, "NPKIT_METRICS": "inspector,prometheus", "NPKIT_METRICS_DIR": live,
             "NPKIT_METRICS_INTERVAL_S": "1", "NPKIT_CUPTI_LIBRARY": fake}
        s.update(settings)
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "30", "--delay-rank", "1", "--delay-us", "30000",
                                       "--journal", journal], self.NP, settings=s)
        self.assertRunOk(run)
        self.assertIn("metrics: ", run.stderr)
        after = self.path("after")
        r = rt.tool("metrics", trace, "-o", after)
        self.assertEqual(r.rc, 0, r.describe())
        return trace, live, after, journal

    def check_live_equals_after(self, live, after):
        got, want = mr.folder_ops(live), mr.folder_ops(after)
        self.assertEqual(sorted(got), sorted(want))
        self.assertEqual(len(got), self.NP)
        dumps = 0
        for name, (ops, stats) in got.items():
            # a process knows its communicators' node count from NCCL's profiler plugin only (0:
            # unknown); the tool counts the hosts of the logs
            for k, b in ops.items():
                if b["_head"]["nnodes"] == 0:
                    self.assertGreaterEqual(want[name][0][k]["_head"].pop("nnodes"), 1)
                    b["_head"].pop("nnodes")
            self.assertEqual(ops, want[name][0], name)
            # per communicator, the dumps' records add up to its lines, drops to the last total
            for cid in {s[0] for s in stats}:
                mine = [s for c, s, _ in stats if c == cid]
                self.assertEqual(sum(s["coll_records"] for s in mine), sum(1 for k in ops if k[0] == cid and k[1] == "coll_perf"))
                self.assertEqual(sum(s["p2p_records"] for s in mine), sum(1 for k in ops if k[0] == cid and k[1] == "p2p_perf"))
                self.assertEqual(sum(s["coll_dropped_since_last_dump"] for s in mine), mine[-1]["coll_dropped_total"])
            dumps = max(dumps, len({t for _, _, t in stats}))
        self.assertGreaterEqual(dumps, 2, "the job ran for seconds: dumps came while it ran")
        return got

    def check_prom(self, live, got):
        for name, (ops, _) in got.items():
            with open(os.path.join(live, "npkit_metrics_" + name[:-len(".log")] + ".prom"), encoding="utf-8") as f:
                text = f.read()
            if mr.promtool():
                rc, problems = mr.promtool_check(text)
                self.assertTrue(rc in (0, 3) and set(problems) <= mr.INSPECTOR_LINT, problems)
            fams = mr.prom_families(text)
            for fam, kind in (("npkit_collectives", "coll_perf"), ("npkit_p2p", "p2p_perf")):
                for lab, v in (fams.get(fam) or fams[fam + "_total"])[1]:
                    self.assertEqual(v, sum(1 for k in ops if k[0] == "0x" + lab["comm_id"].lstrip("0") and k[1] == kind))

    def check_arrivals(self, live, after, rep):
        """What a rank alone cannot know is in the files of `npkit metrics` only: per process the
        collectives it arrived last at and the time it waited for the last rank, per communicator
        the largest arrival spread and who arrived last there, as the report's straggler table."""
        by_rank = {r["rank"]: r for r in rep["stragglers"]["ranks"]}
        top = rep["stragglers"]["largest"][0]
        seen_top = 0
        for path in sorted(os.listdir(after)):
            if not path.endswith(".prom"):
                continue
            with open(os.path.join(after, path), encoding="utf-8") as f:
                fams = mr.prom_families(f.read())
            (lab, last), = (fams.get("npkit_arrived_last") or fams["npkit_arrived_last_total"])[1]
            r = by_rank[int(lab["rank"])]
            self.assertEqual(last, r["last"])
            (_, waited), = (fams.get("npkit_wait_for_last_seconds") or fams["npkit_wait_for_last_seconds_total"])[1]
            self.assertAlmostEqual(waited, r["waited_us"] / 1e6, delta=1e-6)
            spreads = {s_lab["comm_id"]: v for s_lab, v in fams["npkit_arrival_spread_max_seconds"][1]}
            lasts = {s_lab["comm_id"]: v for s_lab, v in fams["npkit_arrival_last_rank"][1]}
            key = top["comm_id"][2:].rjust(16, "0")
            if key in spreads:
                seen_top += 1
                self.assertAlmostEqual(spreads[key], top["spread_us"] / 1e6, delta=1e-6)
                self.assertEqual(lasts[key], top["last_rank"])
        self.assertGreater(seen_top, 0)
        for path in os.listdir(live):
            if path.endswith(".prom"):
                with open(os.path.join(live, path), encoding="utf-8") as f:
                    self.assertNotIn("npkit_arrived_last_total", f.read())

    def per_row(self, got):
        rows = collections.defaultdict(list)
        for ops, _ in got.values():
            for (cid, kind, op, _, _), b in ops.items():
                if kind != "coll_perf":
                    continue
                n = b["_head"]["n_ranks"]
                size = b["coll_msg_size_bytes"] * (n if op in ("AllGather", "ReduceScatter") else 1)
                rows[(op, int(cid, 16), size)].append(b)
        return rows

    def test_plugin_and_cupti(self):
        trace, live, after, journal = self.job({})
        got = self.check_live_equals_after(live, after)
        self.check_prom(live, got)
        rows = self.per_row(got)
        timed = collections.Counter()   # the report's rows are per root as well
        for row in rt.report_json(self, trace)["collectives"]:
            if row["op"] not in ("Send", "Recv"):
                timed[(row["op"], int(row["comm_id"], 16), row["bytes"])] += row["timed_calls"]
        self.assertEqual({k: len(v) for k, v in rows.items()}, +timed)
        # every Send/Recv is a line: NCCL's P2p tasks time them inside their groups
        for r in range(self.NP):
            calls = [c for c in lib.Journal("%s.rank%d" % (journal, r)).calls if c.fn in ("ncclSend", "ncclRecv")]
            lines = [(k, b) for ops, _ in got.values() for k, b in ops.items()
                     if k[1] == "p2p_perf" and b["_head"]["rank"] == r and b["_head"]["n_ranks"] == self.NP]
            self.assertEqual(len(lines), len(calls), r)
            self.assertEqual(sorted((k[2], k[3]) for k, _ in lines), sorted((c.fn[4:], c.get("peer")) for c in calls))
            self.assertTrue(all(b["p2p_timing_source"] == "kernel_gpu" and b["p2p_busbw_gbs"] == b["p2p_algobw_gbs"]
                                for _, b in lines))

    def test_cupti_only_matches_the_report(self):
        # without the plugin the GPU times are CUPTI's kernels, as the report's: same calls, same
        # time source, same mean time per operation and size, bandwidths recomputed here
        trace, live, after, _ = self.job({"NPKIT_PLUGIN": "0"})
        got = self.check_live_equals_after(live, after)
        rows = self.per_row(got)
        self.check_arrivals(live, after, rt.report_json(self, trace))
        # the calls without a time (enqueued in a group whose one kernel CUPTI gave to the group)
        # are the report's untimed calls, counted in each communicator's dump_stats, never lost
        dropped = collections.Counter()
        for ops, stats in got.values():
            last = {}
            for cid, st, _ in stats:
                last[cid] = st
            for cid, st in last.items():
                dropped[(int(cid, 16), "coll")] += st["coll_dropped_total"]
                dropped[(int(cid, 16), "p2p")] += st["p2p_dropped_total"]
        untimed = collections.Counter()
        for row in rt.report_json(self, trace)["collectives"]:
            untimed[(int(row["comm_id"], 16), "p2p" if row["op"] in ("Send", "Recv") else "coll")] += row["untimed_calls"]
        self.assertEqual(+dropped, +untimed)
        self.assertGreater(sum(untimed.values()), 0)
        merged = {}   # the report's rows are per root as well: merged here
        for row in rt.report_json(self, trace)["collectives"]:
            key = (row["op"], int(row["comm_id"], 16), row["bytes"])
            m = merged.setdefault(key, dict(row, timed_calls=0, time_mean_us=0.0, _sources=set()))
            m["time_mean_us"] += (row["time_mean_us"] or 0.0) * row["timed_calls"]
            m["timed_calls"] += row["timed_calls"]
            if row["timed_calls"]:
                m["_sources"].add(row["time_source"])
        for key, row in merged.items():
            lines = rows.pop(key, [])
            self.assertEqual(len(lines), row["timed_calls"], row)
            if not lines:
                continue
            row["time_mean_us"] /= row["timed_calls"]
            self.assertEqual({b["coll_timing_source"] for b in lines},
                             {{"gpu": "kernel_gpu", "cpu": "collective_cpu"}[t] for t in row["_sources"]}, row)
            mean = sum(b["coll_exec_time_us"] for b in lines) / len(lines)
            self.assertLessEqual(abs(mean - row["time_mean_us"]), 1.0, row)
            for b in lines:
                us, n = b["coll_exec_time_us"], b["_head"]["n_ranks"]
                traffic = row["bytes"]
                algbw = traffic / 1e9 / (us / 1e6) if us else 0.0
                self.assertAlmostEqual(b["coll_algobw_gbs"], algbw, places=5)
                self.assertAlmostEqual(b["coll_busbw_gbs"], algbw * FACTOR[row["op"]](n), places=5)
        self.assertEqual(rows, {})


if __name__ == "__main__":
    unittest.main()
