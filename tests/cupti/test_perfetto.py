"""Perfetto's protobuf trace (src/trace/trace_sink_perfetto.c) read by two readers that are not
the writer: this suite's own decoder (tests/integration/perfetto_read.py, with the rules Perfetto's
trace processor enforces) and `protoc` (--decode_raw, and --decode with the field numbers and
types of Perfetto's schema), and compared with the Chrome JSON of the same logs: the same slices
per rank and per track (names, categories, times and every argument), the same instants, counter
values and flows (call -> kernel), every track described before use, every interned id defined
on its sequence, slices nested per track.

The logs: a job of the fake NCCL and CUPTI (profiler-plugin channels and proxy lanes, GPU streams,
CUDA graphs, marks, call stacks) writing both traces at exit (NPKIT_TRACE_FORMAT=both); the
synthetic GPU log of every shape (gpu_log.c: a group's kernel, a graph replay, 310 streams); a
synthetic job of 64 ranks on 4 hosts, merged (`npkit merge --format perfetto`)."""

import collections
import glob
import json
import os
import subprocess
import unittest

import cupti_testlib as ct
from cupti_testlib import lib
import perfetto_read as pr

NP = 2


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def decode(test, path):
    with open(path, "rb") as f:
        t = pr.PerfettoTrace(f.read())
    test.assertEqual(t.problems, [], path)
    p = pr.protoc_problems(path)
    if p is None:
        raise unittest.SkipTest("protoc is not installed (scripts/packages.txt: protobuf-compiler)")
    test.assertEqual(p, [], path)
    return t


