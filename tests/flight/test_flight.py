"""The hang watchdog, the flight recorder and the hang diagnosis of `npkit report`, under the real
mpirun with the fake NCCL (hang_job goes wrong on purpose; FAKE_NCCL_STALL stalls a rank's GPU).

Each job's facts are read back independently of the C code: the binary logs are parsed here
(struct layouts of include/npkit/event_log.h), and what the report says is compared with them.

- A rank that skips a collective: the others' watchdogs name it once, the report says the skipper
  never entered it and the others wait in it since their call started.
- A rank that passes another count at the same sequence number: a desync, the dumps of NCCL errors.
- A rank killed by SIGKILL: it never entered the collective (its log not closed), and in ring mode,
  where it wrote nothing, it is named as a rank without a log.
- A kernel that never starts, and a network step that never completes, on one rank: all ranks
  wait, the stalled rank is named as the one stuck, each watchdog says where.
- A rank that pauses twice: the watchdog names each stall once, and the report finds no hang.
- The ring (NPKIT_RING_MB): nothing on disk until a trigger, a dump on NPKIT_DUMP_SIGNAL while the
  job goes on, overwritten events counted exactly, and a readable dump written from the handler of
  SIGSEGV.

Arguments: HANG_JOB"""
import glob
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib as tl  # noqa: E402

HANG_JOB = sys.argv[1]
SANITIZED = bool(os.environ.get("NPKIT_SANITIZE"))
WAIT = 240 if SANITIZED else 90  # longest wait for what a job must show
# The watchdog's timeout: long enough that no healthy call of a loaded machine (or of a sanitizer
# build) takes as long, so that only the stalls made on purpose are named.
HANG_S = 4 if SANITIZED else 2
HANG = {"NPKIT_HANG_TIMEOUT": "%ds" % HANG_S}

# include/npkit/event_log.h
EV_API, EV_INFLIGHT, EV_FLIGHT = 1, 36, 37
FN_ALLREDUCE = [n for n, _c, _s in tl.api_table()].index("ncclAllReduce") + 1  # npkit_fn: 0 is none
EVENT_HEAD = struct.Struct("<QQHHI")
API = struct.Struct("<QQQQQQIiiiiIQQQQ")
INFLIGHT = struct.Struct("<QQQQQQIIIiiiiiiBBBB")
FLIGHT = struct.Struct("<QQQQIiiIII48s")
END = struct.Struct("<QQQQIIQ")
BLOCK_END = 15
INFL_CALL, INFL_QUEUED, INFL_KERNEL_CH, INFL_PROXY_OP, INFL_PROXY_STEP = 1, 2, 3, 4, 5
INFL_F_HANG = 1
FLIGHT_EXIT, FLIGHT_SIGNAL, FLIGHT_HANG, FLIGHT_ERROR, FLIGHT_FATAL = 1, 2, 3, 4, 6
LOG_F_RING = 0x8
API_SEQ_AT = 0x100
NO_SEQ = (1 << 64) - 1
HANG_LINE = re.compile(r"^npkit: hang: (\w+) #(\d+) of comm ([0-9a-f]{8}) \(rank (\d+) of (\d+)\) has not completed "
                       r"for ([\d.]+) s: (.+)$", re.M)


