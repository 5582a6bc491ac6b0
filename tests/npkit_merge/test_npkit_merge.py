#!/usr/bin/env python3
"""NPKit dumps merged into the process traces by the preloaded library.

npkit_merge_job runs under mpirun against the fake NCCL, which writes NPKit dumps like a patched
NCCL (FAKE_NCCL_NPKIT, see tests/fakes/README.md).  Every test reads the dump files with its own
reader (npkit_files.py) and checks the traces against it in exact nanoseconds: each NPKit pair and
single event with its name, times, size, rsvd or slot, sequence number and bandwidth, the tracks,
that the events fall inside the NCCL calls that launched them, the counts of unpaired events, and
the messages for what a dump lacks.
"""
import decimal
import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.environ.get("NPKIT_SOURCE_DIR", ""), "tests", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npkit_testlib as lib  # noqa: E402
import npkit_files  # noqa: E402

ITERS = 3
# Settings of the library and the fake that must come only from the test.
OWN_SETTINGS = ("NPKIT_DUMP_DIR", "NPKIT_DUMP_HEADER", "NPKIT_DUMP_MAX_MB", "FAKE_NCCL_NPKIT",
                "FAKE_NCCL_NPKIT_SYNC", "FAKE_NCCL_NPKIT_LOSE", "FAKE_NCCL_NPKIT_KHZ")
# Outermost kind of each operation on GPU buffer 0, and what launched it.
TOP_KINDS = ("ALL_REDUCE_RING", "COPY_SEND", "SEND_RECV_SEND", "SEND_RECV_RECV")
TRACK = re.compile(r"^NPKit(?: rank (\d+) ·)? (GPU buf|net channel) (\d+)(?: · lane (\d+))?( · unaligned)?$")