class Perfetto(lib.TempDirTestCase):

    def both(self, log, stem):
        """`npkit json` of the log in both formats: the decoded Perfetto trace and the JSON."""
        outs = {}
        for fmt in ("json", "perfetto"):
            outs[fmt] = self.path("%s.%s" % (stem, fmt))
            res = lib.run_tool(["json", log, "--format", fmt, "-o", outs[fmt]])
            self.assertEqual(res.rc, 0, res.describe())
        return decode(self, outs["perfetto"]), load_json(outs["json"])

    def assertSame(self, t, trace, base_ns=None, min_slices=1, min_flows=0):
        diffs = pr.compare_with_json(t, trace, base_ns)
        self.assertEqual(diffs, [], "\n".join(diffs))
        self.assertGreaterEqual(pr.compare_with_json.slices_compared, min_slices)
        self.assertGreaterEqual(pr.compare_with_json.flows_compared, min_flows)

    def test_job_writes_both_at_exit(self):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti(), "NPKIT_TRACE_FORMAT": "both",
             "NPKIT_STACK_DEPTH": "8", "FAKE_NCCL_NET": "1"}
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "2", "--marks", "--compute-us", "2000"], NP,
                          settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.warnings, [], run.describe())
        for r in range(NP):
            js = glob.glob(os.path.join(trace_dir, "npkit_rank%d_*.json" % r))
            pf = glob.glob(os.path.join(trace_dir, "npkit_rank%d_*.pftrace" % r))
            self.assertEqual((len(js), len(pf)), (1, 1), os.listdir(trace_dir))
            self.assertEqual(pf[0][:-len(".pftrace")], js[0][:-len(".json")])
            # the exit line names both
            line = [l for l in run.npkit_lines if "rank %d: wrote" % r in l]
            self.assertEqual(len(line), 1, run.describe())
            self.assertIn("wrote %s and %s (" % (js[0], pf[0]), line[0])
            t = decode(self, pf[0])
            j = load_json(js[0])
            self.assertSame(t, j, min_slices=50, min_flows=5)
            kinds = collections.Counter(tr["kind"] for tr in t.tracks.values())
            self.assertEqual(kinds["process"], 1)
            # host threads are threads; GPU streams, channels and proxy lanes are tracks of their own
            names = {tr.get("name"): tr["kind"] for tr in t.tracks.values()}
            self.assertTrue(any(k == "thread" for k in names.values()), names)
            for n, k in names.items():
                if n and (n.startswith("GPU ") or "channel" in n or "proxy" in n):
                    self.assertEqual(k, "custom", n)
            self.assertTrue(any(n and n.startswith("GPU ") for n in names), names)
            # the call stacks are arguments of the calls
            self.assertTrue(any("stack" in e["args"] for e in t.events if e["cat"] == "nccl_api"))
            # npkit json --format perfetto renders the log to the same bytes
            log = glob.glob(os.path.join(trace_dir, "npkit_*%s.npkit" % os.path.basename(js[0]).split("_")[-1][:-5]))
            self.assertEqual(len(log), 1, os.listdir(trace_dir))
            out = self.path("again%d.pftrace" % r)
            res = lib.run_tool(["json", log[0], "-o", out])
            self.assertEqual(res.rc, 0, res.describe())
            with open(out, "rb") as a, open(pf[0], "rb") as b:
                self.assertEqual(a.read(), b.read())
        # the merge of the job, both ways
        mj, mp = self.path("m.json"), self.path("m.pftrace")
        for out in (mj, mp):
            res = lib.run_tool(["merge", trace_dir, "-o", out])
            self.assertEqual(res.rc, 0, res.describe())
            self.assertIn("npkit merge: %s: 2 ranks" % out, res.stderr)
        j = load_json(mj)
        t = decode(self, mp)
        self.assertSame(t, j, int(j["otherData"]["base_ns"]), min_slices=100, min_flows=10)
        self.assertEqual(sorted(tr["pid"] for tr in t.tracks.values() if tr["kind"] == "process"), [1, 2])
        self.assertLess(os.path.getsize(mp), os.path.getsize(mj))

    def test_every_gpu_shape(self):
        gen = lib.need_file(lib.need_env("NPKIT_GPU_LOG"), "gpu_log")
        log = self.path("gpu.npkit")
        subprocess.run([gen, log], check=True, capture_output=True)
        t, j = self.both(log, "gpu")
        # the call and the group (the group's kernel from ncclGroupEnd) have their arrows; 310 streams
        self.assertSame(t, j, min_slices=300, min_flows=2)
        flows = [(s["name"], s["flow_ids"]) for s in t.slices if s["flow_ids"]]
        self.assertEqual(sorted(n for n, _ in flows), ["ncclAllReduce", "ncclGroupEnd"], flows)

    def test_graph_replays(self):
        # a CUDA graph's kernels get their arrow from the call captured into it (inside the call,
        # not at its middle), only the Perfetto trace written at exit
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti(), "NPKIT_TRACE_FORMAT": "perfetto"}
        run = ct.run_job(["--iters", "2", "--graph"], np=NP, settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(glob.glob(os.path.join(trace_dir, "*.json")), [])
        for pf in sorted(glob.glob(os.path.join(trace_dir, "*.pftrace"))):
            log = glob.glob(pf.rsplit("_", 1)[0].replace("npkit_rank0_", "npkit_").replace("npkit_rank1_", "npkit_")
                            + "_" + pf.rsplit("_", 1)[1][:-len(".pftrace")] + ".npkit")
            self.assertEqual(len(log), 1, (pf, os.listdir(trace_dir)))
            out = self.path(os.path.basename(pf) + ".json")
            res = lib.run_tool(["json", log[0], "-o", out])
            self.assertEqual(res.rc, 0, res.describe())
            t = decode(self, pf)
            j = load_json(out)
            graph = [e for e in j["traceEvents"] if e["ph"] == "X" and "graph_id" in e.get("args", {})]
            self.assertGreaterEqual(len(graph), ct.GRAPH_REPLAYS, "no graph replays in %s" % out)
            self.assertSame(t, j, min_slices=20, min_flows=len(graph))
        # a process stopped before its trace: the next npkit command renders the format it meant
        pf = sorted(glob.glob(os.path.join(trace_dir, "*.pftrace")))[0]
        with open(pf, "rb") as f:
            whole = f.read()
        os.remove(pf)
        res = lib.run_tool(["merge", trace_dir, "-o", self.path("m.pftrace")])
        self.assertEqual(res.rc, 0, res.describe())
        self.assertIn("rendered %s from its log" % pf, res.stderr)
        self.assertEqual(glob.glob(os.path.join(trace_dir, "*.json")), [])
        with open(pf, "rb") as f:
            self.assertEqual(f.read(), whole)

    def test_bad_setting(self):
        trace_dir = self.path("trace")
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "1"], 1,
                          settings={"NPKIT_TRACE_DIR": trace_dir, "NPKIT_TRACE_FORMAT": "protobuf"}, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.warnings, ["npkit: warning: NPKIT_TRACE_FORMAT='protobuf' is not one of json, perfetto, "
                                        "both; using json"], run.describe())
        self.assertEqual(len(glob.glob(os.path.join(trace_dir, "*.json"))), 1)
        self.assertEqual(glob.glob(os.path.join(trace_dir, "*.pftrace")), [])

    def test_merge_of_64_ranks(self):
        gen = lib.need_file(lib.need_env("NPKIT_GEN_REPORT_LOGS"), "gen_report_logs")
        d = self.path("logs")
        subprocess.run([gen, d, "--ranks", "64", "--hosts", "4", "--offset", "1:1500000", "--offset", "3:-700000",
                        "--gpu", "--period", "1000000", "--sizes", "65536,1048576", "--plugin", "RING:SIMPLE",
                        "--iters", "3", "--stacks", "3", "--drop", "5:10"], check=True, capture_output=True)
        mj, mp = self.path("m.json"), self.path("m.perfetto-trace")
        for out in (mj, mp):
            res = lib.run_tool(["merge", d, "-o", out])
            self.assertEqual(res.rc, 0, res.describe())
        res = lib.run_tool(["merge", d, "--format", "json", "-o", self.path("x.pftrace.gz")])
        self.assertEqual(res.rc, 2, res.describe())
        j = load_json(mj)
        t = decode(self, mp)
        self.assertSame(t, j, int(j["otherData"]["base_ns"]), min_slices=64 * 12)
        procs = [tr for tr in t.tracks.values() if tr["kind"] == "process"]
        self.assertEqual(sorted(p["pid"] for p in procs), list(range(1, 65)))
        # every process named as in the JSON, with its labels
        jn = {e["pid"]: e["args"]["name"] for e in j["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual({p["pid"]: p.get("name") for p in procs}, jn)
        # the byte count bench/perfetto_bench.sh prints: its parts add up to the file, and the
        # annotations take at least 6 bytes each (tag, length, name id, value's tag and value)
        with open(mp, "rb") as f:
            data = f.read()
        parts = pr.bytes_by_part(data)
        self.assertEqual(sum(parts.values()), len(data))
        n_args = sum(len(e["args"]) for e in t.events)
        self.assertGreater(n_args, 64 * 12)
        self.assertGreaterEqual(parts["annotations"], 6 * n_args)
        stamped = sum(1 for e in t.events)
        self.assertGreaterEqual(parts["timestamps"], 2 * stamped)

    def test_odd_names(self):
        # quotes, newlines, bytes that are not UTF-8 and empty strings in a log's names and notes
        # (the fuzz seed tests/fuzz/seeds/odd_names.spec): valid UTF-8, the same text as the JSON's
        seed = os.path.join(lib.need_env("NPKIT_BUILD_DIR"), "tests", "fuzz", "seeds", "odd_names.npkit")
        lib.need_file(seed, "the fuzz seed odd_names.npkit")
        t, j = self.both(seed, "odd")
        self.assertSame(t, j, min_slices=4)
        notes = sorted(e["args"]["message"] for e in t.events if e["name"] == "npkit warning" or e["name"] == "npkit error")
        self.assertEqual(notes, ["", 'a"b\nc\ufffdd'])
        procs = [tr["name"] for tr in t.tracks.values() if tr["kind"] == "process"]
        self.assertEqual(procs, ['rank 0 \u00b7 no"de\n1:4343 \u00b7 GPU 0'])

    def test_format_and_name_must_agree(self):
        gen = lib.need_file(lib.need_env("NPKIT_GPU_LOG"), "gpu_log")
        log = self.path("gpu.npkit")
        subprocess.run([gen, log], check=True, capture_output=True)
        res = lib.run_tool(["json", log, "--format", "json", "-o", self.path("x.pftrace")])
        self.assertEqual(res.rc, 2, res.describe())
        self.assertIn("--format json, but the output name %s is Perfetto's" % self.path("x.pftrace"), res.stderr)
        res = lib.run_tool(["json", log, "--format", "protobuf"])
        self.assertEqual(res.rc, 2, res.describe())
        self.assertIn("unknown --format 'protobuf' (json or perfetto)", res.stderr)
        self.assertFalse(os.path.exists(self.path("x.pftrace")))
        # the default names follow the format
        res = lib.run_tool(["json", log, "--format", "perfetto"])
        self.assertEqual(res.rc, 0, res.describe())
        decode(self, self.path("gpu.pftrace"))

if __name__ == "__main__":
    unittest.main()
