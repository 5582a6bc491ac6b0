"""A job stopped by SIGTERM/SIGINT still leaves a complete trace and dies by the same signal; the
application's own handler keeps working; a job killed by SIGKILL leaves a log that `npkit json`
renders up to the last writer flush."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import signals_lib as sl  # noqa: E402

VICTIM, LIB, TOOL, FAKES = sys.argv[1:5]


def start(tmp, *args, **extra):
    ready = os.path.join(tmp, "ready")
    trace_dir = os.path.join(tmp, "trace")
    proc = subprocess.Popen([VICTIM, "--ready", ready, *args], env=sl.preload_env(LIB, trace_dir, FAKES, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sl.wait_for([ready], proc, "the victim")
    return proc, trace_dir


def api_events(trace, name):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == name]


class Signals(unittest.TestCase):
    def check_complete_trace(self, trace_dir, min_allreduce):
        traces = glob.glob(os.path.join(trace_dir, "*.json"))
        self.assertEqual(len(traces), 1, traces)
        trace = json.load(open(traces[0]))
        self.assertTrue(trace["otherData"]["closed_cleanly"])
        self.assertFalse(trace["otherData"]["truncated"])
        self.assertGreaterEqual(len(api_events(trace, "ncclAllReduce")), min_allreduce)
        self.assertEqual(len(api_events(trace, "ncclCommInitRank")), 1)
        return trace

    def test_sigterm_default_action(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig=sig), tempfile.TemporaryDirectory() as tmp:
                proc, trace_dir = start(tmp, "--calls", "100")
                proc.send_signal(sig)
                out, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, -sig, err)  # died by the same signal
                self.assertEqual(out, b"")
                self.assertIn(b"npkit: rank 0: wrote", err)
                self.check_complete_trace(trace_dir, 100)

    def test_application_handler_still_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, trace_dir = start(tmp, "--calls", "50", "--handler")
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            # The handler was installed before the first NCCL call: the library finishes the trace
            # first, then the application's handler runs and exits with its own status.
            self.assertEqual(proc.returncode, 3, err)
            self.check_complete_trace(trace_dir, 50)

    def test_sigterm_while_threads_call_nccl(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, trace_dir = start(tmp, "--calls", "10", "--threads", "3")
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, -signal.SIGTERM, err)
            trace = self.check_complete_trace(trace_dir, 1000)
            tids = {e["tid"] for e in api_events(trace, "ncclAllReduce")}
            self.assertEqual(len(tids), 4)

    def test_sigkill_leaves_renderable_log(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, trace_dir = start(tmp, "--calls", "200", NPKIT_FLUSH_MS="20")
            time.sleep(0.5)  # many writer periods
            proc.kill()
            proc.communicate(timeout=60)
            self.assertEqual(glob.glob(os.path.join(trace_dir, "*.json")), [])
            logs = glob.glob(os.path.join(trace_dir, "*.npkit"))
            self.assertEqual(len(logs), 1)
            out = os.path.join(tmp, "out.json")
            r = subprocess.run([TOOL, "json", logs[0], "-o", out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            trace = json.load(open(out))
            self.assertFalse(trace["otherData"]["closed_cleanly"])
            self.assertEqual(len(api_events(trace, "ncclAllReduce")), 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