def run_job(tmp, settings, args=(), np=2, nccl="old"):
    """npkit_merge_job on np processes; returns (run, dump folder, trace folder)."""
    dump = os.path.join(tmp, "dump")
    traces = os.path.join(tmp, "trace")
    os.makedirs(dump, exist_ok=True)
    job_settings = {"NPKIT_TRACE_DIR": traces, "NPKIT_DUMP_DIR": dump}
    job_settings.update(settings)
    env = {k: v for k, v in os.environ.items()
           if k not in lib.LIBRARY_SETTINGS and k not in OWN_SETTINGS}
    env.pop("LD_PRELOAD", None)
    cmd = [lib.mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    for name, value in sorted(lib.job_env(nccl, True, job_settings).items()):
        cmd += ["-x", "%s=%s" % (name, value)]
    cmd += [lib.need_file(lib.need_env("NPKIT_MERGE_JOB"), "npkit_merge_job")] + list(args)
    return lib._run(cmd, env, tmp, 180), dump, traces


def milli_gbps(size, dur):
    return decimal.Decimal(npkit_files.div_round(size * 1000, dur)) / 1000


class TraceNPKit:
    """The NPKit events of one process trace, in the form npkit_files.Expected uses."""

    def __init__(self, test, trace):
        self.trace = trace
        self.names = trace.thread_names()
        self.pairs, self.singles, self.reads, self.tracks = [], [], [], {}
        for e in trace.events:
            cat, ph = e.get("cat"), e.get("ph")
            if e.get("name") == "NPKit dump read":
                self.reads.append(e)
                continue
            if cat not in ("npkit_gpu", "npkit_cpu", "npkit_unpaired"):
                continue
            a = e["args"]
            source = "gpu" if "buffer" in a else "cpu"
            common = dict(rank=a["rank"], source=source, buffer=a["buffer" if source == "gpu" else "channel"],
                          name=e["name"], size=a["size"], rsvd=a["rsvd" if source == "gpu" else "slot"],
                          unaligned=a.get("unaligned", False))
            self.tracks.setdefault(e["tid"], []).append((e, common))
            if ph == "X":
                start, end = trace.start_ns(e), trace.end_ns(e)
                test.assertEqual(cat, "npkit_" + source, e)
                if end > start:
                    test.assertEqual(a["bandwidth_gbps"], milli_gbps(a["size"], end - start), e)
                else:
                    test.assertNotIn("bandwidth_gbps", a, e)
                self.pairs.append(dict(common, start=start, end=end, entry_size=a.get("entry_size", a["size"]),
                                       entry_rsvd=a.get("entry_rsvd", 0), seq=a["seq"]))
            else:
                test.assertEqual((ph, e["s"]), ("i", "t"), e)
                what = a.get("unpaired", "point")
                test.assertEqual(cat == "npkit_unpaired", what != "point", e)
                self.singles.append(dict(common, ns=trace.start_ns(e), what=what))

    def read_total(self, key):
        return sum(r["args"][key] for r in self.reads)


def key(d):
    return tuple(sorted(d.items()))


class NPKitMergeTest(lib.TempDirTestCase):

    # --- checks shared by the tests ------------------------------------------------------------

    def assertSameEvents(self, expected, got, what):
        exp, act = sorted(map(key, expected)), sorted(map(key, got))
        if exp != act:
            missing = [dict(e) for e in exp if e not in act][:5]
            extra = [dict(a) for a in act if a not in exp][:5]
            self.fail("%s differ: %d expected, %d in the trace\nmissing: %r\nunexpected: %r"
                      % (what, len(exp), len(act), missing, extra))

    def check_tracks(self, tn, multi_rank):
        """Every event on a track named after its rank, buffer or channel; slices of a track nest."""
        for tid, evs in tn.tracks.items():
            name = tn.names.get(tid, "")
            m = TRACK.match(name)
            self.assertIsNotNone(m, "track %d is named %r" % (tid, name))
            self.assertEqual(m.group(1) is not None, multi_rank, name)
            for e, c in evs:
                if m.group(1) is not None:
                    self.assertEqual(int(m.group(1)), c["rank"], (name, e))
                self.assertEqual(m.group(2), "GPU buf" if c["source"] == "gpu" else "net channel", (name, e))
                self.assertEqual(int(m.group(3)), c["buffer"], (name, e))
                self.assertEqual(m.group(5) is not None, c["unaligned"], (name, e))
                if c["source"] == "cpu":
                    self.assertIsNotNone(m.group(4), name)
            slices = sorted(((tn.trace.start_ns(e), -tn.trace.end_ns(e)) for e, _ in evs if e["ph"] == "X"))
            stack = []
            for start, neg_end in slices:
                while stack and stack[-1] <= start:
                    stack.pop()
                self.assertTrue(not stack or -neg_end <= stack[-1], "slices overlap on track %r" % name)
                stack.append(-neg_end)

    def check_inside_calls(self, tn, ranks, local):
        """Each operation's events lie inside the call that launched it: ncclAllReduce or
        ncclBroadcast alone, ncclGroupEnd for the send/recv ring and for all calls with two ranks
        per process; each launching call holds one operation per rank."""
        api = tn.trace.api()
        launching = [e for e in api if e["name"] in ("ncclAllReduce", "ncclBroadcast", "ncclGroupEnd")]
        self.assertGreater(len(launching), 0)
        spans = [(tn.trace.start_ns(e), tn.trace.end_ns(e), e) for e in launching]

        def container(start, end):
            found = [c for c in spans if c[0] <= start and end <= c[1]]
            self.assertEqual(len(found), 1, "%d calls hold [%d, %d]" % (len(found), start, end))
            return found[0][2]

        tops = {}
        for p in tn.pairs:
            if p["unaligned"]:
                continue
            c = container(p["start"], p["end"])
            if p["source"] == "gpu" and p["buffer"] == 0 and p["name"] in TOP_KINDS:
                tops.setdefault((id(c), p["rank"]), []).append(p["name"])
        for s in tn.singles:
            if s["unaligned"]:
                continue
            c = container(s["ns"], s["ns"])
            if s["source"] == "gpu" and s["buffer"] == 0 and s["name"][:-len("_ENTRY")] in TOP_KINDS:
                tops.setdefault((id(c), s["rank"]), []).append(s["name"][:-len("_ENTRY")])
        by_call = {id(e): e for e in launching}
        patterns = {}
        for (cid, rank), names in tops.items():
            call = by_call[cid]["name"]
            names = tuple(sorted(names))
            if local == 1 and call != "ncclGroupEnd":
                self.assertEqual(names, {"ncclAllReduce": ("ALL_REDUCE_RING",),
                                         "ncclBroadcast": ("COPY_SEND",)}[call])
            self.assertIn(names, (("ALL_REDUCE_RING",), ("COPY_SEND",), ("SEND_RECV_RECV", "SEND_RECV_SEND")))
            patterns.setdefault(rank, []).append(names)
        for rank in ranks:
            self.assertEqual(sorted(patterns.get(rank, [])),
                             sorted([("ALL_REDUCE_RING",), ("COPY_SEND",), ("SEND_RECV_RECV", "SEND_RECV_SEND")]
                                    * ITERS), "operations of rank %d" % rank)

    def check_process(self, trace, dump, ranks, table=None, local=1, files_of=None):
        """The process holding `ranks` stored exactly what its dump files say."""
        exp = npkit_files.Expected(table or npkit_files.builtin_table())
        listing = npkit_files.list_dump(dump, ranks)
        self.assertEqual(sorted(listing), sorted(ranks), "dump files of ranks %r" % ranks)
        for r in ranks:
            exp.add_rank(listing[r], files_of(listing[r]) if files_of else None)
        tn = TraceNPKit(self, trace)
        self.assertGreater(len(exp.pairs), 10 * len(ranks))
        self.assertSameEvents(exp.pairs, tn.pairs, "NPKit pairs")
        self.assertSameEvents(exp.singles, tn.singles, "NPKit single events")
        self.assertEqual(tn.read_total("pairs"), len(exp.pairs))
        self.assertEqual(tn.read_total("unpaired_entries"), exp.unpaired("entry"))
        self.assertEqual(tn.read_total("unpaired_exits"), exp.unpaired("exit"))
        self.assertEqual(tn.read_total("point_events"), exp.unpaired("point"))
        self.assertEqual(tn.read_total("unknown_ids"), exp.unknown)
        self.check_tracks(tn, multi_rank=local > 1)
        return exp, tn

    def shared_findings(self, traces):
        """The report's findings about NPKit's one state per process."""
        r = lib.run_tool(["report", traces, "--json"])
        self.assertEqual(r.rc, 0, r.describe())
        return [f for f in json.loads(r.stdout)["findings"] if f["kind"] == "npkit_shared_state"]

    def notes(self, trace, level=None):
        return [e["args"]["message"] for e in trace.events
                if e.get("cat") == "npkit" and e.get("ph") == "i" and e["name"].startswith("npkit ")
                and (level is None or e["args"]["level"] == level)]

    # --- the tests -----------------------------------------------------------------------------

    def test_destroy(self):
        """Two processes, one rank each, dumps with a lost EXIT and a lost ENTRY; a previous job's
        file and another rank's file in the folder are left alone."""
        dump = self.path("dump")
        os.makedirs(dump)
        rec = npkit_files.struct.pack("<QQ", 0x1 | 64 << 8, 5) + npkit_files.struct.pack("<QQ", 0x2 | 64 << 8, 9)
        for name in ("gpu_events_rank_0_buf_600", "gpu_events_rank_7_buf_0"):
            with open(os.path.join(dump, name), "wb") as f:
                f.write(rec)
        for clock, value in (("gpu_clock_rate", 1000000), ("cpu_clock_period_num", 1),
                             ("cpu_clock_period_den", 1000000000)):
            with open(os.path.join(dump, "%s_rank_7" % clock), "w") as f:
                f.write(str(value))
        hour_ago = time.time() - 3600
        os.utime(os.path.join(dump, "gpu_events_rank_0_buf_600"), (hour_ago, hour_ago))
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1", "FAKE_NCCL_NPKIT_LOSE": "1"},
                                    ["--iters", str(ITERS)])
        self.assertRunOk(run)
        traces = lib.load_traces(traces, expect=2)
        for r, t in traces.items():
            exp, tn = self.check_process(t, dump, [r], files_of=lambda rd: [f for f in rd.files if f[1] != 600])
            self.assertEqual((exp.unpaired("entry"), exp.unpaired("exit")), (1, 1))
            self.assertFalse([p for p in tn.pairs if p["buffer"] == 600 or p["rank"] != r])
            self.check_inside_calls(tn, [r], 1)
            self.assertEqual(len(tn.reads), 1, "read once, after ncclCommDestroy")
            read = tn.reads[0]
            self.assertEqual((read["ph"], read["args"]["trigger"]), ("X", "ncclCommDestroy"))
            self.assertEqual(read["args"]["dump_dir"], dump)
            self.assertRegex(read["args"]["comm"], r"^comm [0-9a-f]{8} \(rank %d/2\)$" % r)
            destroy = [e for e in t.api() if e["name"] == "ncclCommDestroy"]
            self.assertEqual(len(destroy), 1)
            self.assertEqual(read["tid"], destroy[0]["tid"])
            self.assertGreaterEqual(t.start_ns(read), t.end_ns(destroy[0]))
            self.assertEqual(read["args"]["files"], 5)  # GPU buffers 0, 1, 16 and channels 0, 1
            self.assertTrue(any("1 ENTRY events without their EXIT" in m for m in self.notes(t, "warning")))
            self.assertEqual(t.other["dropped"], 0)
        self.assertIn("npkit: NPKit dump of rank 0 merged", run.stderr)

    def test_two_ranks_per_process(self):
        """Each process holds two ranks at once.  NPKit's one state per process holds the GPU
        events of the rank set up last and the network events of both, and only the first destroy
        dumps it: the library reads that dump once (under the other rank's name), flags the
        reading and says why once."""
        run, dump, traces_dir = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1"},
                                        ["--ranks-per-process", "2", "--iters", str(ITERS)], nccl="fake")
        self.assertRunOk(run)
        traces = lib.load_traces(traces_dir, expect=2)
        for p, t in traces.items():
            ranks = [2 * p, 2 * p + 1]
            dumped = sorted(npkit_files.list_dump(dump, ranks))
            self.assertEqual(len(dumped), 1, "one dump per process, of the rank set up last: %r" % dumped)
            last = dumped[0]
            exp, tn = self.check_process(t, dump, [last], local=1 if last == p else 2)
            self.check_inside_calls(tn, [last], 2)
            self.assertEqual({pr["rank"] for pr in tn.pairs}, {last})
            self.assertTrue([pr for pr in tn.pairs if pr["source"] == "cpu"])
            self.assertEqual(len(tn.reads), 1, "the second destroy finds nothing new")
            read = tn.reads[0]
            self.assertEqual((read["args"]["trigger"], read["args"]["files"]), ("ncclCommDestroy", 5))
            self.assertIs(read["args"].get("shared_state"), True)
            destroys = [e for e in t.api() if e["name"] == "ncclCommDestroy"]
            self.assertEqual(len(destroys), 2)
            self.assertGreaterEqual(t.start_ns(read), t.end_ns(destroys[0]))
            self.assertLess(t.start_ns(read), t.start_ns(destroys[1]))
            shared = [m for m in self.notes(t, "warning") if "communicators at once" in m]
            self.assertEqual(len(shared), 1, self.notes(t))
            self.assertIn("held 2 communicators at once", shared[0])
            self.assertIn("(rank %d)" % last, shared[0])
            self.assertIn("one communicator per process", shared[0])
        self.assertEqual(run.stderr.count("communicators at once"), 2, run.stderr)
        found = self.shared_findings(traces_dir)
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0]["title"], "NPKit dumps of 2 processes may mix communicators")
        self.assertIsNone(found[0]["time_at_stake_us"])
        self.assertNotIn("rank", found[0])
        self.assertIn("one communicator per process", found[0]["next_step"])

    def test_one_communicator_at_a_time(self):
        """Communicators one after the other each get a fresh NPKit state: every destroy dumps its
        own, nothing is flagged."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1"},
                                    ["--iters", "1", "--comms", "2"], nccl="fake")
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            tn = TraceNPKit(self, t)
            self.assertEqual(len(tn.reads), 2)
            self.assertFalse([x for x in tn.reads if "shared_state" in x["args"]])
            self.assertFalse([m for m in self.notes(t) if "communicators at once" in m])
        self.assertEqual(self.shared_findings(traces), [])

    def test_missing_time_sync(self):
        """Without TIME_SYNC events GPU times cannot be aligned: a clear warning, and the events
        placed from the start of the recording, flagged and on their own tracks."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1", "FAKE_NCCL_NPKIT_SYNC": "0"},
                                    ["--iters", str(ITERS)])
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            exp, tn = self.check_process(self.shift(t), dump, [r])
            gpu = [p for p in tn.pairs if p["source"] == "gpu"]
            self.assertTrue(gpu and all(p["unaligned"] for p in gpu))
            self.assertTrue(all(not p["unaligned"] for p in tn.pairs if p["source"] == "cpu"))
            self.assertEqual(tn.read_total("time_sync_cpu"), 0)
            msgs = [m for m in self.notes(t, "warning") if "TIME_SYNC_CPU" in m]
            self.assertEqual(len(msgs), 1, self.notes(t))
            self.assertIn("-DENABLE_NPKIT_EVENT_TIME_SYNC_CPU", msgs[0])
            self.assertIn("cannot be put on the host clock", msgs[0])
            unaligned_tracks = [n for n in tn.names.values() if n.endswith(" · unaligned")]
            self.assertIn("NPKit GPU buf 0 · unaligned", unaligned_tracks)
        self.assertIn("-DENABLE_NPKIT_EVENT_TIME_SYNC_CPU", run.stderr)

    @staticmethod
    def shift(trace):
        """Unaligned events are stored at the log's clock base + their ns since the rank's first GPU
        event: in the trace base_ns is that clock base, so ts alone is the ns of the reader."""
        class Shifted:
            def __init__(self, t):
                self.__dict__.update(t.__dict__)
                self._t = t

            def start_ns(self, e):
                return self._t.start_ns(e) - (self.base_ns if e.get("args", {}).get("unaligned") else 0)

            def end_ns(self, e):
                return self._t.end_ns(e) - (self.base_ns if e.get("args", {}).get("unaligned") else 0)

            def thread_names(self):
                return self._t.thread_names()

            def api(self, tid=None):
                return self._t.api(tid)
        return Shifted(trace)

    def test_abort(self):
        """ncclCommAbort dumps too (NCCL's commReclaim reaches commDestroySync): the dump is read
        right after it, on its thread; a bad NPKIT_DUMP_HEADER is reported."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1",
                                               "NPKIT_DUMP_HEADER": self.path("missing_npkit_event.h")},
                                    ["--iters", str(ITERS), "--end", "abort"])
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            exp, tn = self.check_process(t, dump, [r])
            self.check_inside_calls(tn, [r], 1)
            self.assertEqual(len(tn.reads), 1, "read once, after ncclCommAbort")
            read = tn.reads[0]
            self.assertEqual((read["ph"], read["args"]["trigger"]), ("X", "ncclCommAbort"))
            self.assertRegex(read["args"]["comm"], r"^comm [0-9a-f]{8} \(rank %d/2\)$" % r)
            self.assertNotIn("shared_state", read["args"])
            aborts = [e for e in t.api() if e["name"] == "ncclCommAbort"]
            self.assertEqual(len(aborts), 1)
            self.assertEqual(read["tid"], aborts[0]["tid"])
            self.assertGreaterEqual(t.start_ns(read), t.end_ns(aborts[0]))
            warnings = self.notes(t, "warning")
            self.assertFalse([m for m in warnings if "ncclCommAbort" in m], warnings)
            header = [m for m in warnings if m.startswith("NPKIT_DUMP_HEADER:")]
            self.assertEqual(len(header), 1, warnings)
            self.assertIn("missing_npkit_event.h", header[0])
        self.assertEqual(self.shared_findings(traces), [])

    def test_abort_two_ranks_per_process(self):
        """Two ranks per process, both aborted: the last one's commReclaim dumps (the first finds
        nothing), and the reading is flagged: the process held both at once."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1"},
                                    ["--ranks-per-process", "2", "--iters", "1", "--end", "abort"],
                                    nccl="fake")
        self.assertRunOk(run)
        for p, t in lib.load_traces(traces, expect=2).items():
            dumped = sorted(npkit_files.list_dump(dump, [2 * p, 2 * p + 1]))
            self.assertEqual(len(dumped), 1, dumped)
            tn = TraceNPKit(self, t)
            self.assertEqual({pr["rank"] for pr in tn.pairs}, set(dumped))
            self.assertEqual(len(tn.reads), 1)
            read = tn.reads[0]
            self.assertEqual(read["args"]["trigger"], "ncclCommAbort")
            self.assertIs(read["args"].get("shared_state"), True)
            aborts = [e for e in t.api() if e["name"] == "ncclCommAbort"]
            self.assertEqual(len(aborts), 2)
            self.assertGreaterEqual(t.start_ns(read), t.end_ns(aborts[1]))
            self.assertEqual(len([m for m in self.notes(t, "warning") if "communicators at once" in m]), 1)
        self.assertEqual(len(self.shared_findings(traces)), 1)

    def test_dump_outside_destroy(self):
        """A dump written elsewhere than in ncclCommDestroy or ncclCommAbort (here in
        ncclCommFinalize, which reaches commDestroySync; the job never destroys) is read at exit."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1"},
                                    ["--iters", str(ITERS), "--end", "finalize"])
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            exp, tn = self.check_process(t, dump, [r])
            self.check_inside_calls(tn, [r], 1)
            self.assertEqual(len(tn.reads), 1)
            read = tn.reads[0]
            self.assertEqual((read["ph"], read["s"], read["args"]["trigger"]), ("i", "p", "exit"))
            self.assertNotIn("comm", read["args"])
            self.assertEqual(self.notes(t, "warning"), [])

    def test_no_dump(self):
        """NPKIT_DUMP_DIR set for an NCCL without NPKit: a warning after the destroy finds nothing."""
        run, dump, traces = run_job(self.tmp, {}, ["--iters", "1"])
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            tn = TraceNPKit(self, t)
            self.assertEqual((tn.pairs, tn.reads), ([], []))
            msgs = [m for m in self.notes(t, "warning") if "no NPKit dump" in m]
            self.assertEqual(len(msgs), 1, self.notes(t))
            self.assertIn("-DENABLE_NPKIT", msgs[0])

    def test_no_teardown(self):
        """Communicators never finalized, destroyed or aborted: nothing to read, one note says why."""
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1"}, ["--iters", "1", "--end", "none"])
        self.assertRunOk(run)
        self.assertEqual(os.listdir(dump), [])
        for r, t in lib.load_traces(traces, expect=2).items():
            self.assertEqual(TraceNPKit(self, t).reads, [])
            msgs = [m for m in self.notes(t, "info") if "no communicator was destroyed or aborted" in m]
            self.assertEqual(len(msgs), 1, self.notes(t))
            self.assertIn("finalized, destroyed or aborted", msgs[0])
            self.assertEqual(self.notes(t, "warning"), [])

    def test_fork_header(self):
        """NPKIT_DUMP_HEADER names the events; ids it does not define are counted, not stored."""
        header = self.path("npkit_event.h")
        with open(header, "w") as f:
            f.write("#ifndef NPKIT_EVENT_H_\n#define NPKIT_EVENT_H_\n"
                    "#define NPKIT_EVENT_INVALID 0x0\n"
                    "#define NPKIT_EVENT_FORK_RING_ENTRY 0x1\n#define NPKIT_EVENT_FORK_RING_EXIT 0x2\n"
                    "#define NPKIT_EVENT_FORK_NET_SEND_ENTRY 0x2F\n#define NPKIT_EVENT_FORK_NET_SEND_EXIT 0x30\n"
                    "#define NPKIT_EVENT_TIME_SYNC_GPU 0x33\n#define NPKIT_EVENT_TIME_SYNC_CPU 0x34\n#endif\n")
        with open(header) as f:
            table = npkit_files.table_from_header(f.read())
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1", "NPKIT_DUMP_HEADER": header},
                                    ["--iters", str(ITERS)])
        self.assertRunOk(run)
        for r, t in lib.load_traces(traces, expect=2).items():
            exp, tn = self.check_process(t, dump, [r], table=table)
            self.assertEqual({p["name"] for p in tn.pairs}, {"FORK_RING", "FORK_NET_SEND"})
            self.assertGreater(exp.unknown, 0)
            self.assertEqual(t.other["dropped"], 0)  # unknown ids are in the reading's counts
            msgs = [m for m in self.notes(t, "warning") if "ids that the event table does not define" in m]
            self.assertEqual(len(msgs), 1, self.notes(t))
            self.assertIn("%d events" % exp.unknown, msgs[0])
            self.assertTrue(msgs[0].endswith("set NPKIT_DUMP_HEADER to its npkit_event.h"), msgs[0])

    def test_read_limit(self):
        """NPKIT_DUMP_MAX_MB bounds what a process reads: files beyond it are left out and said."""
        dump = self.path("dump")
        os.makedirs(dump)
        big = self.path("dump", "gpu_events_rank_0_buf_700")
        with open(big, "wb") as f:  # fresh: it counts as this job's
            f.write(b"\0" * (1536 * 1024))
        run, dump, traces = run_job(self.tmp, {"FAKE_NCCL_NPKIT": "1", "NPKIT_DUMP_MAX_MB": "1"},
                                    ["--iters", str(ITERS)])
        self.assertRunOk(run)
        traces = lib.load_traces(traces, expect=2)
        t = traces[0]
        # files in order (rank, GPU before CPU, index) while they fit: buffers 0, 1, 16; then
        # buffer 700 does not fit, and nothing after it is taken
        exp, tn = self.check_process(t, dump, [0], files_of=lambda rd: [f for f in rd.files if f[0] == "gpu"
                                                                        and f[1] < 700])
        self.assertEqual(tn.read_total("files_over_limit"), 3)
        msgs = [m for m in self.notes(t, "warning") if m.startswith("NPKIT_DUMP_MAX_MB=1 reached")]
        self.assertEqual(len(msgs), 1, self.notes(t))
        self.assertIn("3 NPKit dump files", msgs[0])
        self.check_process(traces[1], dump, [1])  # rank 1 is not concerned


if __name__ == "__main__":
    unittest.main(verbosity=2)
