"""The toolkit's real libnccl on a machine without a GPU: ncclCommInitRank fails, and it must
fail the same way with the library preloaded, with the failure recorded in the trace."""

import os
import unittest

import npkit_testlib as lib


def outcome(path):
    """{function: (code, text)} from nccl_real_init's output."""
    out = {}
    with open(path) as f:
        for line in f:
            fn, code, text = line.rstrip("\n").split(" ", 2)
            out[fn] = (int(code), text)
    return out


RESULT_NAMES = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]


@unittest.skipUnless(lib.real_nccl_available(),
                     "no libnccl.so.2 in the CUDA toolkit folder (NPKIT_CUDA_LIB_DIR)")
class RealNccl(lib.TempDirTestCase):
    def test_same_codes_and_recorded_failure(self):
        plain_out, traced_out = self.path("plain.txt"), self.path("traced.txt")
        trace_dir = self.path("trace")
        plain = lib.run_direct("nccl_real_init", [plain_out], nccl="real", preload=False,
                               cwd=self.tmp)
        self.assertRunOk(plain)
        traced = lib.run_direct("nccl_real_init", [traced_out], nccl="real",
                                settings={"NPKIT_TRACE_DIR": trace_dir}, cwd=self.tmp)
        self.assertRunOk(traced)
        self.assertEqual(traced.stdout, plain.stdout)
        want, got = outcome(plain_out), outcome(traced_out)
        self.assertEqual(got, want)
        self.assertIn("ncclCommInitRank", want)

        traces = lib.load_traces(trace_dir)
        self.assertEqual(len(traces), 1)
        t = list(traces.values())[0]
        calls = [(e["name"], e["args"].get("result")) for e in t.api()]
        expected = [(fn, RESULT_NAMES[code]) for fn, (code, _) in want.items()]
        self.assertEqual(calls, expected)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "npkit_trace")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
