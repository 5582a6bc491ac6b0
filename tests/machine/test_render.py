"""The machine in a trace and in `npkit info`, from a log the test builds (tests/fuzz/seeds/
machine.spec, also a fuzz seed): otherData.machine says what the MACHINE blocks say, the counter
tracks are the rates between consecutive samples computed here, a counter that went back (a reset)
or could not be read starts over, and a port index beyond the tracks is dropped; logs of format 2
(no MACHINE block) render without a machine."""

import json
import os
import subprocess
import unittest

import machine_lib as ml

lib = ml.lib
SPEC = os.path.join(lib.source_dir(), "tests", "fuzz", "seeds", "machine.spec")
BASE = 1764671234000000000


def build(spec, out):
    exe = lib.need_file(os.path.join(lib.need_env("NPKIT_BUILD_DIR"), "tests", "unit", "build_log"), "build_log")
    subprocess.run([exe, spec, out], check=True, capture_output=True)


class Render(lib.TempDirTestCase):

    def trace(self, log):
        run = lib.run_tool(["json", log, "-o", self.path("t.json")])
        self.assertIn(run.rc, (0, 1), run.describe())
        with open(self.path("t.json")) as f:
            return json.load(f)

    def test_machine_spec(self):
        log = self.path("m.npkit")
        build(SPEC, log)
        t = self.trace(log)
        m = t["otherData"]["machine"]
        self.assertEqual(m["host"], {"name": "node2", "resolves": False, "error": "Name or service not known"})
        self.assertEqual((m["nofile_soft"], m["nofile_hard"], m["cpus"], m["nccl_version"]), (1024, "unlimited", 128, 22809))
        self.assertEqual(m["gpus"], [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1234",
                                      "bus_id": "00000000:18:00.0", "nvlinks": 4, "nvlinks_active": 3, "links_down": [1],
                                      "nvlink_version": "4.0", "nvlink_gbs": 75}])
        self.assertEqual(m["gpu"], {"cuda_device": 0, "nvml_index": 0, "how": "pci_bus_id", "bus_id": "0000:18:00.0"})
        self.assertEqual(m["ports"][0], {"type": "ib", "name": "mlx5_0/1", "rate_gbps": 50, "up": True,
                                         "rate": "50 Gb/sec (1X HDR)", "width": 1, "state": "4: ACTIVE",
                                         "phys_state": "5: LinkUp", "link_layer": "InfiniBand"})
        self.assertEqual(m["ports"][1], {"type": "eth", "name": "eth0", "rate_gbps": 1, "up": True, "speed": 1000,
                                         "duplex": "half", "operstate": "up", "mtu": 1500, "physical": True})
        self.assertEqual(m["settings"], [{"name": "NCCL_ALGO", "value": "Tree", "origin": "env"},
                                         {"name": "NCCL_ALGO", "value": "Ring", "origin": "conf",
                                          "file": "/etc/nccl.conf", "applied": False}])
        self.assertEqual(m["sampling"], {"gpu_us": 20000, "cpu_ns": 10000000, "pcie": False})
        counters = [(e["name"], e["ts"], e["args"]) for e in t["traceEvents"] if e.get("ph") == "C"]
        ts = lambda ns: round((ns - BASE) / 1000.0, 3)  # noqa: E731
        t2 = BASE + 21000500
        want = [("GPU 0 clocks (MHz)", ts(BASE + 1000500), {"sm": 1980, "memory": 2619}),
                ("GPU 0 utilization (%)", ts(BASE + 1000500), {"gpu": 87, "memory": 45}),
                ("GPU 0 power (W)", ts(BASE + 1000500), {"power": 350.123}),
                ("GPU 0 temperature (C)", ts(BASE + 1000500), {"gpu": 61}),
                ("GPU 0 clocks (MHz)", ts(t2), {"sm": 1980, "memory": 2619}),
                ("GPU 0 utilization (%)", ts(t2), {"gpu": 90, "memory": 40}),
                ("GPU 0 power (W)", ts(t2), {"power": 360}),
                ("GPU 0 temperature (C)", ts(t2), {"gpu": 62}),
                ("GPU 0 NVLink (GB/s)", ts(t2), {"tx": 500000 * 1024 / 20e6, "rx": 250000 * 1024 / 20e6}),
                ("port mlx5_0/1 (Gb/s)", ts(BASE + 21000600), {"tx": 5000000 * 8 / 20e6, "rx": 2500000 * 8 / 20e6}),
                ("process CPU (%)", ts(BASE + 21000800), {"user": 5e6 / 20e6 * 100, "system": 1e6 / 20e6 * 100})]
        self.assertEqual(len(counters), len(want), counters)
        for (n, tt, a), (wn, wt, wa) in zip(counters, want):
            self.assertEqual((n, a), (wn, wa))
            self.assertAlmostEqual(float(tt), wt, places=3)
        self.assertTrue(all(e["pid"] == 2 for e in t["traceEvents"] if e.get("ph") == "C"))

    def test_version_2_log(self):
        spec = self.path("v2.spec")
        with open(spec, "w") as f:
            f.write("header version=2 rank=0 world=1 host=n\n"
                    "ev fn=AllReduce thread=1 start=1764671234010000000 end=1764671234012000000 count=1 bytes=4\n")
        build(spec, self.path("v2.npkit"))
        t = self.trace(self.path("v2.npkit"))
        self.assertNotIn("machine", t["otherData"])
        self.assertEqual(t["otherData"]["log_version"], 2)
        info = lib.run_tool(["info", self.path("v2.npkit")])
        self.assertIn("machine        none (no MACHINE block", info.stdout)


if __name__ == "__main__":
    unittest.main()
