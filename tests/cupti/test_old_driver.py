"""A CUDA driver older than the toolkit's CUPTI: CUPTI 13 cannot connect to a driver of the CUDA 12
generation (cuptiSubscribe, or a later call, returns CUPTI_ERROR_NOT_INITIALIZED), while a
libcupti.so.12 (a CUDA 12 Python wheel's, say) works.  The library falls back to the next copy of
libcupti, whether named in NPKIT_CUPTI_LIBRARY or found on the library path, records every GPU
activity through it (in CUDA 12's record layout), and says in one line which copy it uses and why
the first was skipped; with no other copy GPU timing is off with a line that says why, and NCCL's
own GPU times from the profiler plugin are still there."""

import os
import re
import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 2
DRIVER_12_9 = "12090"


class OldDriver(lib.TempDirTestCase):

    def setUp(self):
        super().setUp()
        self.cupti13 = ct.fake_cupti()
        self.cupti12 = ct.fake_file("NPKIT_FAKE_CUPTI12", "the fake libcupti.so.12")
        self.driver_dir = os.path.dirname(ct.fake_file("NPKIT_FAKE_CUDA_DRIVER", "the fake libcuda.so.1"))

    def job(self, settings, path_dirs=(), np=2):
        """cupti_job with the fake CUDA 12.9 driver loaded; the fake NCCL's folder (holding
        libcupti.so.13), then path_dirs, then the driver's on LD_LIBRARY_PATH."""
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "FAKE_CUDA_DRIVER_VERSION": DRIVER_12_9,
             "LD_LIBRARY_PATH": ":".join([lib.nccl_dir("fake")] + list(path_dirs) + [self.driver_dir])}
        s.update(settings)
        run = ct.run_job(["--iters", str(ITERS), "--driver", "--env-out", self.path("env")], np=np,
                         settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        self.assertEqual(run.warnings, [], run.describe())
        return run, lib.load_traces(trace_dir, expect=np)

    def check_fell_back(self, run, traces, first, used, why):
        np = len(traces)
        want = ("npkit: GPU activity through CUPTI %s (API version 28), the next copy of libcupti "
                "found, because CUPTI (%s) %s CUPTI_ERROR_NOT_INITIALIZED (a CUPTI newer than the "
                "CUDA driver, which is for CUDA 12.9?)" % (used, first, why))
        self.assertEqual([l for l in run.npkit_lines if "CUPTI" in l and "wrote" not in l], [want] * np,
                         run.describe())
        self.assertEqual(ct.gpu_lines(run), [])
        for r, t in traces.items():
            problems = ct.check_mapping(t, ITERS, graph=False)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))
            n_kernels = len(ct.kernels(t))
            self.assertEqual(n_kernels, ct.expected_client_kernels(t, ITERS))
            self.assertEqual(ct.exit_counts(run, r), (n_kernels, ITERS, ITERS, 0))
            loaded = ct.env_report(self.path("env.rank%d" % r))["cupti"]
            self.assertEqual(os.path.realpath(loaded), os.path.realpath(self.cupti12))
            # the note is in the trace too
            notes = [e for e in t.events if e.get("cat") == "npkit" and e["args"].get("message") == want[7:]]
            self.assertEqual(len(notes), 1)

    def test_list_falls_back_to_cupti12(self):
        run, traces = self.job({"NPKIT_CUPTI_LIBRARY": "%s:%s" % (self.cupti13, self.cupti12)})
        self.check_fell_back(run, traces, self.cupti13, self.cupti12, "cannot start: cuptiSubscribe returned")

    def test_library_path_falls_back_to_cupti12(self):
        # nothing named: libcupti.so.13, then libcupti.so.12, as the dynamic linker finds them
        run, traces = self.job({}, path_dirs=[os.path.dirname(self.cupti12)])
        self.check_fell_back(run, traces, "libcupti.so.13", "libcupti.so.12",
                             "cannot start: cuptiSubscribe returned")

    def test_failure_after_subscribing(self):
        # cuptiSubscribe works, enabling kernels does not: the copy is unsubscribed and skipped
        run, traces = self.job({"NPKIT_CUPTI_LIBRARY": "%s:%s" % (self.cupti13, self.cupti12),
                                "FAKE_CUPTI_OLD_DRIVER_AT": "enable"})
        self.check_fell_back(run, traces, self.cupti13, self.cupti12, "cannot trace kernels:")

    def test_only_cupti13(self):
        run, traces = self.job({"NPKIT_CUPTI_LIBRARY": self.cupti13})
        lines = ct.gpu_lines(run)
        self.assertEqual(len(lines), 2, run.describe())
        # the toolkit's own libcupti, where this machine has one, is tried too and fails alike
        want = re.compile(
            r"npkit: GPU timing is off: CUPTI \(%s\) cannot start: cuptiSubscribe returned "
            r"CUPTI_ERROR_NOT_INITIALIZED \(a CUPTI newer than the CUDA driver, which is for CUDA "
            r"12\.9\?\), and (no other libcupti was found to try \(NPKIT_CUPTI_LIBRARY takes a list "
            r"of paths: add one that matches the driver, such as a CUDA 12 libcupti\.so\.12\)|"
            r"\d+ other cop(y|ies) of libcupti found could not start either); no kernels, copies or "
            r"memsets are recorded \(NCCL's profiler plugin still times NCCL's own kernels where "
            r"NCCL supports it\)$" % re.escape(self.cupti13))
        for l in lines:
            self.assertRegex(l, want)
        for r, t in traces.items():
            self.assertEqual([e for e in t.events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")], [])
            problems = ct.check_nccl_timings(t)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))

    def test_matching_driver_keeps_cupti13(self):
        # a CUDA 13 driver: the first copy works, nothing is said about copies
        run, traces = self.job({"NPKIT_CUPTI_LIBRARY": "%s:%s" % (self.cupti13, self.cupti12),
                                "FAKE_CUDA_DRIVER_VERSION": "13000"})
        self.assertEqual([l for l in run.npkit_lines if "CUPTI" in l], [], run.describe())
        for r, t in traces.items():
            self.assertEqual(ct.check_mapping(t, ITERS, graph=False), [])
            loaded = ct.env_report(self.path("env.rank%d" % r))["cupti"]
            self.assertEqual(os.path.realpath(loaded), os.path.realpath(self.cupti13))


if __name__ == "__main__":
    unittest.main()
