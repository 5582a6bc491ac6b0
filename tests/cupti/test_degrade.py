"""The GPU source degrades cleanly: one `npkit:` line per process and a CPU-only trace when GPU
timing cannot work — NPKIT_CUPTI=0, no CUDA driver (this machine), a libcupti that cannot start
without a driver (the toolkit's real one), another CUPTI client holding CUPTI, a bad
NPKIT_CUPTI_LIBRARY — and the job's results and exit status are untouched."""

import os
import unittest

import cupti_testlib as ct
from cupti_testlib import lib


class Degrade(lib.TempDirTestCase):

    def run_off(self, settings, want, np=2, cupti="none"):
        """Runs the job and checks the one line per rank containing `want`, the CPU-only trace and
        which libcupti the process ended with."""
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings)
        run = ct.run_job(["--iters", "2", "--env-out", self.path("env")], np=np, settings=s,
                         cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        lines = ct.gpu_lines(run)
        self.assertEqual(len(lines), np, run.describe())
        for l in lines:
            self.assertTrue(l.startswith("npkit: GPU timing is off: "), l)
            self.assertIn(want, l)
            # NCCL's profiler plugin still times NCCL's kernels: the line says so
            self.assertTrue(l.endswith("; no kernels, copies or memsets are recorded (NCCL's "
                                       "profiler plugin still times NCCL's own kernels where NCCL "
                                       "supports it)"), l)
        for l in run.stderr_lines:
            self.assertTrue(l.startswith("npkit:"), "stray stderr line: %r" % l)
        self.assertEqual(run.warnings, [], run.describe())
        traces = lib.load_traces(trace_dir, expect=np)
        for r, t in traces.items():
            self.assertGreater(len(t.api()), 10)
            gpu = [e for e in t.events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "ac2g")]
            self.assertEqual(gpu, [])
            self.assertEqual(ct.gpu_tracks(t), {})
            # the reason is kept in the trace too
            notes = [e for e in t.events if e.get("cat") == "npkit"
                     and "GPU timing is off" in e["args"].get("message", "")]
            self.assertEqual(len(notes), 1)
            with open(self.path("env.rank%d" % r)) as f:
                loaded = f.read().split("cupti=")[1].strip()
            if cupti == "none":
                self.assertEqual(loaded, "none")
            else:
                self.assertEqual(os.path.realpath(loaded), os.path.realpath(cupti))
            # and the exit line has no GPU part
            wrote = [l for l in run.npkit_lines if l.startswith("npkit: rank %d: wrote" % r)]
            self.assertEqual(len(wrote), 1)
            self.assertNotIn("GPU:", wrote[0])
        return run

    def test_off_by_setting(self):
        self.run_off({"NPKIT_CUPTI": "0", "NPKIT_CUPTI_LIBRARY": ct.fake_cupti()}, "NPKIT_CUPTI=0")

    def test_no_driver_no_libcupti_loaded(self):
        self.run_off({}, "no CUDA driver is loaded in this process")

    def test_real_libcupti_without_gpu(self):
        real = ct.real_cupti()
        if real is None:
            self.skipTest("no libcupti in NPKIT_CUDA_LIB_DIR")
        run = self.run_off({"NPKIT_CUPTI_LIBRARY": real}, "cannot start", cupti=real)
        for l in ct.gpu_lines(run):
            self.assertIn(real, l)
            self.assertIn("no CUDA driver is loaded in this process", l)

    def test_another_cupti_client(self):
        self.run_off({"NPKIT_CUPTI_LIBRARY": ct.fake_cupti(), "FAKE_CUPTI_BUSY": "1"},
                     "another CUPTI client holds CUPTI", cupti=ct.fake_cupti())

    def test_bad_library_path(self):
        self.run_off({"NPKIT_CUPTI_LIBRARY": self.path("no", "libcupti.so")},
                     "cannot load NPKIT_CUPTI_LIBRARY")

    def test_quiet_keeps_it_in_the_trace_only(self):
        trace_dir = self.path("trace")
        run = ct.run_job(["--iters", "1"], np=1,
                         settings={"NPKIT_TRACE_DIR": trace_dir, "NPKIT_QUIET": "1"}, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.stderr, "")
        t = lib.load_traces(trace_dir, expect=1)[0]
        notes = [e for e in t.events if e.get("cat") == "npkit"
                 and "GPU timing is off" in e["args"].get("message", "")]
        self.assertEqual(len(notes), 1)


if __name__ == "__main__":
    unittest.main()
