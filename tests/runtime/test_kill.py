"""A process killed with SIGKILL loses nothing it had recorded: its event pool lives in a file of
/dev/shm (NPKIT_POOL_DIR), which outlives it, and the next reader recovers the events the writer
had not appended into the log, exactly once each.

- SIGKILL after N calls on 1 and 3 threads (with marks), the writer's regular pass never due: the
  log holds exactly N calls per thread, each communicator's sequence numbers 0..N-1 without gap
  or repeat, and the recovered counters equal the events in the log.
- SIGKILL inside the writer's write of an events block (a shim): cut in the middle (the torn
  block is removed and its events recovered) or after the block was whole (not recovered twice).
- Who recovers: npkit info, json, report, merge, and the library of a later process at its end;
  the pool file is gone afterwards and a second reading recovers nothing.
- A pool whose process still runs is left alone; NPKIT_POOL_DIR=none keeps the pool in private
  memory (no pool file, a note in the log says why).

- NPKIT_POOL_DIR=trace or a folder on a disk: the pool file is there and recovered the same way,
  except after a restart of the host (another boot id); a trace folder on NFS (a statfs shim) puts
  it in /dev/shm and says why in the log.

Arguments: KILL_JOB LIB TOOL FAKES SHIM STATFS_SHIM"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from signals_lib import preload_env  # noqa: E402

KILL_JOB, LIB, TOOL, FAKES, SHIM, STATFS_SHIM = sys.argv[1:7]
# which of the tests: "metrics" (live metrics), "pool" (the event pool), "rest", or all of them;
# ctest runs the three as tests of their own, each well inside its time limit under TSan
PART = sys.argv[7] if len(sys.argv) > 7 else "all"
SANITIZED = bool(os.environ.get("NPKIT_SANITIZE"))


def env_for(trace_dir, preload=(LIB,), **extra):
    return preload_env(LIB, trace_dir, FAKES, preload=preload, clean=True, NPKIT_PLUGIN="0", **extra)


def tool(*args):
    return subprocess.run([TOOL] + list(args), capture_output=True, text=True, timeout=120)


def pool_of(log):
    """The pool file a log names in its POOL block (the first block after the 256-byte header)."""
    with open(log, "rb") as f:
        data = f.read(256 + 16 + 256)
    magic, btype = int.from_bytes(data[256:260], "little"), int.from_bytes(data[260:262], "little")
    if magic != 0x424b504e or btype != 11:
        return None
    return data[256 + 16 + 8:256 + 16 + 256].split(b"\0")[0].decode()


def api_calls(trace_path):
    with open(trace_path) as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e.get("cat") == "nccl_api" and e.get("ph") == "X"]


def allreduce_seqs(trace_path):
    """The sequence numbers of the ncclAllReduce calls of a trace, per communicator and rank."""
    by_comm = {}
    for e in api_calls(trace_path):
        if e["name"] == "ncclAllReduce":
            by_comm.setdefault(e["args"]["comm_id"] + str(e["args"]["comm_rank"]), []).append(e["args"]["seq"])
    return by_comm


class Kill(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="npkit_kill_")
        # a folder of /dev/shm of its own: the library of every other process that ends on this
        # host recovers the pools of dead processes it finds in /dev/shm itself
        self.pool_dir = tempfile.mkdtemp(prefix="npkit_kill_", dir="/dev/shm")
        self.addCleanup(shutil.rmtree, self.pool_dir, True)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.n = 0

    def job(self, calls, threads=1, marks=False, wait=False, clean=False, arm=None, crash=False, end=None,
            count=None, preload=(LIB,), **settings):
        self.n += 1
        d = os.path.join(self.tmp, "run%d" % self.n)
        os.makedirs(d)
        trace, ready = os.path.join(d, "trace"), os.path.join(d, "ready")
        args = [KILL_JOB, "--calls", str(calls), "--threads", str(threads), "--ready", ready]
        if marks:
            args.append("--marks")
        if wait:
            args.append("--wait")
        if clean:
            args.append("--exit")
        if arm:
            args += ["--arm", arm]
        if crash:
            args.append("--abort")
        if end:
            args += ["--end", end]
        if count:
            args += ["--count", count]
        # the writer's regular pass never comes: with the time-stamp counter it would also wake
        # every second to compare clocks and append what it has, on a slow host before the kill
        settings.setdefault("NPKIT_FLUSH_MS", "3600000")
        settings.setdefault("NPKIT_CLOCK", "realtime")
        settings.setdefault("NPKIT_POOL_DIR", self.pool_dir)
        p = subprocess.Popen(args, env=env_for(trace, preload, **settings), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        return p, trace, ready

    def finished(self, p, want_rc):
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, want_rc, err[-3000:])
        self.assertEqual(out, "")
        for report in ("ThreadSanitizer", "AddressSanitizer", "LeakSanitizer", "runtime error:"):
            self.assertNotIn(report, err)
        return err

    def one_log(self, trace):
        logs = glob.glob(os.path.join(trace, "*.npkit"))
        self.assertEqual(len(logs), 1, logs)
        return logs[0]

    def check_counts(self, log, calls, threads, stderr_has="recovered", pool_dir=None):
        """npkit info recovers; then the log holds exactly calls x threads AllReduces, numbered
        0..calls-1 on each communicator, its counters agree with its events, and it is marked."""
        pool = pool_of(log)
        self.assertTrue(pool and pool.startswith((pool_dir or self.pool_dir) + "/npkit-pool-"), pool)
        info = tool("info", log)
        self.assertEqual(info.returncode, 3, info.stderr)  # not closed cleanly: it was killed
        if stderr_has:
            self.assertIn(stderr_has, info.stderr)
        self.assertFalse(os.path.exists(pool), "the pool file is removed once recovered")
        m = re.search(r"^  ncclAllReduce\s+(\d+)\s+0\s", info.stdout, re.M)
        self.assertIsNotNone(m, info.stdout)
        self.assertEqual(int(m.group(1)), calls * threads)
        ev = re.search(r"^events\s+(\d+) \(recorded (\d+), dropped (\d+)\)", info.stdout, re.M)
        self.assertEqual(int(ev.group(1)), int(ev.group(2)), "recorded counters = events in the log")
        self.assertEqual(ev.group(3), "0")
        self.assertRegex(info.stdout, r"state +not closed cleanly: the process was killed; \d+ events")
        again = tool("info", log)
        self.assertNotIn("recovered", again.stderr, "a second reading recovers nothing")
        self.assertEqual(again.stdout.split("\n")[2:], info.stdout.split("\n")[2:])
        out = os.path.join(os.path.dirname(log), "t.json")
        js = tool("json", log, "-o", out)
        self.assertEqual(js.returncode, 0, js.stderr)
        by_comm = allreduce_seqs(out)
        self.assertEqual(len(by_comm), threads)
        for seqs in by_comm.values():
            self.assertEqual(sorted(seqs), list(range(calls)), "each call once, none missing")
        return info

    def test_sigkill_after_calls(self):
        # below one chunk (nothing finished for the writer's quick pass), over several, on 1 and 3
        # threads; the writer's regular pass at its default (200 ms: part may be in the log
        # already), at 60 s and never
        for flush in ("200", "60000", "3600000"):
            for threads, calls, marks in ((1, 300, False), (1, 2500, False), (3, 1800, True)):
                with self.subTest(flush=flush, threads=threads, calls=calls):
                    p, trace, ready = self.job(calls, threads, marks, NPKIT_FLUSH_MS=flush)
                    self.finished(p, -signal.SIGKILL)
                    with open(ready) as f:
                        self.assertEqual(int(f.read()), calls * threads)
                    self.check_counts(self.one_log(trace), calls, threads,
                                      stderr_has="killed" if flush == "200" else "recovered")

    def test_sigkill_from_another_thread_amid_calls(self):
        # every call completed when another thread killed the process is recovered, and at most
        # the one in flight besides (its wrapper stored it, the program had not counted it yet)
        count = os.path.join(self.tmp, "count")
        p, trace, _ = self.job(1500, 2, end="kill_thread", count=count)
        self.finished(p, -signal.SIGKILL)
        with open(count, "rb") as f:
            page = f.read(16)
        done = int.from_bytes(page[:8], "little")
        self.assertGreaterEqual(done, 200)
        log = self.one_log(trace)
        info = tool("info", log)
        self.assertEqual(info.returncode, 3, info.stderr)
        self.assertIn("killed", info.stderr)
        out = os.path.join(self.tmp, "k.json")
        self.assertEqual(tool("json", log, "-o", out).returncode, 0)
        by_comm = allreduce_seqs(out)
        counts = [len(v) for v in by_comm.values()]
        self.assertEqual(len(counts), 3, counts)
        counts.remove(1500)
        counts.remove(1500)
        self.assertIn(counts[0], (done, done + 1))
        for seqs in by_comm.values():
            self.assertEqual(sorted(seqs), list(range(len(seqs))))

    def test_torn_pool_is_refused_clearly(self):
        # a pool file cut short, or with a header that is not a pool's: one clear line, no crash,
        # the log stays readable with what the writer had put in it, the pool file stays
        for damage, says in (("cut", "the pool file's parts do not fit its size"), ("magic", "not an event pool file")):
            with self.subTest(damage=damage):
                p, trace, _ = self.job(700)
                self.finished(p, -signal.SIGKILL)
                log = self.one_log(trace)
                pool = pool_of(log)
                if damage == "cut":
                    os.truncate(pool, os.path.getsize(pool) // 2)
                else:
                    with open(pool, "r+b") as f:
                        f.write(b"NOTAPOOL")
                for cmd in (["info", log], ["json", log, "-o", os.path.join(trace, "x.json")], ["report", trace]):
                    r = tool(*cmd)
                    self.assertIn(r.returncode, (0, 3), r.stderr)  # 3: npkit info of a log not closed
                    self.assertIn("warning: cannot recover the events of the killed process", r.stderr)
                    self.assertIn(says, r.stderr)
                self.assertTrue(os.path.exists(pool))
                info = tool("info", log)
                self.assertRegex(info.stdout, r"state +not closed cleanly \(no END block")

    def test_crash_without_flight_recorder(self):
        # abort(): SIGABRT's default action ends the process as SIGKILL does, no handler of ours runs
        p, trace, _ = self.job(2200, 2, crash=True)
        self.finished(p, -signal.SIGABRT)
        self.check_counts(self.one_log(trace), 2200, 2)

    # ---- live metrics (NPKIT_METRICS): the last dump, however the process ends ----

    def metrics_job(self, calls, threads, **kw):
        mdir = os.path.join(self.tmp, "metrics%d" % (self.n + 1))
        p, trace, ready = self.job(calls, threads, NPKIT_METRICS="inspector,prometheus", NPKIT_METRICS_DIR=mdir,
                                   NPKIT_METRICS_INTERVAL_S="1", NPKIT_CUPTI="0", **kw)
        return p, trace, ready, mdir

    @staticmethod
    def inspector_ops(mdir):
        """{(comm id, rank, seq): line} of the one Inspector file of a folder, and its dump_stats
        per (comm id, rank) (ncclCommInitAll puts every rank of the threads' communicator here)."""
        files = glob.glob(os.path.join(mdir, "*.log"))
        ops, stats = {}, []
        for path in files:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    o = json.loads(line)
                    if "dump_stats" in o:
                        stats.append(((o["header"]["id"], o["header"]["rank"]), o["dump_stats"]))
                    else:
                        key = (o["header"]["id"], o["header"]["rank"], o["coll_perf"]["coll_sn"])
                        assert key not in ops, key
                        ops[key] = o
        return files, ops, stats

    def check_complete(self, ops, calls, threads):
        by_comm = {}
        for cid, rank, sn in ops:
            by_comm.setdefault((cid, rank), []).append(sn)
        self.assertEqual(len(by_comm), threads)
        for sns in by_comm.values():
            self.assertEqual(sorted(sns), list(range(calls)))
        self.assertTrue(all(o["coll_perf"]["coll"] == "AllReduce" and o["coll_perf"]["coll_timing_source"] == "collective_cpu"
                            for o in ops.values()))

    def test_metrics_last_dump_on_every_exit(self):
        # the last dump is written at the finish, which _exit, a signal handler's _exit and a
        # thread's _exit run too (exit_calls.c): every call is a line, and the textfile counts them
        for how, rc in (("exit", 7), ("_exit", 7), ("handler", 9), ("thread", 7)):
            with self.subTest(how=how):
                p, _, _, mdir = self.metrics_job(700, 2, end=how)
                self.finished(p, rc)
                files, ops, stats = self.inspector_ops(mdir)
                self.assertEqual(len(files), 1, files)
                self.check_complete(ops, 700, 2)
                for cid in {c for c, _ in stats}:
                    self.assertEqual(sum(s["coll_records"] for c, s in stats if c == cid), 700)
                proms = glob.glob(os.path.join(mdir, "*.prom"))
                self.assertEqual(len(proms), 1, proms)
                with open(proms[0], encoding="utf-8") as f:
                    counts = re.findall(r"^npkit_collectives_total\{.*\} (\S+)$", f.read(), re.M)
                self.assertEqual(counts, ["700", "700"])
                self.assertEqual(glob.glob(os.path.join(mdir, "*.partial")), [])

    def test_metrics_after_sigkill(self):
        # SIGKILL leaves no last dump: `npkit metrics` on the log (its pool recovered) writes what
        # the live dumps missed; what they wrote before is the same
        p, trace, _, mdir = self.metrics_job(2500, 2, NPKIT_FLUSH_MS="20")
        self.finished(p, -signal.SIGKILL)
        _, live, _ = self.inspector_ops(mdir)
        self.assertLess(len(live), 5000, "no last dump after a SIGKILL")
        after = os.path.join(self.tmp, "after")
        r = tool("metrics", trace, "-o", after)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, ops, _ = self.inspector_ops(after)
        self.check_complete(ops, 2500, 2)
        for k, o in live.items():
            self.assertEqual(o["coll_perf"], ops[k]["coll_perf"])

    def test_metrics_dumped_while_running(self):
        # a process that waits after its calls: the interval's dump has them all before the kill
        p, trace, ready, mdir = self.metrics_job(900, 1, wait=True, NPKIT_FLUSH_MS="20")
        deadline = time.time() + 30
        ops = {}
        while time.time() < deadline and len(ops) < 900:
            time.sleep(0.2)
            _, ops, _ = self.inspector_ops(mdir)
        p.kill()
        self.finished(p, -signal.SIGKILL)
        self.check_complete(ops, 900, 1)

    def test_metrics_min_bytes(self):
        # NPKIT_METRICS_MIN_BYTES: kill_job's calls are 64 bytes (16 floats); at 64 every call is a
        # line, above it none is and the textfile and the exit line count them instead; a value
        # that is not a number is said and 0 used
        for value, lines, said in (("64", 300, None), ("65", 0, "(and 300 below NPKIT_METRICS_MIN_BYTES)"),
                                   ("8k", 300, "NPKIT_METRICS_MIN_BYTES='8k' is not a whole number")):
            with self.subTest(value=value):
                p, _, _, mdir = self.metrics_job(300, 1, end="exit", NPKIT_METRICS_MIN_BYTES=value)
                err = self.finished(p, 7)
                _, ops, _ = self.inspector_ops(mdir)
                self.assertEqual(len(ops), lines)
                if said:
                    self.assertIn(said, err)
                with open(glob.glob(os.path.join(mdir, "*.prom"))[0], encoding="utf-8") as f:
                    text = f.read()
                self.assertRegex(text, r"(?m)^npkit_collectives_total\{.*\} %d$" % lines)
                below = re.findall(r"(?m)^npkit_collectives_below_min_total\{.*\} (\d+)$", text)
                self.assertEqual(below, [] if value == "8k" else [str(300 - lines)])

    def test_metrics_bad_settings(self):
        # a word NPKIT_METRICS does not know, a folder that is a file, a metrics file that cannot
        # be written: one clear line each, the job and its log as without metrics
        blocker = os.path.join(self.tmp, "a_file")
        open(blocker, "w").close()
        for settings, said in (({"NPKIT_METRICS": "inspector,grafana"},
                                "NPKIT_METRICS='inspector,grafana': 'grafana' is not one of inspector, prometheus, all, off"),
                               ({"NPKIT_METRICS": "all", "NPKIT_METRICS_DIR": os.path.join(blocker, "m")},
                                "NPKIT_METRICS_DIR '%s': Not a directory; no live metrics" % os.path.join(blocker, "m"))):
            with self.subTest(settings=settings):
                p, trace, _ = self.job(300, 1, end="exit", NPKIT_CUPTI="0", **settings)
                err = self.finished(p, 7)
                self.assertIn(said, err)
                info = tool("info", self.one_log(trace))
                self.assertEqual(info.returncode, 0, info.stderr)
                self.assertRegex(info.stdout, r"state +closed cleanly")
                self.assertRegex(info.stdout, r"(?m)^  ncclAllReduce\s+300\s+0\s")
                self.assertEqual(glob.glob(os.path.join(trace, "*.prom")), [])
        # the Inspector file's name taken by a folder: that file fails, the textfile is written
        mdir = os.path.join(self.tmp, "m_eisdir")
        os.makedirs(mdir)
        p, trace, ready = self.job(300, 1, wait=True, NPKIT_CUPTI="0", NPKIT_METRICS="all", NPKIT_METRICS_DIR=mdir)
        deadline = time.time() + 30
        while not os.path.exists(ready) and time.time() < deadline:
            time.sleep(0.05)
        host, pid = os.path.basename(self.one_log(trace))[len("npkit_"):-len(".npkit")].rsplit("_", 1)
        os.makedirs(os.path.join(mdir, "%s-pid%s.log" % (host, pid)))
        p.send_signal(signal.SIGTERM)
        err = self.finished(p, -signal.SIGTERM)
        self.assertRegex(err, r"live metrics: the last dump: .*\.log: Is a directory")
        with open(glob.glob(os.path.join(mdir, "*.prom"))[0], encoding="utf-8") as f:
            self.assertRegex(f.read(), r"(?m)^npkit_collectives_total\{.*\} 300$")

    def test_every_way_to_exit(self):
        # _exit and _Exit run no exit handler: the library's wrappers finish first, as exit() does;
        # the log is closed cleanly with every call and the trace rendered, the status is the
        # caller's, and the pool file is gone
        for how, rc in (("exit", 7), ("_exit", 7), ("_Exit", 7), ("quick_exit", 7), ("handler", 9), ("atexit", 4),
                        ("fork", 7), ("vfork", 7), ("thread", 7)):
            with self.subTest(how=how):
                p, trace, _ = self.job(1700, 2, marks=True, end=how)
                err = self.finished(p, rc)
                if how == "quick_exit":
                    self.assertIn("kill_job: at_quick_exit handler", err)
                log = self.one_log(trace)
                pool = pool_of(log)
                self.assertTrue(pool)
                self.assertFalse(os.path.exists(pool))
                info = tool("info", log)
                self.assertEqual(info.returncode, 0, info.stderr)
                self.assertRegex(info.stdout, r"state +closed cleanly")
                m = re.search(r"^  ncclAllReduce\s+(\d+)\s+0\s", info.stdout, re.M)
                self.assertEqual(int(m.group(1)), 1700 * 2)
                traces = glob.glob(os.path.join(trace, "*.json"))
                self.assertEqual(len(traces), 1, traces)
                by_comm = allreduce_seqs(traces[0])
                self.assertEqual(sorted(len(v) for v in by_comm.values()), [1700, 1700])
                for seqs in by_comm.values():
                    self.assertEqual(sorted(seqs), list(range(1700)))

    def test_exit_from_a_thread_while_another_calls_nccl(self):
        # Open MPI's progress thread calls _exit while the main thread is in NCCL (on a communicator
        # of one rank, after the two threads' 1500 calls each): the log is
        # closed cleanly, every call completed before _exit was called is in it, at most those
        # completed until the process was gone (and the one in flight), each once, in order
        # early_thread: that thread was created before the library started (Open MPI's is, in
        # MPI_Init) and has not synchronised with the main thread since
        for how in ("nccl_thread", "early_thread"):
            with self.subTest(how=how):
                self.exit_amid_calls(how)

    def exit_amid_calls(self, how):
        count = os.path.join(self.tmp, "count_" + how)
        p, trace, _ = self.job(1500, 2, end=how, count=count)
        self.finished(p, 7)
        with open(count, "rb") as f:
            page = f.read(16)
        done, at_exit = int.from_bytes(page[:8], "little"), int.from_bytes(page[8:16], "little")
        self.assertGreaterEqual(at_exit, 200)
        log = self.one_log(trace)
        info = tool("info", log)
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertRegex(info.stdout, r"state +closed cleanly")
        traces = glob.glob(os.path.join(trace, "*.json"))
        self.assertEqual(len(traces), 1, traces)
        by_comm = allreduce_seqs(traces[0])
        counts = [len(v) for v in by_comm.values()]
        self.assertEqual(len(counts), 3, counts)
        counts.remove(1500)
        counts.remove(1500)
        self.assertGreaterEqual(counts[0], at_exit)
        self.assertLessEqual(counts[0], done + 1)
        for seqs in by_comm.values():
            self.assertEqual(sorted(seqs), list(range(len(seqs))))

    def test_lone_rank_exit_does_not_wait_for_the_others(self):
        # a rank of a 2-rank job (torchrun's variables) that calls _exit while the other runs on:
        # it finishes with the ranks of its host that stop too (none), it does not wait for the
        # other until the deadline (20 s)
        t0 = time.time()
        p, trace, _ = self.job(300, end="_exit", NPKIT_LOG_LEVEL="debug", RANK="1", WORLD_SIZE="2", LOCAL_RANK="1",
                               LOCAL_WORLD_SIZE="2", TORCHELASTIC_RUN_ID="npkit-lone-%d" % os.getpid())
        err = self.finished(p, 7)
        self.assertLess(time.time() - t0, 10)
        self.assertRegex(err, r"finished on a call of _exit: the log was closed after")
        m = re.search(r"waited ([\d.]+) ms for the other ranks of this host", err)
        self.assertIsNotNone(m, err)
        self.assertLess(float(m.group(1)), 2000)
        info = tool("info", self.one_log(trace))
        self.assertEqual(info.returncode, 0, info.stderr)
        m = re.search(r"^  ncclAllReduce\s+(\d+)\s+0\s", info.stdout, re.M)
        self.assertEqual(int(m.group(1)), 300)

    def test_messages_to_a_stderr_nobody_reads(self):
        # the ranks of `timeout mpirun` outlive mpirun, and their stderr is a pipe to it: the
        # library's messages (every debug line, the one of the trace written at the end) must not
        # end the process with SIGPIPE, neither at exit nor at _exit, nor midway through its finish
        for end, rc in ((None, 0), ("_exit", 7)):
            with self.subTest(end=end):
                p, trace, _ = self.job(1200, 2, clean=end is None, end=end, NPKIT_LOG_LEVEL="debug")
                p.stderr.close()  # before the library's first message
                out, _ = p.communicate(timeout=120)
                self.assertEqual(p.returncode, rc, "the job's own status, not SIGPIPE's (-13)")
                self.assertEqual(out, "")
                log = self.one_log(trace)
                self.assertFalse(os.path.exists(pool_of(log)))
                info = tool("info", log)
                self.assertEqual(info.returncode, 0, info.stderr)
                m = re.search(r"^  ncclAllReduce\s+(\d+)\s+0\s", info.stdout, re.M)
                self.assertEqual(int(m.group(1)), 1200 * 2)
                traces = glob.glob(os.path.join(trace, "*.json"))
                self.assertEqual(len(traces), 1, traces)
                self.assertEqual(sum(len(v) for v in allreduce_seqs(traces[0]).values()), 1200 * 2)

    def kill_in_write(self, mode):
        # the job arms the shim after its last call and returns from main: the library's write of
        # the events still in the pool at exit is where the process dies
        armed = os.path.join(self.tmp, "armed_%s" % mode)
        p, trace, ready = self.job(3001, 1, arm=armed, preload=(SHIM, LIB), KILL_SHIM_MODE=mode,
                                   KILL_SHIM_ARMED=armed)
        self.finished(p, -signal.SIGKILL)
        self.assertTrue(os.path.exists(armed))
        return self.one_log(trace)

    def test_sigkill_inside_a_torn_write(self):
        log = self.kill_in_write("torn")
        info = self.check_counts(log, 3001, 1, stderr_has="after removing the incomplete block")
        self.assertNotIn("TRUNCATED", info.stdout)

    def test_sigkill_after_a_whole_write(self):
        log = self.kill_in_write("after")
        self.check_counts(log, 3001, 1, stderr_has="killed")

    def test_every_reader_recovers(self):
        for cmd in ("json", "report", "merge"):
            p, trace, _ = self.job(1200)
            self.finished(p, -signal.SIGKILL)
            log = self.one_log(trace)
            pool = pool_of(log)
            self.assertTrue(os.path.exists(pool))
            args = {"json": ["json", log, "-o", os.path.join(trace, "x.json")],
                    "report": ["report", trace], "merge": ["merge", trace, "-o", os.path.join(self.tmp, "m.json")]}[cmd]
            r = tool(*args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stderr, r"npkit %s: recovered \d+ events of a process that was killed" % cmd)
            self.assertFalse(os.path.exists(pool), cmd)
            self.check_counts(log, 1200, 1, stderr_has=None)

    def test_library_of_a_later_process_recovers(self):
        p, trace, _ = self.job(1500)
        self.finished(p, -signal.SIGKILL)
        dead = self.one_log(trace)
        pool = pool_of(dead)
        q, trace2, _ = self.job(10, clean=True)
        err = self.finished(q, 0)
        self.assertNotIn("recovered", err)  # other processes' pools: debug lines only
        self.assertFalse(os.path.exists(pool))
        self.check_counts(dead, 1500, 1, stderr_has=None)
        p, trace, _ = self.job(1500)
        self.finished(p, -signal.SIGKILL)
        dead = self.one_log(trace)
        pool = pool_of(dead)
        q, trace2, _ = self.job(10, clean=True, NPKIT_LOG_LEVEL="debug")
        err = self.finished(q, 0)
        self.assertRegex(err, r"npkit: debug: recovered \d+ events of a killed process \(pid %d\) into %s"
                         % (p.pid, re.escape(dead)))
        self.assertFalse(os.path.exists(pool))
        info = self.check_counts(dead, 1500, 1, stderr_has=None)
        self.assertIn("by library", info.stdout)
        live_pool = pool_of(self.one_log(trace2))
        self.assertTrue(live_pool)
        self.assertFalse(os.path.exists(live_pool), "a closed log's pool is removed")

    def test_remains_of_a_pool_being_created_are_removed(self):
        # a process killed while it created its pool leaves a file of a pool's name without a
        # header: a later process removes it without a word once it is a minute old, and leaves a
        # younger one alone (it may be a pool being created right now)
        name = "npkit-pool-%d-node9-%d-" % (os.getuid(), 99999)
        old, young = os.path.join(self.pool_dir, name + "1"), os.path.join(self.pool_dir, name + "2")
        for path in (old, young):
            with open(path, "wb") as f:
                f.write(bytes(8192))
        os.utime(old, (time.time() - 120, time.time() - 120))
        q, _, _ = self.job(10, clean=True)
        err = self.finished(q, 0)
        self.assertNotIn("pool", err)
        self.assertFalse(os.path.exists(old))
        self.assertTrue(os.path.exists(young))

    def test_pool_of_a_removed_log_is_removed(self):
        # the trace folder of a killed job deleted: the next process's library removes the pool
        # (its memory back), says nothing about it, and no later process tries it again
        p, trace, _ = self.job(800)
        self.finished(p, -signal.SIGKILL)
        pool = pool_of(self.one_log(trace))
        shutil.rmtree(trace)
        q, _, _ = self.job(10, clean=True)
        err = self.finished(q, 0)
        self.assertNotIn("recover", err)
        self.assertFalse(os.path.exists(pool))
        self.assertEqual(os.listdir(self.pool_dir), [])

    def test_pool_out_of_reach_is_explained(self):
        # `npkit info` on a login node of a log whose process was killed on a compute node: the pool
        # is in that node's memory, and info names the host and what moves its events; on the
        # process's own host a pool that is gone (removed, a reboot) is said to be lost
        p, trace, _ = self.job(500)
        self.finished(p, -signal.SIGKILL)
        log = self.one_log(trace)
        pool = pool_of(log)
        with open(log, "rb") as f:
            data = bytearray(f.read())
        data[64:128] = b"node-elsewhere".ljust(64, b"\0")  # npkit_log_header.host
        other = os.path.join(self.tmp, "copy_from_elsewhere.npkit")
        with open(other, "wb") as f:
            f.write(data)
        os.rename(pool, pool + ".away")
        try:
            info = tool("info", other)
            self.assertEqual(info.returncode, 3, info.stderr)
            self.assertRegex(info.stdout, r"event pool +%s \(\d+ MB, kept in memory beyond a kill\): not on this host; it "
                                          r"is in the memory of node-elsewhere, where any npkit command on this log"
                                          % re.escape(pool))
            self.assertNotIn("recovered", info.stderr)
            info = tool("info", log)
            self.assertEqual(info.returncode, 3, info.stderr)
            self.assertRegex(info.stdout, r": gone \(removed, or the host was restarted\): the events after the "
                                          r"writer's last pass are lost")
        finally:
            os.rename(pool + ".away", pool)
        self.check_counts(log, 500, 1)  # the pool back in place: recovered as ever

    def test_live_process_is_left_alone(self):
        p, trace, ready = self.job(500, wait=True)
        deadline = time.time() + 60
        while not os.path.exists(ready):
            self.assertLess(time.time(), deadline)
            time.sleep(0.02)
        log = self.one_log(trace)
        pool = pool_of(log)
        # what the pool holds: the calling thread's 500 calls go to the log once it ended (its
        # chunk finished) and the writer took the chunk, which it does on its own thread, so
        # possibly after the ready file; the main thread's ncclCommInitAll stays in the pool
        line = r"^event pool +%s \(64 MB, kept in memory beyond a kill\): (\d+) events on (\d+) threads not in " \
               r"the log yet; its process \(pid %d\) runs$" % (re.escape(pool), p.pid)
        deadline = time.time() + 60
        while True:
            r = tool("info", log)
            self.assertNotIn("recovered", r.stderr)
            self.assertTrue(os.path.exists(pool), "the pool of a running process stays")
            m = re.search(line, r.stdout, re.M)
            self.assertIsNotNone(m, r.stdout)
            if (int(m.group(1)), int(m.group(2))) != (501, 2) or time.time() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual((int(m.group(1)), int(m.group(2))), (1, 1), r.stdout)
        p.kill()
        self.finished(p, -signal.SIGKILL)
        self.check_counts(log, 500, 1, stderr_has="killed")
        self.assertRegex(tool("info", log).stdout, r"event pool +.*: gone \(recovered\)")

    def test_pool_in_private_memory(self):
        p, trace, _ = self.job(300, NPKIT_POOL_DIR="none", NPKIT_LOG_LEVEL="debug")
        err = self.finished(p, -signal.SIGKILL)
        self.assertIn("event pool in private memory (NPKIT_POOL_DIR=none)", err)
        self.assertIsNone(pool_of(self.one_log(trace)))
        self.assertEqual(os.listdir(self.pool_dir), [])

    def test_pool_beside_the_log_or_on_a_disk(self):
        # the trace folder (NPKIT_POOL_DIR=trace) and another folder, both on this machine's disk
        # (not a memory file system): the pool is there and gives back every call
        disk = os.path.join(self.tmp, "pools")
        os.makedirs(disk)
        for setting in ("trace", disk):
            with self.subTest(setting=setting):
                p, trace, ready = self.job(2500, 2, NPKIT_POOL_DIR=setting)
                self.finished(p, -signal.SIGKILL)
                log = self.one_log(trace)
                where = trace if setting == "trace" else disk
                self.check_counts(log, 2500, 2, pool_dir=where)
                self.assertEqual(glob.glob(os.path.join(where, "npkit-pool-*")), [])
                # the clean end of another job removes its own pool there
                p, trace, _ = self.job(300, NPKIT_POOL_DIR=setting, clean=True)
                self.finished(p, 0)
                self.assertEqual(glob.glob(os.path.join(trace if setting == "trace" else disk, "npkit-pool-*")), [])

    def test_pool_on_a_disk_from_before_a_restart_is_not_recovered(self):
        # a pool file on a disk outlives a restart of its host, holding only what writeback had
        # reached: a pool of another boot (boot_id at offset 1208 of the header, pool_file.h) is
        # removed with a message, its events not taken
        p, trace, _ = self.job(2500, NPKIT_POOL_DIR="trace")
        self.finished(p, -signal.SIGKILL)
        log = self.one_log(trace)
        pool = pool_of(log)
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        with open(pool, "r+b") as f:
            f.seek(1208)
            self.assertEqual(f.read(40).split(b"\0")[0].decode(), boot)
            f.seek(1208)
            f.write(b"00000000-1111-2222-3333-444444444444\0")
        info = tool("info", log)
        self.assertIn("was written before its host restarted", info.stderr)
        self.assertNotRegex(info.stderr, r"recovered \d+ events")
        self.assertFalse(os.path.exists(pool))
        self.assertEqual(tool("info", log).stderr, "", "said once: the pool is gone")

    def test_pool_of_a_trace_folder_on_nfs_goes_to_dev_shm(self):
        # a shared mapping of a file on NFS would be written back over the network: the pool goes to
        # /dev/shm, and the log says why
        p, trace, ready = self.job(1200, NPKIT_POOL_DIR="trace", NPKIT_LOG_LEVEL="debug",
                                   preload=(STATFS_SHIM, LIB), STATFS_SHIM_NFS_DIR=os.path.join(self.tmp, "run1"))
        err = self.finished(p, -signal.SIGKILL)
        self.assertRegex(err, r"event pool in /dev/shm: .*/run1/trace is on NFS, a network file system")
        log = self.one_log(trace)
        self.assertEqual(glob.glob(os.path.join(trace, "npkit-pool-*")), [])
        # another process's library may recover it first (any that ends on this host scans /dev/shm)
        pool = pool_of(log)
        self.assertTrue(pool.startswith("/dev/shm/npkit-pool-"), pool)
        self.check_counts(log, 1200, 1, stderr_has=None, pool_dir="/dev/shm")
        self.assertRegex(tool("info", log).stdout, r"event pool in /dev/shm: .* is on NFS")


def part_of(test_id):
    name = test_id.rsplit(".", 1)[-1]
    if name.startswith("test_metrics_"):
        return "metrics"
    return "pool" if any(w in name for w in ("pool", "recover", "left_alone", "torn")) else "rest"


if __name__ == "__main__":
    if PART not in ("all", "metrics", "pool", "rest"):
        sys.exit("test_kill.py: the part is all, metrics, pool or rest, not %r" % PART)
    tests = unittest.defaultTestLoader.loadTestsFromTestCase(Kill)
    suite = unittest.TestSuite(t for t in tests if PART in ("all", part_of(t.id())))
    if suite.countTestCases() == 0:
        sys.exit("test_kill.py: no test in part %r" % PART)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
