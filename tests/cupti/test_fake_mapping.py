"""GPU events under the fake libcupti: every kernel, copy and memset appears once, tied to the
NCCL call that launched it (arrow, function, bytes, communicator, sequence number, group), compute
kernels of the application on their own stream, CUDA graph replays attributed to the captured call
— also when CUPTI returns records out of order, across many small buffers and flushes, in the CUDA
12 kernel layout, and when the job never destroys its communicators."""

import re
import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 3


class FakeMapping(lib.TempDirTestCase):

    def run_checked(self, settings, args=("--graph",), np=2, iters=ITERS):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti()}
        s.update(settings)
        run = ct.run_job(["--iters", str(iters)] + list(args), np=np, settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        self.assertEqual(ct.gpu_lines(run), [], run.describe())
        self.assertEqual(run.warnings, [], run.describe())
        traces = lib.load_traces(trace_dir, expect=np)
        for r, t in traces.items():
            problems = ct.check_mapping(t, iters, graph="--graph" in args)
            self.assertEqual(problems, [], "rank %d:\n%s" % (r, lib.format_problems(problems)))
            self.assertEqual(t.other["dropped"], 0)
            n_kernels = len(ct.kernels(t))
            # the application's copies, and NCCL's of one-rank collectives
            n_copies = len(ct.kernels(t, "gpu_memcpy"))
            self.assertEqual(n_copies, iters * (1 + 5 if np == 1 else 1))  # 5 collectives per iteration
            self.assertEqual(ct.exit_counts(run, r), (n_kernels, n_copies, iters, 0))
        return run, traces

    def test_every_kernel_tied_to_its_call(self):
        run, traces = self.run_checked({})
        for r, t in traces.items():
            tracks = ct.gpu_tracks(t)
            # compute+copy stream, the NCCL stream, the Broadcast stream, the graph stream
            self.assertEqual(len(tracks), 4, tracks)
            for tid, name in tracks.items():
                self.assertRegex(name, r"^GPU %d \u00b7 stream \d+$" % r)
            # the kernels of a stream are on that stream's track
            for k in ct.kernels(t) + ct.kernels(t, "gpu_memcpy") + ct.kernels(t, "gpu_memset"):
                self.assertEqual(tracks[k["tid"]], "GPU %d \u00b7 stream %d" % (r, k["args"]["stream"]))
            # bandwidth from GPU time, nccl-tests definitions
            for k in ct.kernels(t):
                a = k["args"]
                if a.get("nccl_call") == "ncclAllReduce" and "graph_id" not in a:
                    algbw = a["nccl_bytes"] / (float(k["dur"]) * 1000)
                    self.assertAlmostEqual(float(a["algbw_gbps"]), algbw, delta=algbw * 0.01 + 0.002)
                    self.assertAlmostEqual(float(a["busbw_gbps"]), float(a["algbw_gbps"]), delta=0.002)

    def test_out_of_order_records_small_buffers_cuda12_layout(self):
        # correlation records written after the kernels they describe, 1 KB buffers (a handful of
        # records each), a forced flush every 2 ms while each call takes 3 ms (its kernels are
        # processed before it returns), and 208-byte Kernel9 records of a CUDA 12.6 CUPTI
        run, _ = self.run_checked({"FAKE_CUPTI_EXT_LATE": "1", "NPKIT_CUPTI_BUFFER_KB": "1",
                                   "NPKIT_FLUSH_MS": "2", "FAKE_CUPTI_KERNEL_VERSION": "9",
                                   "FAKE_CUPTI_API_VERSION": "24", "FAKE_NCCL_LAT_US": "3000",
                                   "NPKIT_LOG_LEVEL": "debug"})
        # both kinds of waiting really happened (the debug line of each rank's final drain)
        stats = [re.search(r"GPU: (\d+) buffers from CUPTI, (\d+) records waited for their call, "
                           r"(\d+) for a correlation record", l) for l in run.npkit_lines]
        stats = [tuple(int(x) for x in m.groups()) for m in stats if m]
        self.assertEqual(len(stats), 2, run.describe())
        self.assertTrue(all(b > 5 for b, _, _ in stats), stats)
        self.assertGreater(sum(c for _, c, _ in stats), 0, stats)
        self.assertGreater(sum(r for _, _, r in stats), 0, stats)

    def api_records(self, run):
        """rank order -> (API records read, how the library chose them), from the debug lines."""
        counts = [int(m.group(1)) for m in
                  (re.search(r"correlation record; (\d+) API records", l) for l in run.npkit_lines) if m]
        modes = [m.group(1) for m in
                 (re.search(r"API records of (.*)$", l) for l in run.npkit_lines) if m]
        self.assertEqual(len(counts), 2, run.describe())
        self.assertEqual(len(modes), 2, run.describe())
        return counts, modes

    def test_api_records_only_for_launch_calls(self):
        # CUPTI correlates only traced API calls: the library traces NCCL's launch entry points
        # (cuLaunchKernelEx, cudaMemcpyAsync, ...), not the application's cudaLaunchKernel,
        # cudaMemsetAsync or cudaGraphLaunch
        run, traces = self.run_checked({"NPKIT_LOG_LEVEL": "debug"})
        counts, modes = self.api_records(run)
        self.assertEqual(set(modes), {"NCCL's launch calls"})
        for r, t in traces.items():
            ks = ct.kernels(t)
            launched = len([k for k in ks if k["name"].startswith("ncclDevKernel_")
                            and "graph_id" not in k["args"]])
            copies = len(ct.kernels(t, "gpu_memcpy"))
            self.assertEqual(counts[r], launched + 1 + copies)  # + the captured launch

    def test_cupti_without_single_api_selection(self):
        # a CUPTI that cannot enable single callback ids: every driver and runtime call is
        # traced, and the mapping is the same
        run, traces = self.run_checked({"NPKIT_LOG_LEVEL": "debug", "FAKE_CUPTI_API_FILTER": "0"})
        counts, modes = self.api_records(run)
        self.assertEqual(set(modes), {"every driver and runtime call"})
        for r, t in traces.items():
            ks = ct.kernels(t)
            launched = len([k for k in ks if "graph_id" not in k["args"]])  # NCCL's and compute
            others = len(ct.kernels(t, "gpu_memcpy")) + len(ct.kernels(t, "gpu_memset"))
            self.assertEqual(counts[r], launched + 1 + others + ct.GRAPH_REPLAYS)

    def test_communicators_never_destroyed(self):
        # PyTorch-style exit: the GPU events come from the exit handlers' final flush
        self.run_checked({"NPKIT_FLUSH_MS": "3600000"}, args=("--graph", "--no-destroy"))

    def test_log_renders_the_same_with_the_tool(self):
        run, traces = self.run_checked({}, args=(), np=1, iters=2)
        t = traces[0]
        log = lib.log_for_trace(t.path)
        out = self.path("again.json")
        r = lib.run_tool(["json", log, "-o", out])
        self.assertEqual(r.rc, 0, r.describe())
        again = lib.Trace(out)
        self.assertEqual(ct.check_mapping(again, 2, graph=False), [])
        key = lambda e: (e["ts"], e["tid"], e["name"])
        self.assertEqual(sorted(ct.kernels(t), key=key), sorted(ct.kernels(again), key=key))


if __name__ == "__main__":
    unittest.main()
