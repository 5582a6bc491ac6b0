"""Another CUPTI client in the process: PyTorch's profiler (Kineto, inside libtorch_cpu.so), or the
application's own CUPTI code, played by tests/fakes_cupti/fake_kineto.c step by step.

The policy (NPKIT_CUPTI, README): where PyTorch is loaded the library leaves CUPTI to its profiler
(`auto`, the default) and keeps NCCL's own GPU times from the profiler plugin; NPKIT_CUPTI=1 takes
CUPTI anyway.  A client that holds CUPTI first keeps it (CUPTI has one subscriber).  A client's
timestamp callback (Kineto's returns time-stamp-counter ticks) changes the clock of the library's
records too: they are mapped back onto CLOCK_REALTIME.  Each test checks both sides: the trace
(GPU events there or not, NCCL's own GPU times, the one npkit: line) and what the other client
got (its subscription, the kernels its buffers received)."""

import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 2
OFF_TAIL = ("; no kernels, copies or memsets are recorded (NCCL's profiler plugin still times NCCL's "
            "own kernels where NCCL supports it)")
CLOCK_LINE = ("npkit: CUPTI's records carry another clock than CLOCK_REALTIME (a CUPTI client "
              "registered a timestamp callback, as PyTorch's profiler does with time-stamp-counter "
              "ticks): their times are mapped onto CLOCK_REALTIME")
CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39  # cupti_result.h of CUDA 13, line 282


class OtherClients(lib.TempDirTestCase):

    def job(self, client, plan, settings=None, np=2, iters=ITERS):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti()}
        s.update(settings or {})
        args = ["--iters", str(iters), "--env-out", self.path("env"), "--client", client]
        for p in plan:
            args += ["--client-do", p]
        run = ct.run_job(args, np=np, settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        self.assertEqual(run.warnings, [], run.describe())
        traces = lib.load_traces(trace_dir, expect=np)
        reports = {r: ct.env_report(self.path("env.rank%d" % r)) for r in traces}
        return run, traces, reports

    def torch(self):
        return ct.fake_file("NPKIT_FAKE_TORCH", "the fake libtorch_cpu.so")

    def app_client(self):
        return ct.fake_file("NPKIT_FAKE_CUPTI_CLIENT", "the fake libcupti_client.so")

    def assert_no_cupti_events(self, run, traces, line):
        np = len(traces)
        self.assertEqual(ct.gpu_lines(run), ["npkit: GPU timing is off: " + line + OFF_TAIL] * np,
                         run.describe())
        for r, t in traces.items():
            self.assertEqual([e for e in t.events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "ac2g")],
                             [])
            problems = ct.check_nccl_timings(t)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))

    def assert_mapped(self, run, traces, iters=ITERS):
        for r, t in traces.items():
            problems = ct.check_mapping(t, iters, graph=False)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))
            n = len(ct.kernels(t))
            self.assertEqual(n, ct.expected_client_kernels(t, iters))
            self.assertEqual(ct.exit_counts(run, r), (n, iters, iters, 0))

    def test_yields_to_pytorch(self):
        # PyTorch loaded (as `import torch` does), torch.profiler started after NCCL's init
        run, traces, reports = self.job(self.torch(), ["comm:subscribe,clock,enable"])
        self.assert_no_cupti_events(
            run, traces, "PyTorch is loaded (libtorch_cpu.so), and its profiler (torch.profiler) "
            "needs CUPTI, which serves one client at a time; NPKIT_CUPTI=1 traces with CUPTI anyway, "
            "and torch.profiler then records no CUDA activity")
        for r, t in traces.items():
            rep = reports[r]
            # the profiler got CUPTI, and every kernel of the job
            self.assertEqual((rep["client_subscribe"], rep["client_clock"], rep["client_enable"]), ("0", "0", "0"))
            self.assertEqual(int(rep["client_kernels"]), ct.expected_client_kernels(t, ITERS))
            self.assertEqual(rep["client_foreign_buffers"], "0")

    def test_forced_next_to_pytorch_profiler_started_first(self):
        # NPKIT_CUPTI=1, but torch.profiler (a Kineto that subscribes) runs from the start
        run, traces, reports = self.job(self.torch(), ["start:subscribe,clock,enable"], {"NPKIT_CUPTI": "1"})
        self.assert_no_cupti_events(
            run, traces, "another CUPTI client holds CUPTI (PyTorch's profiler, libtorch_cpu.so, most likely)")
        for r, t in traces.items():
            rep = reports[r]
            self.assertEqual(rep["client_subscribe"], "0")
            self.assertEqual(int(rep["client_kernels"]), ct.expected_client_kernels(t, ITERS))

    def test_forced_takes_cupti_from_pytorch(self):
        # NPKIT_CUPTI=1 and torch.profiler started later: the library has CUPTI, Kineto's
        # subscription is refused and it traces the CPU only -- what the setting costs
        run, traces, reports = self.job(self.torch(), ["comm:subscribe,clock,enable"], {"NPKIT_CUPTI": "1"})
        self.assertEqual(ct.gpu_lines(run), [])
        self.assert_mapped(run, traces)
        for rep in reports.values():
            self.assertEqual(int(rep["client_subscribe"]), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            self.assertEqual(rep["client_kernels"], "0")

    def test_application_client_subscribed_first(self):
        # not PyTorch: the library tries, CUPTI refuses it, the client keeps working
        run, traces, reports = self.job(self.app_client(), ["start:subscribe,enable"])
        self.assert_no_cupti_events(
            run, traces, "another CUPTI client holds CUPTI (Nsight Systems, Nsight Compute, "
            "compute-sanitizer or a profiler inside the application)")
        for r, t in traces.items():
            rep = reports[r]
            self.assertEqual((rep["client_subscribe"], rep["client_enable"]), ("0", "0"))
            self.assertEqual(int(rep["client_kernels"]), ct.expected_client_kernels(t, ITERS))

    def test_timestamp_callback_before_start(self):
        # Kineto of 2026-08 on (no subscription) with a trace running from the start, and
        # NPKIT_CUPTI=1: every record the library gets is stamped in counter ticks
        run, traces, reports = self.job(self.torch(), ["start:clock,enable"], {"NPKIT_CUPTI": "1"})
        self.assertEqual(ct.gpu_lines(run), [])
        self.assertEqual([l for l in run.npkit_lines if "clock" in l], [CLOCK_LINE] * len(traces), run.describe())
        self.assert_mapped(run, traces)
        for rep in reports.values():
            self.assertEqual((rep["client_clock"], rep["client_enable"]), ("0", "0"))
            # the library registered its buffer callbacks after Kineto: Kineto's get nothing
            self.assertEqual(rep["client_kernels"], "0")

    def test_timestamp_callback_while_running(self):
        # a client registers its callback between iterations: records before keep CLOCK_REALTIME,
        # those after carry counter ticks; all are mapped, in order
        iters = 3
        run, traces, reports = self.job(self.app_client(), ["iter1:clock"], iters=iters)
        self.assertEqual(ct.gpu_lines(run), [])
        self.assertEqual([l for l in run.npkit_lines if "clock" in l], [CLOCK_LINE] * len(traces), run.describe())
        self.assert_mapped(run, traces, iters)
        for rep in reports.values():
            self.assertEqual(rep["client_clock"], "0")

    def test_no_callback_no_line(self):
        # the same job without the callback: no clock line (what the two tests above rely on)
        run, traces, _ = self.job(self.app_client(), [])
        self.assertEqual([l for l in run.npkit_lines if "clock" in l], [])
        self.assert_mapped(run, traces)


if __name__ == "__main__":
    unittest.main()
