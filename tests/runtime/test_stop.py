"""Jobs stopped from outside keep their traces.

- Under the real mpirun, plain `timeout -s TERM 3 mpirun ...` (no --foreground: the ranks end
  through Open MPI's _exit), ten runs: every rank's trace holds every call the rank completed.
- Under the real mpirun: a 2-rank job that keeps calling ncclAllReduce is stopped the way
  `timeout --foreground -s TERM T mpirun ...` stops it (SIGTERM to mpirun, which sends its ranks
  SIGCONT, SIGTERM one second later, SIGKILL one second after that, or as soon as a rank exits),
  ten runs in a row: every rank's log is closed cleanly and its trace is complete, valid JSON
  (in the sanitizer builds: three smaller runs, two seconds between the signals).
- A stop signal aimed at one thread of a process (tgkill): the library's writer, its CUPTI
  flusher (fake CUPTI), NCCL's proxy thread, an application thread, the main thread.
- A Slurm-like stop: SIGTERM to every rank at once, SIGKILL after a grace period.
- A process killed by SIGKILL (no trace), or while it wrote its trace (a cut .json.partial): the
  next `npkit report` or `npkit merge`, and the launcher script, render the trace and say so; the
  trace of a process that still runs, or that was asked for none, is left alone.

Arguments: STOP_JOB SIGNAL_VICTIM LIB TOOL FAKES MPIRUN FAKE_CUPTI LAUNCHER"""
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
import signals_lib as sl  # noqa: E402

STOP_JOB, VICTIM, LIB, TOOL, FAKES, MPIRUN, FAKE_CUPTI, LAUNCHER = sys.argv[1:9]
SANITIZED = bool(os.environ.get("NPKIT_SANITIZE"))
# Calls per second are bounded by the fake NCCL's latency: tens of thousands of events per rank
# when the signal comes, as in the jobs the stop must survive.  The sanitizer builds check the same
# paths for races and bad accesses, not the time budget: rendering is some hundred times slower
# under ThreadSanitizer, so they run fewer, smaller jobs with two seconds between the signals.
RUNS = 3 if SANITIZED else 10
LATENCY_US = "2000" if SANITIZED else "2"
READY_AFTER = 300 if SANITIZED else 2000
MCA = ["--mca", "odls_base_sigkill_timeout", "2"] if SANITIZED else []
SANITIZER_REPORTS = ("ThreadSanitizer", "AddressSanitizer", "LeakSanitizer", "runtime error:")


def assert_no_sanitizer_report(test, err, what):
    for bad in SANITIZER_REPORTS:
        test.assertNotIn(bad, err, "%s: %s" % (what, err[-4000:]))
FINISHED = re.compile(r"finished on a stop signal: the log was closed after ([\d.]+) ms, "
                      r"the trace written after ([\d.]+) ms")


