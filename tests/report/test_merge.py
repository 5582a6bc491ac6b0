"""`npkit merge` on synthetic logs with injected clock offsets: one trace with every rank as a
process sorted by rank, host offsets recovered and recorded with their uncertainty, the same
collective ending at the same trace time on every rank; filters, gzip output, size warning, and
bad input."""

import collections
import gzip
import json
import os
import re
import shlex
import struct
import unittest

import report_testlib as rt
from report_testlib import lib

OFFSETS = {"host1": 2500000, "host2": -1234567}   # host clock − true time, ns


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.loads(f.read(), parse_constant=lib._reject_constant,
                          object_pairs_hook=lib._no_duplicate_keys)


def calls(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "nccl_api" and e["ph"] == "X"]


def ends_by_seq(trace, name="ncclAllReduce", comm_nranks=None):
    """seq -> {pid: end in trace ns} of the named call on the world communicator."""
    out = collections.defaultdict(dict)
    for e in calls(trace):
        a = e["args"]
        if e["name"] == name and (comm_nranks is None or a["comm_nranks"] == comm_nranks):
            out[a["seq"]][e["pid"]] = round((e["ts"] + e["dur"]) * 1000)
    return out


def flip_event_byte(path):
    """Flips a byte in the middle of the payload of the log's middle EVENTS (or packed) block."""
    with open(path, "r+b") as f:
        data = f.read()
        off, events = struct.unpack_from("<I", data, 12)[0], []
        while off + 16 <= len(data):
            magic, kind, _, _, size = struct.unpack_from("<IHHII", data, off)
            if magic != 0x424B504E:
                break
            if kind in (1, 10) and size > 0:
                events.append((off + 16, size))
            off += 16 + size
        at, size = events[len(events) // 2]
        f.seek(at + size // 2)
        f.write(bytes([data[at + size // 2] ^ 0x55]))


class Merge(lib.TempDirTestCase):
    RANKS = 9

    def make(self, *extra):
        d = self.path("logs")
        self.instances = rt.gen(d, "--ranks", self.RANKS, "--hosts", 3, "--offset", "1:%d" % OFFSETS["host1"],
                                "--offset", "2:%d" % OFFSETS["host2"], "--iters", 100, "--sizes", "65536,1048576",
                                "--jitter", 1000, "--exit-jitter", 2000, "--subcomm", *extra)
        return d

    def merge(self, *args):
        run = rt.tool("merge", *args)
        self.assertEqual(run.rc, 0, run.describe())
        return run

    def test_aligned_trace(self):
        d = self.make()
        out = self.path("merged.json")
        run = self.merge(d, "-o", out)
        self.assertIn("9 ranks on 3 hosts", run.stderr)
        t = load(out)
        od = t["otherData"]
        self.assertTrue(od["merged"])
        self.assertEqual(od["ranks"], self.RANKS)
        base = int(od["base_ns"])
        # one process per rank, pid = rank + 1, sorted by rank
        names = {e["pid"]: e["args"]["name"] for e in t["traceEvents"] if e["name"] == "process_name"}
        order = {e["pid"]: e["args"]["sort_index"] for e in t["traceEvents"] if e["name"] == "process_sort_index"}
        self.assertEqual(sorted(names), list(range(1, self.RANKS + 1)))
        self.assertEqual(order, {p: p - 1 for p in names})
        self.assertTrue(names[5].startswith("rank 4 \u00b7 host1:"), names[5])
        self.assertEqual([x["trace_pid"] for x in od["logs"]], list(range(1, self.RANKS + 1)))
        # offsets recorded with their uncertainty, and right
        al = od["clock_alignment"]
        self.assertTrue(al["estimated"])
        self.assertEqual(al["reference_host"], "host0")
        for host, injected in OFFSETS.items():
            h = rt.host_entry(al, host)
            self.assertEqual(h["status"], "aligned")
            self.assertLessEqual(abs(h["offset_ns"] + injected), 5 * h["uncertainty_ns"] + 50, h)
            self.assertGreater(h["uncertainty_ns"], 0)
            self.assertEqual(h["ranks"], {"host1": [3, 4, 5], "host2": [6, 7, 8]}[host])
        for entry in od["logs"]:
            want = -OFFSETS.get(entry["summary"]["host"], 0)
            self.assertLessEqual(abs(entry["clock_offset_ns"] - want), 300)
        # every call of every rank is in the trace
        per_pid = collections.Counter(e["pid"] for e in calls(t))
        for p in range(1, self.RANKS + 1):
            self.assertEqual(per_pid[p], self.instances + (self.instances if p > 3 else 0))
        # the same collective ends at the same trace time on every rank: within the exit jitter
        # (2 us) and the alignment error; unaligned, hosts are milliseconds apart
        world = ends_by_seq(t, comm_nranks=self.RANKS)
        self.assertEqual(len(world), self.instances)
        for seq, ends in world.items():
            self.assertEqual(len(ends), self.RANKS)
            self.assertLess(max(ends.values()) - min(ends.values()), 2500, (seq, ends))
        # trace times are relative to base_ns with its offset: absolute true times come back
        first = min(e["ts"] for e in calls(t) if e["pid"] == 1)
        self.assertGreater(base + round(first * 1000), rt.T0)

        raw = self.path("raw.json")
        self.merge(d, "-o", raw, "--no-align", "-q")
        t2 = load(raw)
        self.assertFalse(t2["otherData"]["clock_alignment"]["enabled"])
        spread = [max(e.values()) - min(e.values()) for e in ends_by_seq(t2, comm_nranks=self.RANKS).values()]
        self.assertGreater(min(spread), 3_700_000)   # 2.5 ms − (−1.23 ms)

    def test_filters(self):
        d = self.make()
        out = self.path("f.json")
        self.merge(d, "-o", out, "--ranks", "0-1,7")
        t = load(out)
        self.assertEqual(sorted({e["pid"] for e in t["traceEvents"]}), [1, 2, 8])
        self.assertEqual(t["otherData"]["filters"]["ranks"], [[0, 1], [7, 7]])
        # every host is still aligned: the selected logs and one log per other host are read
        self.assertEqual(len(t["otherData"]["clock_alignment"]["hosts"]), 3)

        self.merge(d, "-o", out, "--ops", "ncclAllReduce", "--window", "1ms:2ms")
        t = load(out)
        evs = calls(t)
        self.assertTrue(evs)
        self.assertEqual({e["name"] for e in evs}, {"ncclAllReduce"})
        for e in evs:  # overlapping the window of trace time
            self.assertLessEqual(e["ts"], 2000.0)
            self.assertGreaterEqual(e["ts"] + e["dur"], 1000.0)
        self.assertEqual(t["otherData"]["filters"]["window_ns"], [1000000, 2000000])
        self.merge(d, "-o", self.path("all.json"))
        full = load(self.path("all.json"))
        inside = [e for e in calls(full) if e["ts"] <= 2000.0 and e["ts"] + e["dur"] >= 1000.0]
        self.assertEqual(len(evs), len(inside))

        self.merge(d, "-o", out, "--ops", "p2p")
        self.assertEqual(calls(load(out)), [])

        # filtered inside the reader: no temporary file, so no usable TMPDIR is needed
        env = dict(os.environ, TMPDIR=self.path("no-such-folder"))
        run = lib.run_tool(["merge", d, "--window", "1ms:2ms", "--ops", "ncclAllReduce", "-o", "-"], env=env)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertEqual(len(calls(json.loads(run.stdout))), len(evs))

    def test_ranks_read_only_their_logs(self):
        """--ranks reads the events of the selected logs and of one log per host for the clock
        alignment, nothing of the others: a flipped byte in an EVENTS block of rank 4 or 8 (hosts 1
        and 2, whose first logs are ranks 3 and 6) goes unseen by `--ranks 1`, and is found by the
        checksum once they are selected.  Offsets and rank 1's events are those of the full merge."""
        d = self.make()
        names = {}
        for f in os.listdir(d):
            with open(os.path.join(d, f), "rb") as log:
                names[struct.unpack_from("<i", log.read(48), 44)[0]] = os.path.join(d, f)  # header.rank
        for rank in (4, 8):
            flip_event_byte(names[rank])
        full, part, damaged = self.path("full.json"), self.path("part.json"), self.path("damaged.json")
        run_full = self.merge(d, "-o", full, "-q")
        run = self.merge(d, "-o", part, "-q", "--ranks", "1")
        self.assertEqual(run_full.stderr.count("bad checksum"), 2, run_full.stderr)
        self.assertNotIn("checksum", run.stderr)
        f, p = load(full), load(part)
        self.assertEqual(p["otherData"]["warnings"], [])
        for host in OFFSETS:
            hf, hp = rt.host_entry(f["otherData"]["clock_alignment"], host), rt.host_entry(p["otherData"]["clock_alignment"], host)
            self.assertEqual(hp["status"], "aligned")
            self.assertLessEqual(abs(hp["offset_ns"] - hf["offset_ns"]), 5 * (hp["uncertainty_ns"] + hf["uncertainty_ns"]) + 50)
        pid_full = [x["trace_pid"] for x in f["otherData"]["logs"] if x["summary"]["rank"] == 1][0]
        rank1 = [(round(e["ts"] * 1000), e["name"], e["args"]["seq"]) for e in calls(f) if e["pid"] == pid_full]
        got = [(round(e["ts"] * 1000), e["name"], e["args"]["seq"]) for e in calls(p)]
        self.assertEqual(len(got), len(rank1))
        for a, b in zip(sorted(got, key=lambda x: x[2]), sorted(rank1, key=lambda x: x[2])):
            self.assertEqual(a[1:], b[1:])
            self.assertLessEqual(abs(a[0] - b[0]), 300)
        run = self.merge(d, "-o", damaged, "-q", "--ranks", "1,4")
        self.assertEqual(run.stderr.count("bad checksum"), 1, run.stderr)
        self.assertEqual(len(load(damaged)["otherData"]["warnings"]), 1)

    def run_command(self, command, out):
        """A command the report printed, run as printed but with its output named out."""
        words = shlex.split(command)
        self.assertEqual(words[:2], ["npkit", "merge"], command)
        o = words.index("-o")
        words[o + 1] = out
        run = lib.run_tool(words[1:])
        self.assertEqual(run.rc, 0, "%s\n%s" % (command, run.describe()))
        return words

    def test_findings_name_their_picture(self):
        """The report names, for its straggler, the merge that shows it; that merge holds the
        instance the finding talks about on the ranks involved, the straggler arriving last."""
        d = self.make("--late", "4:3000000")
        rep = rt.report_json(self, d)
        strag = [f for f in rep["findings"] if f["kind"] == "straggler"]
        self.assertEqual(len(strag), 1, rep["findings"])
        cmd = strag[0]["merge_command"]
        self.assertRegex(cmd, r"^npkit merge \S+ --collective world:\d+ --ranks (\d+,){3}\d+ -o finding1\.json$")
        seq = int(re.search(r"world:(\d+)", cmd).group(1))
        self.assertIn("#%d on world" % seq, strag[0]["evidence"])
        out = self.path("finding1.json")
        words = self.run_command(cmd, out)
        ranks = sorted(int(r) for r in words[words.index("--ranks") + 1].split(","))
        self.assertIn(4, ranks)  # the straggler, the first to arrive and two others
        t = load(out)
        self.assertEqual(t["otherData"]["filters"]["collective"], {"comm": "world", "seq": [seq, seq], "context_ns": 2000000})
        pid_rank = {x["trace_pid"]: x["summary"]["rank"] for x in t["otherData"]["logs"]}
        self.assertEqual(sorted(pid_rank.values()), ranks)
        inst = {pid_rank[e["pid"]]: e for e in calls(t) if e["args"]["seq"] == seq and e["args"]["comm_nranks"] == self.RANKS}
        self.assertEqual(sorted(inst), ranks)
        last = max(inst, key=lambda r: inst[r]["ts"])
        self.assertEqual(last, 4)
        self.assertGreater(inst[4]["ts"] - min(e["ts"] for e in inst.values()), 2900)  # 3 ms late, in us
        # every call in the trace is within the instance's span and its context
        lo = min(e["ts"] for e in inst.values()) - 2000
        hi = max(e["ts"] + e["dur"] for e in inst.values()) + 2000
        for e in calls(t):
            self.assertTrue(e["ts"] + e["dur"] >= lo - 1 and e["ts"] <= hi + 1, e)
        # a finding about an operation on a communicator: that operation's calls on its members
        ops = [f for f in rep["findings"] if f["merge_command"] and "--ops" in f["merge_command"]]
        self.assertTrue(ops, rep["findings"])
        for k, f in enumerate(ops):
            out = self.path("ops%d.json" % k)
            words = self.run_command(f["merge_command"], out)
            t = load(out)
            want = sorted(int(r) for r in words[words.index("--ranks") + 1].split(","))
            self.assertEqual(sorted(x["summary"]["rank"] for x in t["otherData"]["logs"]), want)
            self.assertEqual({e["name"] for e in calls(t)}, {"nccl" + words[words.index("--ops") + 1]})
            self.assertEqual(len({e["pid"] for e in calls(t)}), len(want))
        # the text and HTML reports print the same command
        self.assertIn("    see it: " + cmd + "\n", rt.tool("report", d).stdout)
        html = self.path("r.html")
        self.assertEqual(rt.tool("report", d, "--html", html).rc, 0)
        with open(html, encoding="utf-8") as f:
            self.assertIn("<b>See it:</b> <code>" + cmd.replace("&", "&amp;") + "</code>", f.read())

    def test_collective_window_of_the_selected_ranks(self):
        """With --ranks, the window is that of the selected ranks' instances: rank 1 arrives 3 ms
        late; ranks 3 and 6, read only for the clocks (the first logs of host1 and host2), arrive
        on time and do not widen the window."""
        d = self.make("--late", "1:3000000")
        out = self.path("c.json")
        self.merge(d, "--collective", "world:40", "--ranks", "1", "-o", out, "-q")
        t = load(out)
        lo, hi = t["otherData"]["filters"]["window_ns"]
        inst = [e for e in calls(t) if e["args"]["seq"] == 40 and e["args"]["comm_nranks"] == self.RANKS]
        self.assertEqual(len(inst), 1)
        first = min(round(e["ts"] * 1000) for e in inst)
        last = max(round((e["ts"] + e["dur"]) * 1000) for e in inst)
        self.assertLessEqual(abs(lo - (first - 2000000)), 2)
        self.assertLessEqual(abs(hi - (last + 2000000)), 2)
        run = rt.tool("merge", d, "--collective", "world:999999", "-o", self.path("none.json"))
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("no timed instance", run.stderr)

    def test_large_job_pictures_are_perfetto(self):
        d = self.path("big")
        rt.gen(d, "--ranks", 72, "--hosts", 4, "--iters", 20, "--late", "30:3000000")
        rep = rt.report_json(self, d)
        cmds = [f["merge_command"] for f in rep["findings"] if f["kind"] == "straggler"]
        self.assertEqual(len(cmds), 1, rep["findings"])
        self.assertRegex(cmds[0], r"--ranks (\d+,){2,3}\d+ -o finding1\.pftrace$")
        self.assertIn("30", cmds[0].split("--ranks ")[1].split(" ")[0].split(","))
        out = self.path("f.pftrace")
        self.run_command(cmds[0], out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(1), b"\x0a")  # Trace.packet, field 1, length-delimited

    def test_gpu_events_follow_the_filters(self):
        d = self.path("gpu")
        rt.gen(d, "--ranks", 2, "--iters", 10, "--gpu", "--period", 1000000)
        out = self.path("g.json")
        self.merge(d, "-o", out)
        kernels = [e for e in load(out)["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 2 * 2 * 10)
        self.merge(d, "-o", out, "--ops", "Send")
        kernels = [e for e in load(out)["traceEvents"] if e.get("cat") == "kernel"]
        # the NCCL kernels went with their AllReduce; the compute kernels stay
        self.assertEqual(len(kernels), 2 * 10)
        self.assertTrue(all(not k["name"].startswith("nccl") for k in kernels))

    def test_gzip_and_size_warning(self):
        d = self.make()
        plain, packed = self.path("m.json"), self.path("m.json.gz")
        self.merge(d, "-o", plain, "-q")
        run = self.merge(d, "-o", packed, "--warn-size", "10k")
        with open(packed, "rb") as f:
            self.assertEqual(f.read(2), b"\x1f\x8b")
        self.assertEqual(load(packed), load(plain))
        self.assertLess(os.path.getsize(packed), os.path.getsize(plain) / 3)
        self.assertIn("npkit merge: warning:", run.stderr)
        self.assertIn("--window", run.stderr)
        quiet = self.merge(d, "-o", plain)
        self.assertNotIn("npkit merge: warning:", quiet.stderr)
        self.assertFalse(os.path.exists(plain + ".partial"))

    def test_bad_input(self):
        d = self.make()
        for args, rc, text in (([d, "--window", "2s:1s"], 2, "--window"),
                               ([d, "--ranks", "x"], 2, "--ranks"),
                               ([d, "--ops", "Allreduse"], 2, "Allreduse"),
                               ([d, "--warn-size", "big"], 2, "--warn-size"),
                               ([], 2, "missing DIR"),
                               ([self.path("none")], 1, "No such file"),
                               ([d, "--ranks", "100-200", "-o", self.path("x.json")], 1, "no log matches"),
                               ([d, "-o", self.path("no", "dir", "x.json")], 1, "x.json.partial")):
            run = rt.tool("merge", *args)
            self.assertEqual(run.rc, rc, run.describe())
            self.assertIn(text, run.stderr)
        self.assertFalse(os.path.exists(self.path("x.json")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
