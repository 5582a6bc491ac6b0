"""CUPTI starts at the moment NVIDIA recommends: the preloaded library points
CUDA_INJECTION64_PATH at itself (unless the user set it), so the CUDA driver calls its
InitializeInjection during cuInit, before any NCCL call; naming the library in
CUDA_INJECTION64_PATH without preloading it records GPU activity too.  cupti_job --cuinit does
what cuInit does with the variable."""

import os
import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 2


class Injection(lib.TempDirTestCase):

    def test_preloaded_library_registers_itself(self):
        run = ct.run_job(["--iters", "0", "--env-out", self.path("env")], np=2,
                         settings={"NPKIT_TRACE_DIR": self.path("t")}, cwd=self.tmp)
        self.assertRunOk(run)
        for r in range(2):
            got = ct.env_report(self.path("env.rank%d" % r))["injection"]
            self.assertEqual(got, os.path.realpath(lib.preload_lib()))

    def test_user_setting_wins(self):
        settings = {"NPKIT_TRACE_DIR": self.path("t"), "CUDA_INJECTION64_PATH": "/opt/other/inject.so"}
        run = ct.run_job(["--iters", "0", "--env-out", self.path("env")], np=1, settings=settings,
                         cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(ct.env_report(self.path("env.rank0"))["injection"], "/opt/other/inject.so")

    def test_not_registered_when_off(self):
        for var in ("NPKIT_CUPTI", "NPKIT_DISABLE"):
            with self.subTest(var=var):
                run = ct.run_job(["--iters", "0", "--env-out", self.path("env" + var)], np=1,
                                 settings={"NPKIT_TRACE_DIR": self.path("t"), var: var == "NPKIT_CUPTI" and "0" or "1"},
                                 cwd=self.tmp)
                self.assertRunOk(run)
                self.assertEqual(ct.env_report(self.path("env%s.rank0" % var))["injection"], "(unset)")

    def test_driver_starts_cupti_before_the_first_nccl_call(self):
        trace_dir = self.path("trace")
        settings = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti(),
                    "NPKIT_LOG_LEVEL": "debug"}
        run = ct.run_job(["--iters", str(ITERS), "--graph", "--cuinit"], np=2, settings=settings,
                         cwd=self.tmp)
        self.assertRunOk(run)
        started = [l for l in run.npkit_lines if "GPU activity through CUPTI" in l]
        self.assertEqual(len(started), 2, run.describe())
        for l in started:
            self.assertIn("started by the CUDA driver", l)
        for r, t in lib.load_traces(trace_dir, expect=2).items():
            # the compute kernel launched before any NCCL call is there too
            problems = ct.check_mapping(t, ITERS, graph=True, pre_nccl_compute=1)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))

    def test_injection_without_preload(self):
        trace_dir = self.path("trace")
        settings = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti(),
                    "CUDA_INJECTION64_PATH": lib.preload_lib()}
        run = ct.run_job(["--iters", str(ITERS), "--cuinit"], np=2, preload=False,
                         settings=settings, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(ct.gpu_lines(run), [], run.describe())
        for r, t in lib.load_traces(trace_dir, expect=2).items():
            # NCCL is not wrapped: its calls come from its own API events (the library is its
            # profiler plugin too), and no kernel is tied to a call through CUPTI
            self.assertTrue(t.api())
            self.assertEqual([e["name"] for e in t.api() if not e["args"].get("from_nccl_events")], [])
            ks = ct.kernels(t)
            names = sorted(k["name"] for k in ks)
            self.assertEqual(names.count("computeKernel"), ITERS + 1)
            nccl = [n for n in names if n.startswith("ncclDevKernel_")]
            # per iteration: AllReduce, Broadcast, AllGather, SendRecv, and two in the last group
            self.assertEqual(len(nccl), 6 * ITERS, names)
            for k in ks:
                self.assertNotIn("nccl_call", k["args"])
            self.assertEqual([e for e in t.events if e.get("cat") == "ac2g"], [])
            self.assertEqual(len(ct.kernels(t, "gpu_memcpy")), ITERS)
            self.assertEqual(ct.exit_counts(run, r)[0], len(ks))


if __name__ == "__main__":
    unittest.main()
