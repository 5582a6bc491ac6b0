"""How the plugin is switched on and off, and what each setting records (plugin_calls on 2 ranks,
fake NCCL): self-registration by LD_PRELOAD, NCCL_PROFILER_PLUGIN naming the library without the
preload (and NCCL unloading and reloading it), a user's own NCCL_PROFILER_PLUGIN value,
NPKIT_PLUGIN=0, NPKIT_PLUGIN_EVENTS, NPKIT_DISABLE, and NCCL 2.27 (ABI v4) and 2.26 (v3)."""

import os
from collections import Counter
import re
import unittest

import plugin_lib as pl
from plugin_lib import lib

NP = 2


class PluginModes(lib.TempDirTestCase):
    def job(self, settings, args=(), preload=True, expect_traces=True, trace="trace"):
        trace_dir = self.path(trace)
        settings = dict(settings, NPKIT_TRACE_DIR=trace_dir)
        if not preload and lib.sanitizer_runtime():
            settings["LD_PRELOAD"] = lib.sanitizer_runtime()
        run = pl.run_calls(NP, settings, args, preload=preload)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        if not expect_traces:
            return run, None
        return run, lib.load_traces(trace_dir, expect=NP)

    def plugin_events(self, t):
        return [e for e in t.events if e.get("cat") in ("nccl_kernel", "nccl_gpu", "nccl_proxy", "nccl_net")]

    def with_algorithm(self, t):
        return [e for e in t.api() if "algorithm" in e["args"]]

    def test_preload_alone_enables_it(self):
        _, traces = self.job({})
        for t in traces.values():
            self.assertTrue(self.with_algorithm(t))
            self.assertTrue(pl.by_cat(t, "nccl_kernel"))
            self.assertEqual(pl.by_cat(t, "nccl_net"), [])  # one node: no network proxy

    def test_named_without_preload_and_reloaded(self):
        # --cycle: both communicators go, NCCL dlcloses the plugin, a new one loads it again
        _, traces = self.job({"NCCL_PROFILER_PLUGIN": lib.preload_lib()}, ["--cycle"],
                               preload=False)
        for r, t in traces.items():
            # no wrappers without the preload: the calls come from NCCL's own API events (2.28)
            self.assertTrue(t.api())
            self.assertEqual([e for e in t.api() if not e["args"].get("from_nccl_events")], [])
            labels = {pl.track_comm(t, k["tid"]) for k in pl.by_cat(t, "nccl_kernel")}
            # the first world and the second (the split halves have one rank each: NCCL
            # launches nothing for them)
            self.assertEqual(len(labels), 2, labels)
            for label in labels:
                self.assertRegex(label, r"^comm [0-9a-f]{8} \(rank %d/%d\)$" % (r, NP))
            # each world's first AllReduce is NCCL's AllReduce number 0 of its communicator
            first = [k for k in pl.by_cat(t, "nccl_kernel")
                     if k["args"]["func"] == "AllReduce" and k["args"]["nccl_seq"] == 0]
            self.assertEqual(len({pl.track_comm(t, k["tid"]) for k in first}), 2)

    def test_user_value_is_kept(self):
        _, traces = self.job({"NCCL_PROFILER_PLUGIN": "none"})
        for t in traces.values():
            self.assertTrue(t.api())
            self.assertEqual(self.with_algorithm(t), [])
            self.assertEqual(self.plugin_events(t), [])

    def test_off(self):
        _, traces = self.job({"NPKIT_PLUGIN": "0", "FAKE_NCCL_NET": "1"})
        for t in traces.values():
            self.assertTrue(t.api())
            self.assertEqual(self.with_algorithm(t), [])
            self.assertEqual(self.plugin_events(t), [])

    def test_disabled_library_registers_nothing(self):
        _, _ = self.job({"NPKIT_DISABLE": "1"}, expect_traces=False)
        self.assertEqual(lib.trace_files(self.path("trace")) + lib.log_files(self.path("trace")), [])

    def test_events_coll_only(self):
        _, traces = self.job({"NPKIT_PLUGIN_EVENTS": "coll", "FAKE_NCCL_NET": "1"})
        for t in traces.values():
            colls = self.with_algorithm(t)
            self.assertTrue(colls)
            for e in colls:
                self.assertNotIn("gpu_time_us", e["args"])
            self.assertEqual(self.plugin_events(t), [])

    def test_names_from_nccl_are_escaped(self):
        # a quote, a backslash and control characters in the algorithm and protocol names NCCL
        # passes (fault injection of the fake: a foreign build, a damaged log): every trace is
        # strict JSON and holds the names as they were, on the API events and the kernel slices
        algo, proto = 'R"I\\N\x01G', 'L\t"L'
        _, traces = self.job({"FAKE_NCCL_ALGO_NAME": algo, "FAKE_NCCL_PROTO_NAME": proto})
        for t in traces.values():
            colls = self.with_algorithm(t)
            self.assertTrue(colls)
            for e in colls:
                self.assertEqual((e["args"]["algorithm"], e["args"]["protocol"]), (algo, proto))
            kernels = [k for k in pl.by_cat(t, "nccl_kernel") if k["args"]["func"] not in ("Send", "Recv")]
            self.assertTrue(kernels)
            for k in kernels:
                self.assertTrue(k["name"].endswith(" %s/%s" % (algo, proto)), k)

    def test_events_minus_step(self):
        _, traces = self.job({"NPKIT_PLUGIN_EVENTS": "-step", "FAKE_NCCL_NET": "1"})
        for t in traces.values():
            ops = [o for o in pl.by_cat(t, "nccl_proxy") if o["name"].startswith("proxy ")]
            self.assertTrue(ops)
            self.assertEqual(pl.by_cat(t, "nccl_net"), [])
            # NCCL 2.27+ gives sizes per step only: without steps an op knows its plan, not bytes
            self.assertTrue(all(o["args"]["steps"] > 0 and o["args"]["steps_done"] == 0
                                and o["args"]["bytes"] == 0 for o in ops))

    def test_events_all_has_proxy_thread_states(self):
        _, traces = self.job({"NPKIT_PLUGIN_EVENTS": "all", "FAKE_NCCL_NET": "1"})
        for t in traces.values():
            names = t.thread_names()
            ctrl = [e for e in pl.by_cat(t, "nccl_proxy") if names[e["tid"]].startswith("proxy thread")]
            self.assertTrue(ctrl)
            self.assertEqual({e["name"] for e in ctrl}, {"Active"})  # the last state recorded
            self.assertTrue(all(e["args"]["appended"] > 0 for e in ctrl))

    def test_small_pool_keeps_whole_records(self):
        # A 1 MB pool (8 chunks of 1024 records) and 80 AllReduce of 4 MB over a network: more
        # records than the pool holds, so the chunks are recycled while NCCL's threads write proxy
        # records straight into them (npkit_record_begin/commit).  Against the same job with the
        # default pool: the same steps and ops with the same arguments, or fewer and counted as
        # dropped when the writer fell behind.
        def proxy(settings, trace):
            settings = dict(settings, FAKE_NCCL_NET="1", FAKE_NCCL_NCHANNELS="16")
            run, traces = self.job(settings, ["--loops", "80"], trace=trace)
            out = {}
            for r, t in traces.items():
                recs = pl.by_cat(t, "nccl_net") + pl.by_cat(t, "nccl_proxy")
                # what NCCL reported: not the times (they differ from run to run), nor the call's
                # seq, which the trace joins on in log order (a proxy record written before its
                # task met its call has none, and the flushes of a small pool change that order)
                out[r] = (t.other["dropped"], sorted(repr((e["name"], sorted((k, v) for k, v in e["args"].items()
                                                                          if not k.endswith("_us") and k != "seq")))
                                                     for e in recs))
            return run, out
        _, full = proxy({}, "default_pool")
        run, small = proxy({"NPKIT_EVENT_BUF_SIZE": "1"}, "small_pool")
        for r in full:
            self.assertEqual(full[r][0], 0)
            self.assertGreater(len(full[r][1]), 8192)  # more records than the small pool holds
            dropped, recs = small[r]
            extra = list((Counter(recs) - Counter(full[r][1])).elements())
            missing = list((Counter(full[r][1]) - Counter(recs)).elements())
            self.assertEqual(extra, [], "records the job did not make (rank %d): %s" % (r, extra[:5]))
            if dropped == 0:  # else some of the missing ones (or of other kinds) were dropped
                self.assertEqual(missing, [], "records lost without a count (rank %d): %s" % (r, missing[:5]))

    def test_bad_events_value(self):
        run, traces = self.job({"NPKIT_PLUGIN_EVENTS": "coll,bogus"})
        warned = [l for l in run.warnings if "NPKIT_PLUGIN_EVENTS" in l and "'bogus'" in l]
        self.assertEqual(len(warned), NP, run.describe())
        for t in traces.values():  # the default then
            self.assertTrue(pl.by_cat(t, "nccl_kernel"))

    def abi_job(self, abi):
        _, traces = self.job({"FAKE_NCCL_PROFILER_ABI": str(abi), "FAKE_NCCL_NET": "1"})
        for t in traces.values():
            colls = self.with_algorithm(t)
            self.assertTrue(colls)
            expected = pl.expected_nccl_seqs(t.api(), pl.comms_of(t))
            for e in colls:
                self.assertIn(e["args"]["nccl_seq"], expected[id(e)])
                self.assertEqual(e["args"]["protocol"], pl.proto(pl.task_bytes(e)))
        return traces

    def test_nccl_2_27_abi_v4(self):
        for t in self.abi_job(4).values():
            self.assertTrue(all(k["args"]["gpu_timer"] for k in pl.by_cat(t, "nccl_kernel")))
            self.assertTrue(all(s["args"]["size"] > 0 for s in pl.by_cat(t, "nccl_net")))

    def test_nccl_2_26_abi_v3(self):
        for t in self.abi_job(3).values():
            kernels = pl.by_cat(t, "nccl_kernel")
            self.assertTrue(kernels)
            # no GPU stamps before v4: the times are when the proxy thread reported them
            self.assertFalse(any(k["args"]["gpu_timer"] for k in kernels))
            # v3 steps carry no size; their ops carry the total
            self.assertTrue(all(s["args"]["size"] == 0 for s in pl.by_cat(t, "nccl_net")))
            ops = [o for o in pl.by_cat(t, "nccl_proxy") if o["name"].startswith("proxy ")]
            self.assertTrue(ops and all(o["args"]["bytes"] > 0 for o in ops))
            self.assertTrue(all(o["args"]["steps"] == -(-o["args"]["bytes"] // pl.STEP_BYTES)
                                for o in ops))


if __name__ == "__main__":
    unittest.main(verbosity=2)
