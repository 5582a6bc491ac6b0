"""Sampled counters (NPKIT_GPU_SAMPLE_RATE, NPKIT_CPU_SAMPLE_INTERVAL) under real mpirun: a fake NVML
per rank whose NVLink counters grow at known rates, /sys trees whose port counters the test makes
grow at known rates while the job runs.  Checked: the samples in the log (values, periods,
rates), the counter tracks of the traces recomputed from the log's samples, the counters of the
log and the exit line; PCIe only at periods of 100 ms or more; nothing sampled by default."""

import unittest

import machine_lib as ml

lib = ml.lib
NP = 2
JOB = ["-b", "1M", "-e", "1M", "-n", "300", "-w", "1"]
NVLINK_TX, NVLINK_RX = 4000000, 1000000          # KiB/s of the fake NVML's counters
PORT_RATES = {"mlx5_0": (3.0e9, 1.5e9), "eth0": (1.0e8, 2.0e8)}  # bytes/s the test feeds


class Sampling(lib.TempDirTestCase):

    def run_sampled(self, gpu_us, cpu_ns=None, job=JOB):
        self.trace_dir = self.path("trace")
        per_rank, feeders = {}, []
        for r in range(NP):
            root = self.path("sys%d" % r)
            ports = [ml.ib_port("mlx5_0", 1, "200 Gb/sec (4X HDR)"), ml.eth_port("eth0")]
            ml.make_sysfs(root, ports)
            feeders.append(ml.CounterFeeder(root, [(p, PORT_RATES[p["dev"]]) for p in ports]))
            conf = self.path("nvml%d.conf" % r)
            # rank 1's GPU has no NVLink, like the single H200 of a VM: its NVLink fields are NOT_SUPPORTED
            ml.write_nvml_config(conf, [ml.gpu(0, nvlink_tx_kibs=NVLINK_TX, nvlink_rx_kibs=NVLINK_RX, nvlinks=18 - 18 * r,
                                               pcie_tx_kbs=1200 + r, pcie_rx_kbs=3400 + r, sm_mhz=1900 + r),
                                        ml.gpu(1, nvlink_tx_kibs=1, nvlink_rx_kibs=1)])
            per_rank[r] = {"NPKIT_SYSFS_ROOT": root, "FAKE_NVML_CONFIG": conf}
        settings = {"NPKIT_TRACE_DIR": self.trace_dir, "NPKIT_CUPTI": "0", "FAKE_NCCL_BW_GBPS": "0.5",
                    "FAKE_NCCL_DEVICE": "0", "NPKIT_NVML_LIBRARY": ml.fake_nvml_dir() + "/libnvidia-ml.so.1"}
        if gpu_us is not None:
            settings["NPKIT_GPU_SAMPLE_RATE"] = str(gpu_us)
        if cpu_ns is not None:
            settings["NPKIT_CPU_SAMPLE_INTERVAL"] = str(cpu_ns)
        for f in feeders:
            f.start()
        try:
            run = ml.run_job(self.tmp, NP, [ml.perf()] + job, settings, per_rank)
        finally:
            for f in feeders:
                f.stop()
        self.assertEqual(run.rc, 0, run.describe())
        return run, ml.logs_by_rank(self.trace_dir)

    def test_samples_and_tracks(self):
        run, logs = self.run_sampled(20000, cpu_ns=10000000)
        traces = lib.load_traces(self.trace_dir, expect=NP)
        for rank, log in logs.items():
            evs = ml.machine_events(log)
            ports = ml.records_of(ml.machine_records(log), "port")
            gpus = [e for e in evs if e["kind"] == "gpu"]
            cpus = [e for e in evs if e["kind"] == "cpu"]
            self.assertTrue(all(e["thread"] == 0 for e in evs))
            # the process's GPU: CUDA device 0 is NVML's 0 (no driver, no CUDA_VISIBLE_DEVICES)
            self.assertGreater(len(gpus), 3, log)
            want_valid = ml.MGPU["clocks"] | ml.MGPU["util"] | ml.MGPU["power"] | ml.MGPU["temp"]
            if rank == 0:
                want_valid |= ml.MGPU["nvlink"]
            for g in gpus:
                self.assertEqual((g["gpu"], g["valid"], g["sm_mhz"], g["mem_mhz"], g["util_gpu"], g["util_mem"],
                                  g["power_mw"], g["temp_c"]), (0, want_valid, 1900 + rank, 2619, 87, 45, 350123, 61))
            if rank == 0:
                self.check_rate([(g["end"], g["nvlink_tx_kib"]) for g in gpus], NVLINK_TX, 0.15, "NVLink tx")
                self.check_rate([(g["end"], g["nvlink_rx_kib"]) for g in gpus], NVLINK_RX, 0.15, "NVLink rx")
            else:
                self.assertEqual({(g["nvlink_tx_kib"], g["nvlink_rx_kib"]) for g in gpus}, {(0, 0)})
            # every port, every period, in the snapshot's order
            by_port = {}
            for e in (e for e in evs if e["kind"] == "port"):
                by_port.setdefault(e["name"], []).append(e)
            self.assertEqual(sorted(by_port), ["eth0", "mlx5_0/1"])
            for name, samples in by_port.items():
                dev = name.split("/")[0]
                index = [i for i, p in enumerate(ports) if p["dev"] == dev]
                self.assertEqual({s["port"] for s in samples}, set(index), name)
                self.assertEqual({s["flags"] for s in samples}, {1 if dev == "mlx5_0" else 0}, name)
                self.assertGreater(len(samples), 5, name)
                ends = [s["end"] for s in samples]
                gaps = sorted(b - a for a, b in zip(ends, ends[1:]))
                self.assertGreaterEqual(gaps[len(gaps) // 2], 15e6, "median period of %s: %r" % (name, gaps))
                self.check_rate([(s["end"], s["tx"]) for s in samples], PORT_RATES[dev][0], 0.25, name + " tx")
                self.check_rate([(s["end"], s["rx"]) for s in samples], PORT_RATES[dev][1], 0.25, name + " rx")
                self.check_track(traces[rank], "port %s (Gb/s)" % name, samples, "tx", "rx", 8.0 / 1e9)
            if rank == 0:
                self.check_track(traces[rank], "GPU 0 NVLink (GB/s)", gpus, "nvlink_tx_kib", "nvlink_rx_kib", 1024.0 / 1e9)
            else:
                self.assertEqual([e for e in traces[rank].events if e.get("name") == "GPU 0 NVLink (GB/s)"], [])
            clocks = [e for e in traces[rank].events if e.get("ph") == "C" and e["name"] == "GPU 0 clocks (MHz)"]
            self.assertEqual(len(clocks), len(gpus))
            self.assertTrue(all(e["args"] == {"sm": 1900 + rank, "memory": 2619} for e in clocks))
            power = [e for e in traces[rank].events if e.get("ph") == "C" and e["name"] == "GPU 0 power (W)"]
            self.assertTrue(power and all(float(e["args"]["power"]) == 350.123 for e in power))
            self.assertEqual([e for e in traces[rank].events if e.get("name", "").startswith("GPU 0 PCIe")], [])
            # the CPU every 10 ms, cumulative
            self.assertGreater(len(cpus), len(gpus))
            for a, b in zip(cpus, cpus[1:]):
                self.assertTrue(b["user"] >= a["user"] and b["system"] >= a["system"] and b["end"] > a["end"])
            self.check_track(traces[rank], "process CPU (%)", cpus, "user", "system", 100.0 / 1e9)
            self.assertEqual(ml.counters(log), (len(evs), 0))
            exits = [l for l in run.npkit_lines if l.startswith("npkit: rank %d: wrote" % rank)]
            self.assertEqual(len(exits), 1, run.describe())
            # one pass over the GPU and the ports per period (the GPU only once its communicator says)
            self.assertIn("; machine: %d samples" % len(by_port["eth0"]), exits[0])

    def check_rate(self, points, want, tolerance, what):
        (t0, v0), (t1, v1) = points[0], points[-1]
        self.assertTrue(all(b[1] >= a[1] for a, b in zip(points, points[1:])), what + " is not cumulative")
        got = (v1 - v0) * 1e9 / (t1 - t0)
        self.assertLess(abs(got - want) / want, tolerance, "%s: %.4g per s, want %.4g" % (what, got, want))

    def check_track(self, trace, name, samples, ka, kb, scale):
        """The counter track `name` holds, at every sample but the first, the rates between it and
        the one before, computed here from the log's samples as the renderer must."""
        events = [e for e in trace.events if e.get("ph") == "C" and e.get("name") == name]
        want = []
        for a, b in zip(samples, samples[1:]):
            want.append((round((b["end"] - trace.base_ns) / 1000.0, 3),
                         (b[ka] - a[ka]) * 1e9 / (b["end"] - a["end"]) * scale,
                         (b[kb] - a[kb]) * 1e9 / (b["end"] - a["end"]) * scale))
        keys = list(events[0]["args"]) if events else []
        got = [(float(e["ts"]), float(e["args"][keys[0]]), float(e["args"][keys[1]])) for e in events]
        self.assertEqual(len(got), len(want), name)
        for g, w in zip(got, want):
            self.assertAlmostEqual(g[0], w[0], places=3, msg=name)
            self.assertEqual(g[1:], w[1:], name)
        self.assertTrue(all(e["pid"] == trace.rank + 1 and e["cat"] == "machine" for e in events))

    def test_pcie_at_long_periods(self):
        run, logs = self.run_sampled(100000, job=["-b", "1M", "-e", "1M", "-n", "250", "-w", "1"])
        for rank, log in logs.items():
            gpus = [e for e in ml.machine_events(log) if e["kind"] == "gpu"]
            self.assertGreater(len(gpus), 1, log)
            for g in gpus:
                self.assertTrue(g["valid"] & ml.MGPU["pcie"])
                self.assertEqual((g["pcie_tx_kbs"], g["pcie_rx_kbs"]), (1200 + rank, 3400 + rank))
                self.assertGreaterEqual(g["end"] - g["start"], 40e6)  # two readings of 20 ms inside NVML
            recs = ml.machine_records(log)
            self.assertEqual(ml.records_of(recs, "snapshot")[0]["pcie"], "yes")
            pcie = [e for e in lib.load_traces(self.trace_dir)[rank].events if e.get("name") == "GPU 0 PCIe (KB/s)"]
            self.assertEqual([e["args"] for e in pcie], [{"tx": 1200 + rank, "rx": 3400 + rank}] * len(gpus))

    def test_off_by_default(self):
        run, logs = self.run_sampled(None, job=["-b", "1K", "-e", "1K", "-n", "2", "-w", "1"])
        for log in logs.values():
            self.assertEqual(ml.machine_events(log), [])
            self.assertIsNone(ml.counters(log))
        self.assertFalse(any("machine:" in l for l in run.npkit_lines), run.describe())


if __name__ == "__main__":
    unittest.main()