def slurp(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def tool(*args):
    return subprocess.run([TOOL] + list(args), capture_output=True, text=True)


def info_calls(log):
    """(exit status of npkit info, ncclAllReduce calls in the log)."""
    p = tool("info", log)
    m = re.search(r"^  ncclAllReduce\s+(\d+)\s", p.stdout, re.M)
    return p.returncode, int(m.group(1)) if m else 0


def trace_for(log):
    """The trace the library writes for a log, found by the host and pid its name carries."""
    d, name = os.path.split(log)
    m = re.match(r"npkit_(.+)\.npkit$", name)
    found = glob.glob(os.path.join(d, "npkit_rank*_%s.json" % m.group(1))) + \
        glob.glob(os.path.join(d, "npkit_%s.json" % m.group(1)))
    return found[0] if len(found) == 1 else None


def wait_gone(test, pid, seconds):
    """Until process pid has ended (a zombie counts as ended: its parent is gone)."""
    deadline = time.time() + seconds
    while True:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except OSError:
            return
        test.assertLess(time.time(), deadline, "process %d did not end" % pid)
        time.sleep(0.02)


def check_rank(test, log, what):
    """The log is closed cleanly, its trace complete: valid JSON with every call of the log."""
    rc, calls = info_calls(log)
    test.assertEqual(rc, 0, "%s: npkit info %s: exit %d" % (what, log, rc))
    path = trace_for(log)
    test.assertIsNotNone(path, "%s: no trace for %s" % (what, log))
    trace = json.loads(slurp(path))
    o = trace["otherData"]
    test.assertTrue(o["closed_cleanly"] and not o["truncated"], what)
    n = sum(1 for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == "ncclAllReduce")
    test.assertEqual(n, calls, "%s: %s holds %d of the log's %d calls" % (what, path, n, calls))
    test.assertGreater(n, 0, what)
    test.assertEqual(glob.glob(path + ".partial"), [], what)
    return n


def mpirun_cmd(trace_dir, ready_dir, ready_after, **extra):
    env = dict(NPKIT_TRACE_DIR=trace_dir, LD_LIBRARY_PATH=FAKES, FAKE_NCCL_LAT_US=LATENCY_US,
               NPKIT_LOG_LEVEL="debug", **extra)
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none"] + MCA
    pre = [LIB]
    if sl.sanitizer_runtime():
        pre.insert(0, sl.sanitizer_runtime())
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    env["LD_PRELOAD"] = ":".join(pre)
    for k, v in sorted(env.items()):
        cmd += ["-x", "%s=%s" % (k, v)]
    return cmd + [STOP_JOB, "--ready-dir", ready_dir, "--ready-after", str(ready_after)]


def start_job(tmp, ready_after=READY_AFTER, args=(), **extra):
    trace_dir, ready_dir = os.path.join(tmp, "trace"), os.path.join(tmp, "ready")
    os.makedirs(ready_dir)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # mpirun itself runs without the library
    proc = subprocess.Popen(mpirun_cmd(trace_dir, ready_dir, ready_after, **extra) + list(args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = [os.path.join(ready_dir, "ready.%d" % r) for r in (0, 1)]
    sl.wait_for(ready, proc, "the mpirun job")
    pids = [int(slurp(p)) for p in ready]
    return proc, trace_dir, pids


class MpirunStop(unittest.TestCase):
    def test_mpirun_kill_sequence_ten_runs(self):
        survived, closes, writes, events = 0, [], [], []
        for run in range(RUNS):
            with tempfile.TemporaryDirectory() as tmp, self.subTest(run=run):
                proc, trace_dir, _ = start_job(tmp)
                t0 = time.time()
                proc.send_signal(signal.SIGTERM)  # what `timeout --foreground -s TERM` does
                _, err = proc.communicate(timeout=60)
                stop_s = time.time() - t0
                assert_no_sanitizer_report(self, err, "run %d" % run)
                logs = sorted(glob.glob(os.path.join(trace_dir, "*.npkit")))
                self.assertEqual(len(logs), 2, err)
                for log in logs:
                    events.append(check_rank(self, log, "run %d" % run))
                for m in FINISHED.finditer(err):
                    closes.append(float(m.group(1)))
                    writes.append(float(m.group(2)))
                self.assertEqual(len(FINISHED.findall(err)), 2, err)
                survived += 1
                print("run %d: stopped in %.2f s, %s calls per rank" % (run, stop_s, events[-2:]), file=sys.stderr)
        print("mpirun kill sequence: %d of %d runs with every trace complete; %d to %d calls per rank; log closed "
              "after %.1f ms at most, trace written after %.1f ms at most (median %.1f)"
              % (survived, RUNS, min(events), max(events), max(closes), max(writes), sorted(writes)[len(writes) // 2]),
              file=sys.stderr)

    def test_plain_timeout_ten_runs(self):
        # `timeout -s TERM T mpirun ...` without --foreground, as most scripts stop a job: timeout
        # signals mpirun, then its whole process group (the ranks too); mpirun exits at the second
        # signal and Open MPI's runtime ends every rank with _exit.  Every rank's log is closed and
        # its trace complete, and holds every call the rank completed (the rank counts them as it
        # goes, in a file mapped shared): all as complete calls, or the last one as in flight when
        # the rank was inside it; none it did not begin (calls that begin during the finish wait
        # for it).
        seconds = 8 if SANITIZED else 3
        for run in range(RUNS):
            with tempfile.TemporaryDirectory() as tmp, self.subTest(run=run):
                trace_dir, ready_dir = os.path.join(tmp, "trace"), os.path.join(tmp, "ready")
                os.makedirs(ready_dir)
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                cmd = ["timeout", "-s", "TERM", str(seconds)] + \
                    mpirun_cmd(trace_dir, ready_dir, READY_AFTER) + ["--count-dir", ready_dir]
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
                self.assertEqual(proc.returncode, 124, proc.stderr[-3000:])  # timeout's own status
                # mpirun is gone; its ranks live on until Open MPI's runtime notices (about 1 s)
                pages = [slurp(os.path.join(ready_dir, "count.%d" % r), "rb") for r in (0, 1)]
                for pid in (int.from_bytes(page[16:24], "little") for page in pages):
                    wait_gone(self, pid, 60)
                assert_no_sanitizer_report(self, proc.stderr, "run %d" % run)
                logs = sorted(glob.glob(os.path.join(trace_dir, "*.npkit")))
                self.assertEqual(len(logs), 2, proc.stderr[-3000:])
                for log in logs:
                    n = check_rank(self, log, "run %d" % run)
                    trace_path = trace_for(log)
                    rank = int(re.search(r"npkit_rank(\d+)_", os.path.basename(trace_path)).group(1))
                    page = slurp(os.path.join(ready_dir, "count.%d" % rank), "rb")
                    completed, begun = int.from_bytes(page[:8], "little"), int.from_bytes(page[8:16], "little")
                    events = json.loads(slurp(trace_path))["traceEvents"]
                    seqs = sorted(e["args"]["seq"] for e in events if e.get("ph") == "X" and e.get("name") == "ncclAllReduce")
                    self.assertEqual(seqs, list(range(n)), "run %d rank %d: each call once, in order" % (run, rank))
                    inside = [e for e in events if e.get("cat") == "npkit_flight" and e["args"].get("what") == "call"
                              and e["args"].get("seq") == n]
                    shown = n + (1 if inside else 0)
                    self.assertTrue(completed <= shown <= begun,
                                    "run %d rank %d: the trace shows %d calls (%d complete), the rank completed %d "
                                    "and began %d" % (run, rank, shown, n, completed, begun))
                print("run %d: plain timeout, every trace complete" % run, file=sys.stderr)

    def test_one_rank_sigkilled(self):
        # the OOM killer takes rank 1 while it calls NCCL; mpirun then stops rank 0.  After `npkit
        # report` (or rank 0's library, whichever comes first, recovers rank 1's event pool) rank
        # 1's trace holds every call it completed (counted in a shared page), at most one more
        # (stored by its wrapper, not yet counted by the program), each once, in order.
        with tempfile.TemporaryDirectory() as tmp:
            ready_dir = os.path.join(tmp, "ready")
            proc, trace_dir, pids = start_job(tmp, args=["--count-dir", ready_dir], NPKIT_FLUSH_MS="60000",
                                              NPKIT_CLOCK="realtime")
            os.kill(pids[1], signal.SIGKILL)
            _, err = proc.communicate(timeout=60)
            self.assertNotEqual(proc.returncode, 0)
            assert_no_sanitizer_report(self, err, "rank 1 killed")
            done = int.from_bytes(slurp(os.path.join(ready_dir, "count.1"), "rb")[:8], "little")
            self.assertGreaterEqual(done, READY_AFTER)
            rep = tool("report", trace_dir)
            self.assertEqual(rep.returncode, 0, rep.stderr)
            logs = {int(re.search(r"_(\d+)\.npkit$", p).group(1)): p
                    for p in glob.glob(os.path.join(trace_dir, "*.npkit"))}
            self.assertEqual(sorted(logs), sorted(pids))
            check_rank(self, logs[pids[0]], "rank 0, stopped by mpirun")
            info = tool("info", logs[pids[1]])
            self.assertEqual(info.returncode, 3, info.stderr)
            self.assertRegex(info.stdout, r"state +not closed cleanly: the process was killed; \d+ events it had not "
                                          r"written were recovered from its event pool")
            path = trace_for(logs[pids[1]])
            self.assertIsNotNone(path, rep.stderr)
            seqs = sorted(e["args"]["seq"] for e in json.loads(slurp(path))["traceEvents"]
                          if e.get("ph") == "X" and e.get("name") == "ncclAllReduce")
            self.assertIn(len(seqs), (done, done + 1), "rank 1 completed %d calls" % done)
            self.assertEqual(seqs, list(range(len(seqs))))
            self.assertEqual(info_calls(logs[pids[1]])[1], len(seqs))

    def test_slurm_like_term_then_kill(self):
        # slurmstepd signals every task itself: SIGTERM, then SIGKILL after KillWait
        with tempfile.TemporaryDirectory() as tmp:
            proc, trace_dir, pids = start_job(tmp)
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)  # the grace period: the job ends on its own within it
            except subprocess.TimeoutExpired:
                pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, err = proc.communicate(timeout=60)
            assert_no_sanitizer_report(self, err, "Slurm-like stop")
            logs = sorted(glob.glob(os.path.join(trace_dir, "*.npkit")))
            self.assertEqual(len(logs), 2)
            for log in logs:
                check_rank(self, log, "Slurm-like stop")


class ThreadTargets(unittest.TestCase):
    def stop_thread(self, pick, **extra):
        with tempfile.TemporaryDirectory() as tmp:
            ready = os.path.join(tmp, "ready")
            trace_dir = os.path.join(tmp, "trace")
            proc = subprocess.Popen([VICTIM, "--ready", ready, "--calls", "100", "--threads", "2"],
                                    env=sl.preload_env(LIB, trace_dir, FAKES, **extra),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            sl.wait_for([ready], proc, "the victim")
            threads = sl.threads_of(proc.pid)
            tid = pick(proc.pid, threads)
            self.assertIsNotNone(tid, "no such thread among %r" % threads)
            sl.tgkill(proc.pid, tid, signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            assert_no_sanitizer_report(self, err.decode(errors="replace"), threads[tid])
            self.assertEqual(proc.returncode, -signal.SIGTERM, err)
            self.assertEqual(out, b"")
            logs = glob.glob(os.path.join(trace_dir, "*.npkit"))
            self.assertEqual(len(logs), 1)
            n = check_rank(self, logs[0], threads[tid])
            self.assertGreaterEqual(n, 100 + 1000)  # the main thread's calls and the busy threads'
            return json.loads(slurp(trace_for(logs[0])))

    @staticmethod
    def named(name):
        return lambda pid, threads: next((t for t, n in threads.items() if n == name), None)

    def test_writer_thread(self):
        self.stop_thread(self.named("npkit-writer"))

    def test_application_thread(self):
        self.stop_thread(self.named("victim-busy"))

    def test_main_thread(self):
        self.stop_thread(lambda pid, threads: pid)

    def test_nccl_proxy_thread(self):
        self.stop_thread(self.named("fake-nccl-proxy"))

    def test_cupti_flusher_thread(self):
        trace = self.stop_thread(self.named("npkit-cupti"), NPKIT_CUPTI_LIBRARY=FAKE_CUPTI)
        kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
        self.assertTrue(kernels, "the fake CUPTI ran: the trace has kernels")


class MissingTraces(unittest.TestCase):
    def victim(self, tmp, name, **extra):
        ready = os.path.join(tmp, name + ".ready")
        proc = subprocess.Popen([VICTIM, "--ready", ready, "--calls", "100"],
                                env=sl.preload_env(LIB, os.path.join(tmp, "trace"), FAKES, NPKIT_FLUSH_MS="20",
                                                   **extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sl.wait_for([ready], proc, name)
        time.sleep(0.3)  # many writer periods: the calls are in the log
        return proc

    def test_report_and_merge_render_what_is_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace_dir = os.path.join(tmp, "trace")
            killed = self.victim(tmp, "killed")
            killed.kill()
            killed.communicate()
            cut = self.victim(tmp, "cut")
            cut.send_signal(signal.SIGTERM)
            cut.communicate(timeout=60)
            no_json = self.victim(tmp, "no_json", NPKIT_JSON="0")
            no_json.kill()
            no_json.communicate()
            running = self.victim(tmp, "running")
            logs = {p.pid: glob.glob(os.path.join(trace_dir, "npkit_*_%d.npkit" % p.pid))[0]
                    for p in (killed, cut, no_json, running)}
            # the one stopped while it wrote its trace: its trace is cut, and left as FILE.partial
            whole = trace_for(logs[cut.pid])
            data = slurp(whole, "rb")
            os.unlink(whole)
            with open(whole + ".partial", "wb") as f:
                f.write(data[:len(data) // 2])
            self.assertIsNone(trace_for(logs[killed.pid]))

            p = tool("report", trace_dir)
            self.assertEqual(p.returncode, 0, p.stderr)
            rendered = re.findall(r"^npkit report: rendered (\S+) from its log: (.*)$", p.stderr, re.M)
            self.assertEqual(len(rendered), 2, p.stderr)
            said = dict(rendered)
            killed_trace = trace_for(logs[killed.pid])
            self.assertIn("before it closed its log", said[killed_trace])
            self.assertIn("before it finished its trace (it replaces the cut trace it left)", said[whole])
            self.assertEqual(slurp(whole, "rb"), data, "the rendered trace is the one the process began")
            self.assertFalse(os.path.exists(whole + ".partial"))
            t = json.loads(slurp(killed_trace))
            self.assertFalse(t["otherData"]["closed_cleanly"])
            self.assertEqual(sum(1 for e in t["traceEvents"] if e.get("name") == "ncclAllReduce"), 100)
            # asked for no trace (NPKIT_JSON=0), and still running: left alone
            self.assertIsNone(trace_for(logs[no_json.pid]))
            self.assertIsNone(trace_for(logs[running.pid]))
            # nothing is missing any more
            p = tool("merge", trace_dir, "-o", os.path.join(tmp, "merged.json"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("rendered", p.stderr)
            running.send_signal(signal.SIGTERM)
            running.communicate(timeout=60)
            self.assertIsNotNone(trace_for(logs[running.pid]), "the running process wrote its own trace")

    def test_launcher_renders_what_is_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace_dir = os.path.join(tmp, "trace")
            ready = os.path.join(tmp, "ready")
            script = ('"$1" --ready "$2" --calls 100 & pid=$!; while [ ! -e "$2" ]; do sleep 0.02; done; '
                      'sleep 0.3; kill -9 $pid; wait $pid; exit 0')
            cmd = [LAUNCHER, "--lib", LIB, "--npkit", TOOL, "--trace-dir", trace_dir, "--flush-ms", "20",
                   "--env", "LD_LIBRARY_PATH=" + FAKES, "--env", "FAKE_NCCL_LAT_US=0"]
            if sl.sanitizer_runtime():
                cmd += ["--preload", sl.sanitizer_runtime()]
            env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
            env.pop("LD_PRELOAD", None)
            p = subprocess.run(cmd + ["--", "sh", "-c", script, "sh", VICTIM, ready], env=env, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("== npkit report (1 logs in %s)" % trace_dir, p.stdout)
            self.assertRegex(p.stderr, r"npkit report: rendered \S+\.json from its log: the process was stopped before "
                                       r"it closed its log")
            log = glob.glob(os.path.join(trace_dir, "*.npkit"))[0]
            t = json.loads(slurp(trace_for(log)))
            self.assertEqual(sum(1 for e in t["traceEvents"] if e.get("name") == "ncclAllReduce"), 100)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
