"""The times of the trace against an independent clock.  nccl_clock brackets every ncclAllReduce
with its own CLOCK_REALTIME readings; each traced call must lie inside its bracket: exactly with
NPKIT_CLOCK=realtime, and within the error the library reports (itself small) when times come from
the time-stamp counter, over a run long enough for many of the writer's clock comparisons."""

import os
import platform
import subprocess
import time
import unittest

import npkit_testlib as lib

CALLS, EVERY, SLEEP_US = 2000, 100, 50000  # about 1 s: comparisons at 10, 50, 210 ms, ... and exit
LONG_CALLS = 5000


def kernel_clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return ""


def invariant_counter():
    """Whether the CPU's time-stamp counter is invariant (CPUID 0x80000007 EDX bit 8, which Linux
    shows as the flags constant_tsc and nonstop_tsc)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return False
    return "constant_tsc" in flags and "nonstop_tsc" in flags


def library_uses_counter(clocksource):
    """Whether the library maps the counter for this clocksource: tsc, or a KVM guest's kvm-clock
    (the counter scaled by the host) where the counter is invariant."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    return clocksource == "tsc" or (clocksource == "kvm-clock" and invariant_counter())


class BracketsCase(lib.TempDirTestCase):
    """A nccl_clock run's results: its trace and brackets, and how far the calls lie outside them."""

    def load_results(self, trace_dir, out, calls=CALLS):
        with open(out) as f:
            brackets = [tuple(map(int, line.split())) for line in f]
        self.assertEqual(len(brackets), calls)
        traces = lib.load_traces(trace_dir)
        self.assertEqual(len(traces), 1)
        trace = next(iter(traces.values()))
        api = [e for e in trace.api() if e["name"] == "ncclAllReduce"]
        self.assertEqual(len(api), calls)
        return trace, brackets, api

    def worst_outside(self, trace, brackets, calls, after_ns=0):
        """Largest distance (ns) by which a call's start or end lies outside its bracket, from the
        binary log's exact times (the trace would show a negative duration as 0); also checks that
        starts increase and durations are not negative.  Calls starting before after_ns are not
        measured."""
        log = lib.LogFile(lib.log_for_trace(trace.path))
        fid = [n for n, _, _ in lib.api_table()].index("ncclAllReduce") + 1
        raw = [(s, e) for k, (f, s, e, _, _) in zip(log.kinds, log.events) if k == 1 and f == fid]
        self.assertEqual(len(raw), len(brackets))
        for (start, end), ev in zip(raw, calls):
            self.assertEqual(trace.base_ns + round(ev["ts"] * 1000), start, "trace and log agree")
        worst, prev = 0, None
        for (before, after), (start, end) in zip(brackets, raw):
            self.assertGreaterEqual(end, start)
            if prev is not None:
                self.assertGreater(start, prev, "starts of one thread's calls must increase")
            prev = start
            if start >= after_ns:
                worst = max(worst, before - start, end - after)
        return worst


class Clock(BracketsCase):
    def run_brackets(self, settings, name="run"):
        trace_dir = self.path(name, "trace")
        out = self.path(name + ".brackets")
        run = lib.run_direct("nccl_clock", ["--out", out, "--calls", str(CALLS), "--every", str(EVERY),
                                            "--sleep-us", str(SLEEP_US)],
                             settings=dict(settings, NPKIT_TRACE_DIR=trace_dir, FAKE_NCCL_NOOP="1"))
        self.assertRunOk(run)
        return self.load_results(trace_dir, out) + (trace_dir, run)

    def test_realtime_is_exact(self):
        trace, brackets, calls, _, _ = self.run_brackets({"NPKIT_CLOCK": "realtime"})
        self.assertEqual(trace.other["clock_source"], "clock_gettime")
        self.assertNotIn("clock_max_error_ns", trace.other)
        self.assertLessEqual(self.worst_outside(trace, brackets, calls), 0)

    def test_default_clock_within_reported_error(self):
        trace, brackets, calls, trace_dir, _ = self.run_brackets({})
        use_tsc = library_uses_counter(kernel_clocksource())
        self.assertEqual(trace.other["clock_source"], "tsc" if use_tsc else "clock_gettime")
        worst = self.worst_outside(trace, brackets, calls)
        if not use_tsc:
            self.assertLessEqual(worst, 0)
            return
        checks, max_err = trace.other["clock_checks"], trace.other["clock_max_error_ns"]
        self.assertGreaterEqual(checks, 6, "comparisons at 10, 50, 210 ms, then every 200 ms, and at exit")
        # The reported error is what the comparisons found, below the 1 ms at which the map would
        # jump instead; it must really bound the trace's error: every call inside its bracket up
        # to it (plus 1 us for the uncertainty of one comparison).
        self.assertLess(max_err, 1000000)
        self.assertLessEqual(worst, max_err + 1000,
                             "a call lies %d ns outside its bracket; reported error %d ns" % (worst, max_err))
        info = lib.run_tool(["info", lib.log_files(trace_dir)[0]])
        self.assertIn("clock source   time-stamp counter mapped onto CLOCK_REALTIME: %d comparisons, "
                      "largest difference %d ns" % (checks, max_err), info.stdout)

    def test_bad_setting_warns_and_keeps_default(self):
        trace, brackets, calls, _, run = self.run_brackets({"NPKIT_CLOCK": "gps"})
        self.assertEqual(run.warnings, ["npkit: warning: NPKIT_CLOCK='gps' is not one of auto, realtime; "
                                        "using auto"])
        default, _, _, _, _ = self.run_brackets({}, "default")
        self.assertEqual(trace.other["clock_source"], default.other["clock_source"])


