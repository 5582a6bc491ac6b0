"""The files themselves (docs/trace-format.md): the at-exit traces are strict JSON with the
documented metadata, ids and number formats; the binary log agrees with them; `npkit json`
renders the log into the same trace."""

import os
import re
import unittest

import npkit_testlib as lib

NP = 2


class TraceFormat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = lib.temp_dir("trace_format", cls.addClassCleanup)
        cls.trace_dir = os.path.join(cls.tmp, "trace")
        cls.job = lib.run_mpi("nccl_mix", ["--small", "--iters", "2"], NP,
                              settings={"NPKIT_TRACE_DIR": cls.trace_dir,
                                        "NPKIT_PLUGIN": "0"})  # API events only (tests/plugin)

    def setUp(self):
        self.assertEqual(self.job.rc, 0, self.job.describe())
        self.traces = lib.load_traces(self.trace_dir, expect=NP)

    def test_file_names(self):
        host = os.uname().nodename
        for r, t in self.traces.items():
            name = os.path.basename(t.path)
            m = re.match(r"^npkit_rank(\d+)_(.+)_(\d+)\.json$", name)
            self.assertTrue(m, name)
            self.assertEqual(int(m.group(1)), r)
            self.assertEqual(m.group(3), str(t.other["pid"]))
            self.assertEqual(m.group(2), t.other["host"])
            self.assertEqual(t.other["host"], host)
            self.assertTrue(os.path.exists(lib.log_for_trace(t.path)))
        self.assertEqual(len(lib.log_files(self.trace_dir)), NP)

    def test_other_data(self):
        for r, t in self.traces.items():
            o = t.other
            self.assertEqual(o["tool"], "npkit-preload")
            self.assertRegex(o["version"], r"^\d+\.\d+\.\d+$")
            self.assertEqual(o["log_version"], lib.log_format_version())
            self.assertEqual(o["clock"], "CLOCK_REALTIME")
            self.assertRegex(o["base_ns"], r"^\d+$")
            self.assertEqual(t.doc["displayTimeUnit"], "ns")
            self.assertEqual((o["rank"], o["world_size"], o["local_rank"]), (r, NP, r))
            self.assertEqual(o["rank_source"], "ompi")
            self.assertEqual(o["dropped"], 0)
            self.assertIs(o["truncated"], False)
            self.assertEqual(o["events"], len(t.api()))
            for c in o["comms"]:
                self.assertRegex(c["comm_id"], r"^0x[0-9a-f]{16}$")
                self.assertEqual(c["label"], "comm %s (rank %d/%d)"
                                 % (c["comm_id"][2:10], c["rank"], c["nranks"]))
                self.assertGreater(c["local_id"], 0)

    def test_numbers_have_three_decimals(self):
        for t in self.traces.values():
            stamps = re.findall(r'"(ts|dur)":\s*([^,}\s]+)', t.text)
            self.assertGreater(len(stamps), 50)
            for key, value in stamps:
                self.assertRegex(value, r"^-?\d+\.\d{3}$", "%s %s" % (key, value))

    def test_events_well_formed(self):
        for r, t in self.traces.items():
            pid = r + 1
            for e in t.events:
                self.assertIn(e["ph"], ("X", "M", "i", "C"), e)
                self.assertEqual(e["pid"], pid, e)
                if e["ph"] == "X":
                    self.assertGreaterEqual(e["dur"], 0, e)
                    self.assertGreaterEqual(e["ts"], 0, e)
                    if e["cat"] in ("nccl_api", "nccl_group"):
                        band = e["tid"] - pid * 1000
                        self.assertTrue(0 <= band < 400, e)

    def test_metadata(self):
        for r, t in self.traces.items():
            o = t.other
            names = t.metadata("process_name")
            self.assertEqual(len(names), 1)
            self.assertTrue(names[0]["args"]["name"].startswith(
                "rank %d · %s:%d" % (r, o["host"], o["pid"])), names[0])
            sort = t.metadata("process_sort_index")
            self.assertEqual([m["args"]["sort_index"] for m in sort], [r])
            labels = t.metadata("process_labels")
            self.assertEqual([m["args"]["labels"] for m in labels],
                             ["npkit-preload, world %d" % NP])
            api_tids = {e["tid"] for e in t.api()}
            thread_names = t.thread_names()
            for tid in api_tids:
                self.assertRegex(thread_names.get(tid, ""), r"^NCCL API · tid \d+$")
            sort_tids = {m["tid"] for m in t.metadata("thread_sort_index")}
            self.assertLessEqual(api_tids, sort_tids)

    def test_api_events_sequential_per_thread(self):
        for t in self.traces.values():
            per_tid = {}
            for e in t.events:
                if e.get("ph") == "X" and e.get("cat") == "nccl_api":
                    per_tid.setdefault(e["tid"], []).append(e)
            for tid, evs in per_tid.items():
                # The Chrome format does not require file order (the renderer writes a group's
                # ncclGroupStart when the group closes, so that its slice can be complete); in
                # time order the calls of one thread must follow each other without overlap.
                evs.sort(key=lambda e: e["ts"])
                for a, b in zip(evs, evs[1:]):
                    self.assertLessEqual(a["ts"], b["ts"], "tid %d: %s then %s" % (tid, a, b))
                    # calls on one thread do not overlap: the next starts after the last ended
                    self.assertLessEqual(a["ts"] + a["dur"], b["ts"], (a, b))

    def test_log_agrees_with_trace(self):
        for r, t in self.traces.items():
            log = lib.LogFile(lib.log_for_trace(t.path))
            self.assertEqual(log.magic, b"NPKITLOG")
            self.assertEqual((log.version, log.header_size), (lib.log_format_version(), 256))
            # every block carries its CRC32C, checked here independently of the C code
            self.assertEqual(log.checked, len(log.blocks))
            # later versions may append fields; the reader relies on the first ones only
            self.assertGreaterEqual(log.record_size, lib.EVENT_HEAD.size + lib.API_BODY.size)
            self.assertEqual(log.endian, 0x01020304)
            self.assertEqual((log.pid, log.rank), (t.other["pid"], r))
            self.assertEqual(log.host, t.other["host"])
            self.assertEqual(log.clock_base_ns, t.base_ns)
            self.assertEqual(log.trailing, 0)
            self.assertEqual(log.blocks[-1][0], lib.BLOCK_END, "clean close ends with END")
            self.assertEqual(len(log.events), len(t.api()))
            # from version 5 the library writes its events packed, decoded here independently
            self.assertEqual(log.packed_events, len(log.events) if log.version >= 5 else 0)
            # function ids are 1-based positions in nccl_api.def
            api = lib.api_table()
            from_log = sorted((s, e - s, api[f - 1][0]) for f, s, e, _, _ in log.events)
            from_trace = sorted((t.start_ns(e), int(e["dur"] * 1000), e["name"])
                                for e in t.api())
            self.assertEqual(from_log, from_trace)
            ids = {"0x%016x" % cid for _, cid, _, _ in log.comms}
            self.assertEqual(ids, {c["comm_id"] for c in t.other["comms"]})

    def test_tool_renders_the_same_trace(self):
        for t in self.traces.values():
            out = os.path.join(self.tmp, "rendered_%d.json" % t.rank)
            run = lib.run_tool(["json", lib.log_for_trace(t.path), "-o", out])
            self.assertEqual(run.rc, 0, run.describe())
            rendered = lib.Trace(out)
            self.assertEqual(rendered.doc, t.doc)


if __name__ == "__main__":
    unittest.main(verbosity=2)