class Log:
    """A log read here: its header flags, its events (kind, func, start, end, thread, payload) and
    its END record."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            data = f.read()
        h = tl.LOG_HEADER.unpack_from(data, 0)
        self.version, self.header_size, self.record_size = h[1], h[2], h[3]
        self.rank, self.flags = h[8], h[12]
        self.events, self.end = [], None
        off = self.header_size
        while off + tl.BLOCK_HEADER.size <= len(data):
            magic, btype, _f, count, size = tl.BLOCK_HEADER.unpack_from(data, off)
            assert magic == tl.BLOCK_MAGIC, "%s: bad block at %d" % (path, off)
            payload = off + tl.BLOCK_HEADER.size
            if payload + size > len(data):
                break
            if btype == tl.BLOCK_EVENTS or (btype == tl.BLOCK_EVENTS_PACKED and self.version >= 5):
                if btype == tl.BLOCK_EVENTS:
                    records = [data[payload + i * self.record_size:payload + (i + 1) * self.record_size]
                               for i in range(count)]
                else:  # a streamed log of version 5 on (the ring keeps EVENTS blocks)
                    records = tl.unpack_events(data, payload, size, count, self.record_size)
                for rec in records:
                    start, end, kind, func, thread = EVENT_HEAD.unpack_from(rec, 0)
                    self.events.append((kind, func, start, end, thread, rec[EVENT_HEAD.size:]))
            elif btype == BLOCK_END:
                self.end = END.unpack_from(data, payload)
            off = payload + size + tl.BLOCK_HEADER.size + tl.CHECK_REC.size  # and its CHECK block

    def calls(self):
        """AllReduce calls: (seq it was made at, count, start, end, result)."""
        out = []
        for kind, func, start, end, _t, p in self.events:
            if kind != EV_API or func != FN_ALLREDUCE:
                continue
            a = API.unpack_from(p)
            count, seq, aux, result, flags = a[0], a[3], a[5], a[10], a[11]
            if seq == NO_SEQ and flags & API_SEQ_AT:
                seq = aux
            out.append((seq, count, start, end, result))
        return out

    def of_kind(self, kind, layout):
        """(func, start, end, payload fields) of the events of one kind."""
        return [(func, start, end, layout.unpack_from(p)) for k, func, start, end, _t, p in self.events if k == kind]

    def inflight(self):
        """In-flight items: dict with what, seq, dump, flags, start, end, channel, peer, phase."""
        return [dict(func=func, start=start, end=end, comm_id=f[0], seq=f[1], dump=f[8], rank=f[9],
                     nranks=f[10], channel=f[11], peer=f[12], step=f[13], what=f[15], is_send=f[16],
                     phase=f[17], flags=f[18]) for func, start, end, f in self.of_kind(EV_INFLIGHT, INFLIGHT)]

    def flights(self):
        out = []
        for _func, start, _end, f in self.of_kind(EV_FLIGHT, FLIGHT):
            out.append(dict(time=start, ring_bytes=f[0], kept=f[1], overwritten=f[2], trigger=f[4], signal=f[5],
                            result=f[6], dump=f[7], inflight=f[8], reason=f[10].split(b"\0")[0].decode()))
        return out


def logs_by_rank(trace_dir):
    logs = {}
    for p in glob.glob(os.path.join(trace_dir, "*.npkit")):
        lg = Log(p)
        logs[lg.rank] = lg
    return logs


class FlightCase(tl.TempDirTestCase):
    def start(self, np, args, settings=None, ready=True):
        self.trace = self.path("trace")
        self.ready_dir = self.path("ready")
        os.makedirs(self.ready_dir)
        s = {"NPKIT_TRACE_DIR": self.trace, "FAKE_NCCL_LAT_US": "0", "FAKE_NCCL_TIMEOUT_S": "120"}
        s.update(settings or {})
        env = tl._base_env()
        cmd = [tl.mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
        for k, v in sorted(tl.job_env("fake", True, s).items()):
            cmd += ["-x", "%s=%s" % (k, v)]
        cmd += [HANG_JOB] + (["--ready-dir", self.ready_dir] if ready else []) + list(args)
        self.err_path = self.path("stderr")
        self.err_file = open(self.err_path, "w")
        self.addCleanup(self.err_file.close)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=self.err_file, text=True)
        self.addCleanup(self.kill)
        self.np = np
        return self.proc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_until(self, what, cond, timeout=WAIT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return
            time.sleep(0.05)
        self.kill()
        self.fail("%s did not happen in %d s; stderr:\n%s" % (what, timeout, self.stderr()[-6000:]))

    def wait_hang_lines(self, n):
        self.wait_until("%d hang lines" % n, lambda: len(HANG_LINE.findall(self.stderr())) >= n)
        time.sleep(0.5)  # the dump each line asks for

    def stop(self):
        """SIGTERM to mpirun, as `timeout --foreground -s TERM` would: the ranks finish their logs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.kill()
            self.fail("mpirun did not stop")

    def wait_end(self):
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.kill()
            self.fail("the job did not end; stderr:\n" + self.stderr()[-6000:])

    def ready_pids(self):
        paths = [os.path.join(self.ready_dir, "ready.%d" % r) for r in range(self.np)]
        self.wait_until("ready files", lambda: all(os.path.exists(p) for p in paths))
        return [int(open(p).read()) for p in paths]

    def report(self):
        out = self.path("report.json")
        with open(out, "w") as f:
            p = subprocess.run([tl.tool(), "report", "--json", self.trace], stdout=f, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.load(open(out))
        text = subprocess.run([tl.tool(), "report", self.trace], capture_output=True, text=True)
        self.assertEqual(text.returncode, 0, text.stderr)
        return doc, text.stdout

    def hang_lines(self):
        return [dict(op=m[0], seq=int(m[1]), comm=m[2], rank=int(m[3]), nranks=int(m[4]), age=float(m[5]), where=m[6])
                for m in HANG_LINE.findall(self.stderr())]

    def check_hang_basics(self, doc, seq):
        self.assertGreaterEqual(len(doc["hangs"]), 1, doc["hangs"])
        h = doc["hangs"][0]
        self.assertEqual((h["op"], h["seq"], h["nranks"]), ("AllReduce", seq, self.np), h)
        self.assertEqual(doc["findings"][0]["kind"], "hang", doc["findings"][0])
        self.assertEqual(doc["findings"][0]["title"], h["title"][:len(doc["findings"][0]["title"])])
        return h


class Hangs(FlightCase):
    def test_skipped_collective(self):
        """Rank 1 stops before AllReduce #5 (stuck in its own work): ranks 0 and 2 wait in it."""
        self.start(3, ["--mode", "skip", "--rank", "1", "--at", "5", "--calls", "10"], HANG)
        self.wait_hang_lines(2)
        time.sleep(HANG_S + 0.5)  # one more timeout: the same stuck collective is not named again
        self.stop()
        lines = self.hang_lines()
        self.assertEqual(sorted(l["rank"] for l in lines), [0, 2], lines)
        for l in lines:
            self.assertEqual((l["op"], l["seq"], l["nranks"]), ("AllReduce", 5, 3), l)
            self.assertGreaterEqual(l["age"], HANG_S, l)
        self.assertEqual(lines[0]["comm"], lines[1]["comm"])
        logs = logs_by_rank(self.trace)
        self.assertEqual(sorted(logs), [0, 1, 2])
        # independently: rank 1 made #0..#4; the others' blocked call #5 is in their snapshots only
        self.assertEqual([c[0] for c in logs[1].calls()], list(range(5)))
        for r in (0, 2):
            self.assertEqual([c[0] for c in logs[r].calls()], list(range(5)))
            hangs = [f for f in logs[r].flights() if f["trigger"] == FLIGHT_HANG]
            self.assertEqual(len(hangs), 1, logs[r].flights())
            self.assertIn("AllReduce #5 of comm %s" % lines[0]["comm"], hangs[0]["reason"])
            flagged = [i for i in logs[r].inflight() if i["dump"] == hangs[0]["dump"] and i["flags"] & INFL_F_HANG]
            self.assertTrue(flagged and all(i["seq"] == 5 for i in flagged), logs[r].inflight())
            self.assertIn(INFL_CALL, [i["what"] for i in flagged])
            self.assertIn(INFL_KERNEL_CH, [i["what"] for i in flagged])
        self.assertEqual([f for f in logs[1].flights() if f["trigger"] == FLIGHT_HANG], [])

        doc, text = self.report()
        h = self.check_hang_basics(doc, 5)
        self.assertEqual((h["missing_ranks"], h["waiting_ranks"], h["no_log_ranks"]), ([1], [0, 2], []), h)
        self.assertEqual((h["mismatched_ranks"], h["failed_ranks"]), ([], []), h)
        self.assertTrue(h["comm_id"].startswith("0x" + lines[0]["comm"]), (h["comm_id"], lines[0]["comm"]))
        # since: the earliest start of the waiting ranks' call #5 (their snapshot's CALL items)
        starts = {r: [i["start"] for i in logs[r].inflight() if i["what"] == INFL_CALL and i["seq"] == 5] for r in (0, 2)}
        self.assertEqual(h["since_ns"], min(min(s) for s in starts.values()))
        for r in (0, 2):  # each rank entered #5 after its #4 returned
            self.assertGreater(min(starts[r]), max(c[3] for c in logs[r].calls() if c[0] == 4))
        ranks = {r["rank"]: r for r in h["ranks"]}
        self.assertEqual((ranks[1]["status"], ranks[1]["last_entered"], ranks[1]["last_completed"]), ("never entered", 4, 4))
        for r in (0, 2):
            self.assertEqual((ranks[r]["status"], ranks[r]["last_entered"], ranks[r]["last_completed"]), ("waiting", 5, 4))
            self.assertIn("its kernel started on channel", " ".join(ranks[r]["where"]))
        prog = [p for p in doc["comm_progress"] if p["comm_id"] == h["comm_id"]][0]
        self.assertEqual([(p["last_entered"], p["last_completed"]) for p in prog["ranks"]], [(5, 4), (4, 4), (5, 4)])
        self.assertIn("rank 1 never entered AllReduce #5 of comm %s (3 ranks); ranks 0 and 2 wait in it since" % lines[0]["comm"],
                      text)
        html = self.path("report.html")
        p = subprocess.run([tl.tool(), "report", self.trace, "--html", html], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        page = open(html).read()
        self.assertIn('<section id="hangs">', page)
        self.assertIn("rank 1 never entered AllReduce #5 of comm %s" % lines[0]["comm"], page)
        self.assertEqual(page.count('<table class="hang-ranks" data-seq="5">'), 1)
        # the trace of a waiting rank shows its work in flight
        trace = tl.load_traces(self.trace, expect=3)[0]
        names = [e["name"] for e in trace.events if e.get("cat") == "npkit_flight"]
        self.assertIn("AllReduce #5 in flight", names)
        self.assertIn("npkit dump 1 (hang)", names)

    def test_mismatched_size(self):
        """Rank 1 passes twice the count at AllReduce #3: a desync; the NCCL errors dump."""
        self.start(3, ["--mode", "mismatch", "--rank", "1", "--at", "3", "--calls", "6"])
        self.wait_end()
        logs = logs_by_rank(self.trace)
        counts = {r: [c[1] for c in logs[r].calls() if c[0] == 3] for r in logs}
        self.assertEqual(counts, {0: [1024], 1: [2048], 2: [1024]}, counts)
        for r in logs:  # the first error of each rank dumps (ncclInvalidUsage, ncclRemoteError)
            self.assertEqual([(f["trigger"], f["result"]) for f in logs[r].flights() if f["trigger"] != FLIGHT_EXIT],
                             [(FLIGHT_ERROR, [c[4] for c in logs[r].calls() if c[0] == 3][0])], logs[r].flights())
        doc, text = self.report()
        h = self.check_hang_basics(doc, 3)
        self.assertEqual((h["mismatched_ranks"], h["missing_ranks"]), ([1], []), h)
        failed = [c for r in logs for c in logs[r].calls() if c[0] == 3 and c[4] != 0]
        self.assertEqual(sorted(h["failed_ranks"]), sorted(r for r in logs if any(c[0] == 3 and c[4] for c in logs[r].calls())))
        self.assertTrue(failed)
        self.assertIn("desync at AllReduce #3 of comm", text)
        self.assertIn("rank 1 called AllReduce of 2048 float32 sum, the others AllReduce of 1024 float32 sum", text)

    def test_killed_rank(self):
        """Rank 1 dies by SIGKILL before AllReduce #5: its log is not closed and shows #4 last."""
        # calls 50 ms apart, the writer every 10 ms: the killed rank's log holds its calls
        self.start(3, ["--mode", "kill", "--rank", "1", "--at", "5", "--calls", "10", "--sleep-us", "50000"],
                   dict(HANG, NPKIT_FLUSH_MS="10"))
        self.wait_end()
        logs = logs_by_rank(self.trace)
        self.assertIsNone(logs[1].end)
        self.assertEqual([c[0] for c in logs[1].calls()], list(range(5)))
        doc, text = self.report()
        h = self.check_hang_basics(doc, 5)
        self.assertEqual((h["missing_ranks"], h["no_log_ranks"]), ([1], []), h)
        self.assertEqual(sorted(h["waiting_ranks"] + h["failed_ranks"]), [0, 2], h)
        r1 = [r for r in h["ranks"] if r["rank"] == 1][0]
        self.assertIn("was not closed", r1["where"][0])
        self.assertIn("rank 1 never entered AllReduce #5 of comm", text)

    def test_killed_rank_ring(self):
        """The same in ring mode: the dead rank wrote nothing, and is named as a rank without a log."""
        self.start(3, ["--mode", "kill", "--rank", "1", "--at", "5", "--calls", "10"],
                   dict(HANG, NPKIT_RING_MB="4"))
        self.wait_end()
        logs = logs_by_rank(self.trace)
        self.assertEqual(sorted(logs), [0, 2])
        for r in logs:
            self.assertTrue(logs[r].flags & LOG_F_RING)
        doc, text = self.report()
        h = self.check_hang_basics(doc, 5)
        self.assertEqual((h["missing_ranks"], h["no_log_ranks"]), ([1], [1]), h)
        self.assertEqual(sorted(h["waiting_ranks"] + h["failed_ranks"]), [0, 2], h)
        self.assertIn("rank 1 (no log) never entered AllReduce #5 of comm", text)

    def check_gpu_stall(self, kind, rank, seq, extra, where):
        self.start(3, ["--calls", "10"], dict(HANG, **{"FAKE_NCCL_STALL": "%s:%d:%d" % (kind, rank, seq)},
                                              **extra))
        self.wait_hang_lines(3)
        self.stop()
        lines = {l["rank"]: l for l in self.hang_lines()}
        self.assertEqual(sorted(lines), [0, 1, 2], lines)
        self.assertEqual({(l["op"], l["seq"]) for l in lines.values()}, {("AllReduce", seq)})
        self.assertIn(where, lines[rank]["where"])
        logs = logs_by_rank(self.trace)
        # the stalled rank's calls returned (NCCL's launch is asynchronous): it went on to #9
        self.assertEqual(max(c[0] for c in logs[rank].calls()), 9)
        doc, text = self.report()
        h = self.check_hang_basics(doc, seq)
        self.assertEqual((h["missing_ranks"], h["stuck_ranks"], h["waiting_ranks"]), ([], [rank], [0, 1, 2]), h)
        r = [x for x in h["ranks"] if x["rank"] == rank][0]
        self.assertEqual((r["last_entered"], r["last_completed"]), (9, seq - 1))
        self.assertIn(where, " ".join(r["where"]))
        self.assertIn("rank %d stuck inside AllReduce #%d of comm" % (rank, seq), text)

    def test_gpu_kernel_never_starts(self):
        self.check_gpu_stall("kernel", 1, 5, {}, "its kernel has not started on the GPU")

    def test_gpu_network_step_never_completes(self):
        self.check_gpu_stall("proxy", 2, 4, {"FAKE_NCCL_NET": "1"}, "waits for the network to finish")

    def test_named_once_per_stall(self):
        """Rank 1 pauses 2.5 timeouts before #3 and before #8: each stall is named once by ranks 0 and 2."""
        self.start(3, ["--mode", "pause", "--rank", "1", "--at", "3", "--at2", "8", "--pause-ms", str(2500 * HANG_S),
                       "--calls", "12"], HANG)
        self.wait_end()
        self.assertEqual(self.proc.returncode, 0, self.stderr()[-4000:])
        lines = sorted((l["rank"], l["seq"]) for l in self.hang_lines())
        self.assertEqual(lines, [(0, 3), (0, 8), (2, 3), (2, 8)], self.stderr())
        doc, _ = self.report()
        self.assertEqual(doc["hangs"], [])  # everything completed in the end
        self.assertNotIn("hang", [f["kind"] for f in doc["findings"]])


class Ring(FlightCase):
    def test_overwrites_counted(self):
        """A 1 MB ring and 15,000 calls: the log holds the newest calls, the rest counted as overwritten."""
        # 1,500 AllReduces, each followed by 9 recorded ncclCommCount: the fake's collectives cost
        # 0.4 ms each (their rendezvous through shared files), 10 ms under ThreadSanitizer, so
        # overflowing the ring (about 7,000 events) with AllReduces alone took minutes there
        calls = 1500
        self.start(2, ["--calls", str(calls), "--queries", "9"],
                   {"NPKIT_RING_MB": "1", "NPKIT_PLUGIN": "0", "NPKIT_CUPTI": "0", "NPKIT_OPS": "all"}, ready=False)
        self.wait_end()
        self.assertEqual(self.proc.returncode, 0, self.stderr()[-4000:])
        for r, lg in logs_by_rank(self.trace).items():
            self.assertTrue(lg.flags & LOG_F_RING)
            seqs = [c[0] for c in lg.calls()]
            self.assertGreater(len(seqs), 500)
            self.assertLess(len(seqs), calls)
            self.assertEqual(seqs, list(range(calls - len(seqs), calls)))  # the newest, in order, none missing
            last = lg.flights()[-1]
            self.assertEqual(last["trigger"], FLIGHT_EXIT)
            self.assertEqual(last["ring_bytes"], 1 << 20)
            self.assertGreaterEqual(last["overwritten"], calls - len(seqs))
            # every event recorded is in the ring or counted as overwritten; the snapshot and the FLIGHT
            # event appended after the count push out as many of the oldest as they take
            self.assertEqual(last["kept"] + last["overwritten"], lg.end[1], (last, lg.end))
            tail = last["inflight"] + 1
            before = [e for e in lg.events if e[0] not in (EV_INFLIGHT, EV_FLIGHT)]
            self.assertEqual(len(before) + tail, len(lg.events))
            self.assertTrue(last["kept"] - tail <= len(before) <= last["kept"], (len(before), last))

    def test_nothing_on_disk_then_dump_on_signal(self):
        """No file until NPKIT_DUMP_SIGNAL; the dump is written while the job goes on."""
        self.start(2, ["--calls", "3000", "--sleep-us", "1000", "--ready-after", "50"],
                   {"NPKIT_RING_MB": "16", "NPKIT_DUMP_SIGNAL": "SIGUSR1"})
        pids = self.ready_pids()
        self.assertEqual(glob.glob(os.path.join(self.trace, "*")), [])
        sent = time.time_ns()
        for pid in pids:
            os.kill(pid, signal.SIGUSR1)
        self.wait_until("the dumps", lambda: len(glob.glob(os.path.join(self.trace, "*.npkit"))) == 2)
        self.assertIsNone(self.proc.poll(), "the job ended before its dump was read")
        time.sleep(0.3)  # the rename is atomic; the check below reads a complete file
        for lg in logs_by_rank(self.trace).values():
            self.assertEqual([(f["trigger"], f["signal"]) for f in lg.flights()], [(FLIGHT_SIGNAL, signal.SIGUSR1)])
            self.assertIsNone(lg.end)
        self.wait_end()
        self.assertEqual(self.proc.returncode, 0, self.stderr()[-4000:])
        for lg in logs_by_rank(self.trace).values():
            f = lg.flights()
            self.assertEqual([x["trigger"] for x in f], [FLIGHT_SIGNAL, FLIGHT_EXIT])
            self.assertGreaterEqual(f[0]["time"], sent)
            seqs = [c[0] for c in lg.calls()]
            self.assertEqual(seqs, list(range(3000)))
            self.assertTrue(any(c[2] > f[0]["time"] for c in lg.calls()), "no call after the dump")
            self.assertIsNotNone(lg.end)

    def test_fatal_signal_dump(self):
        """Rank 1 segfaults at #5: its handler writes the ring and the unwritten events; it renders."""
        self.start(2, ["--mode", "segv", "--rank", "1", "--at", "5", "--calls", "10"],
                   {"NPKIT_RING_MB": "4", "NPKIT_FLUSH_MS": "600000"}, ready=False)
        self.wait_end()
        err = self.stderr()
        self.assertIn("npkit: fatal signal: the flight recorder's ring was written to", err)
        logs = logs_by_rank(self.trace)
        lg = logs[1]
        self.assertIsNone(lg.end)
        self.assertEqual([(f["trigger"], f["signal"]) for f in lg.flights()], [(FLIGHT_FATAL, signal.SIGSEGV)])
        # the writer never ran (NPKIT_FLUSH_MS): the calls come from the threads' buffers
        self.assertEqual([c[0] for c in lg.calls()], list(range(5)))
        info = subprocess.run([tl.tool(), "info", lg.path], capture_output=True, text=True)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)  # not closed
        out = self.path("crash.json")
        p = subprocess.run([tl.tool(), "json", lg.path, "-o", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.load(open(out))
        names = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "nccl_api"]
        self.assertEqual(names.count("ncclAllReduce"), 5)
        self.assertIn("npkit dump 1 (fatal_signal)", [e["name"] for e in doc["traceEvents"]])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