class KernelClocksource(BracketsCase):
    """What the library does with the kernel's clocksource, through a shim that makes it read a file
    of the test's instead of /sys/devices/system/clocksource/clocksource0/current_clocksource."""

    def start(self, content):
        self.source = self.path("current_clocksource")
        if content is not None:
            with open(self.source, "w") as f:
                f.write(content + "\n")
        trace_dir, out = self.path("trace"), self.path("brackets")
        env = lib._base_env()
        env.update(lib.job_env(settings={"NPKIT_TRACE_DIR": trace_dir, "FAKE_NCCL_NOOP": "1",
                                         "CLOCKSOURCE_FILE": self.source}))
        preload = env["LD_PRELOAD"].split(":")
        preload.insert(len(preload) - 1, lib.program("clocksource_shim.so"))  # before the library
        env["LD_PRELOAD"] = ":".join(preload)
        # 2.5 s: the clocksource is looked at once a second
        proc = subprocess.Popen([lib.program("nccl_clock"), "--out", out, "--calls", str(LONG_CALLS),
                                 "--every", str(EVERY), "--sleep-us", str(SLEEP_US)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return proc, trace_dir, out

    def finish(self, proc, trace_dir, out):
        stdout, stderr = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, stderr)
        trace, brackets, calls = self.load_results(trace_dir, out, LONG_CALLS)
        warnings = [l for l in stderr.splitlines() if l.startswith("npkit: warning:")]
        return trace, brackets, calls, warnings

    def test_other_clocksource_means_realtime(self):
        for content in ("hpet", "kvm-clock", None):  # None: the file cannot be read
            if library_uses_counter(content):
                continue  # kvm-clock with an invariant counter: test_kvm_clock
            with self.subTest(clocksource=content):
                trace, brackets, calls, warnings = self.finish(*self.start(content))
                self.assertEqual(trace.other["clock_source"], "clock_gettime")
                self.assertEqual(warnings, [])
                self.assertLessEqual(self.worst_outside(trace, brackets, calls), 0)
                os.makedirs(self.path("old"), exist_ok=True)
                os.rename(self.path("trace"), self.path("old", str(content)))

    @unittest.skipUnless(library_uses_counter("kvm-clock"), "an x86-64 CPU with an invariant counter")
    def test_kvm_clock(self):
        """A KVM guest's kvm-clock is the counter scaled by the host: where the counter is invariant
        the library maps the counter, and every call lies in its bracket up to the reported error."""
        trace, brackets, calls, warnings = self.finish(*self.start("kvm-clock"))
        self.assertEqual(trace.other["clock_source"], "tsc")
        self.assertEqual(warnings, [])
        max_err = trace.other["clock_max_error_ns"]
        self.assertLess(max_err, 1000000)
        self.assertLessEqual(self.worst_outside(trace, brackets, calls), max_err + 1000)

    @unittest.skipUnless(platform.machine() in ("x86_64", "AMD64"), "the counter is read on x86-64 only")
    def test_kernel_giving_up_the_counter(self):
        proc, trace_dir, out = self.start("tsc")
        # The log file exists once the library started (and chose its clock); then switch.
        deadline = time.time() + 60
        while not lib.log_files(trace_dir) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.01)
        self.assertTrue(lib.log_files(trace_dir), "the job started recording")
        time.sleep(0.1)
        with open(self.source + ".new", "w") as f:
            f.write("hpet\n")
        switched_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
        os.rename(self.source + ".new", self.source)
        trace, brackets, calls, warnings = self.finish(proc, trace_dir, out)
        self.assertEqual(trace.other["clock_source"], "tsc")  # it started with the counter
        self.assertEqual(warnings, ["npkit: warning: the kernel's clocksource is 'hpet', not 'tsc' any "
                                    "more: timestamps from CLOCK_REALTIME from here on"])
        notes = [e for e in trace.events if e.get("ph") == "i" and e.get("cat") == "npkit"
                 and "any more" in e.get("args", {}).get("message", "")]
        self.assertEqual(len(notes), 1, "the warning is in the trace too")
        # The writer notices at its first pass a second after its last look (1.2 s at most, with
        # the 200 ms period); from then on times are exact.
        note_ns = trace.start_ns(notes[0])
        self.assertTrue(switched_ns <= note_ns < switched_ns + 2_000_000_000)
        self.assertLessEqual(self.worst_outside(trace, brackets, calls, after_ns=note_ns + 1000), 0)
        self.assertTrue(any(trace.start_ns(c) > note_ns for c in calls), "calls after the switch")


if __name__ == "__main__":
    unittest.main()
