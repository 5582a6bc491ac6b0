"""The library as NCCL 2.23 (ABI v1) and 2.24 (v2) load it: plugin_driver dlopens it (no
preload), drives one AllReduce with a send proxy op of two steps, then abuses the entry points
and dlcloses it.  Every entry point must succeed, the abuses must be counted and nothing else
recorded, the v1 numbers must come out as NCCL's names, and the process must exit cleanly after
the dlclose (the library keeps itself loaded for its exit handlers)."""

import os
import subprocess
import unittest

import plugin_lib as pl
from plugin_lib import lib


class PluginAbi(lib.TempDirTestCase):
    def drive(self, abi):
        trace_dir = self.path("trace%d" % abi)
        env = {k: v for k, v in os.environ.items() if k not in lib.LIBRARY_SETTINGS}
        env.pop("LD_PRELOAD", None)
        runtime = lib.sanitizer_runtime()
        if runtime:
            env["LD_PRELOAD"] = runtime
        env.update(lib.sanitizer_env())
        env["NPKIT_TRACE_DIR"] = trace_dir
        cmd = [pl.need("NPKIT_PLUGIN_DRIVER"), lib.preload_lib(), str(abi)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        run = lib.Run(cmd, proc)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        self.assertEqual([l for l in run.stderr_lines if "plugin_driver" in l], [], run.describe())
        traces = lib.trace_files(trace_dir)
        self.assertEqual(len(traces), 1, run.describe())
        return lib.Trace(traces[0])

    def check(self, t):
        self.assertEqual(t.api(), [])
        ops = [e for e in pl.by_cat(t, "nccl_proxy") if e["name"] == "proxy send"]
        self.assertEqual(len(ops), 1)
        a = ops[0]["args"]
        self.assertEqual((a["channel"], a["peer"], a["steps"], a["steps_done"], a["bytes"]),
                         (1, 1, 2, 2, 4000))
        self.assertEqual((a["func"], a["algorithm"], a["protocol"], a["nccl_seq"]),
                         ("AllReduce", "RING", "LL", 0))
        self.assertEqual(t.thread_names()[ops[0]["tid"]],
                         "proxy ch 1 send \u2192 1 \u00b7 NCCL comm ctx 1")
        steps = sorted(pl.by_cat(t, "nccl_net"), key=lambda e: e["args"]["step"])
        self.assertEqual([(s["name"], s["args"]["step"], s["args"]["size"]) for s in steps],
                         [("net send", 0, 0), ("net send", 1, 0)])  # v1/v2 give no step sizes
        for s in steps:
            self.assertGreaterEqual(s["ts"], ops[0]["ts"])
            self.assertLessEqual(s["ts"] + s["dur"], ops[0]["ts"] + ops[0]["dur"])
        counters = [e for e in t.events if e.get("name") == "npkit plugin"]
        self.assertEqual(len(counters), 1)
        self.assertEqual(counters[0]["args"], {"lost": 0, "late": 4, "foreign": 0, "ignored": 1})
        self.assertEqual(pl.by_cat(t, "nccl_kernel"), [])  # no kernel channels before v3

    def test_v1_numbers(self):
        self.check(self.drive(1))

    def test_v2_strings(self):
        self.check(self.drive(2))


if __name__ == "__main__":
    unittest.main(verbosity=2)
