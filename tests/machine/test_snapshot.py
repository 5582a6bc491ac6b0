"""The machine snapshot under real mpirun: every rank with its own /sys tree (NPKIT_SYSFS_ROOT),
fake NVML, host name and settings.  What the log's MACHINE blocks say is checked against what
the test generated, record by record; the trace's otherData.machine and `npkit info` against the
same.  Also: a machine without NVML (this one), an NVML without a driver, a bad NPKIT_NVML_LIBRARY,
NPKIT_MACHINE=0, and the real /sys of this machine read by the test itself."""

import errno
import os
import resource
import unittest

import machine_lib as ml

lib = ml.lib
JOB = ["-b", "1K", "-e", "1K", "-n", "2", "-w", "1"]


class Snapshot(lib.TempDirTestCase):

    def setUp(self):
        super().setUp()
        self.trace_dir = self.path("trace")

    def settings(self, **extra):
        s = {"NPKIT_TRACE_DIR": self.trace_dir, "NPKIT_CUPTI": "0"}
        s.update(extra)
        return s

    def run_ok(self, np, settings, per_rank=None):
        run = ml.run_job(self.tmp, np, [ml.perf()] + JOB, settings, per_rank)
        self.assertEqual(run.rc, 0, run.describe())
        logs = ml.logs_by_rank(self.trace_dir)
        self.assertEqual(sorted(logs), list(range(np)), run.describe())
        return run, logs

    # -- two ranks on two fake hosts -------------------------------------------------------------

    def two_hosts(self):
        """Rank 0: InfiniBand at 4X HDR (one port down), NVLink 4 GPUs of which the process's has two
        links down, found by PCI bus id; rank 1: a 1X port, half duplex Ethernet, GPUs without
        NVLink, found through CUDA_VISIBLE_DEVICES; different NCCL_ALGO; rank 1's host does not
        resolve."""
        r0, r1 = self.path("sys0"), self.path("sys1")
        self.ports = {
            0: [ml.ib_port("mlx5_0", 1, "200 Gb/sec (4X HDR)"),
                ml.ib_port("mlx5_10", 1, "200 Gb/sec (4X HDR)", state="1: DOWN", phys_state="3: Disabled"),
                ml.ib_port("mlx5_2", 1, "100 Gb/sec (4X EDR)", link_layer="Ethernet"),
                ml.eth_port("eth0"), ml.eth_port("docker0", speed="-1", duplex="unknown", physical=False),
                ml.eth_port("eth1", operstate="down", speed_unreadable=True)],
            1: [ml.ib_port("mlx5_0", 1, "50 Gb/sec (1X HDR)"), ml.eth_port("eth0", speed="1000", duplex="half")],
        }
        ml.make_sysfs(r0, self.ports[0])
        ml.make_sysfs(r1, self.ports[1])
        self.gpus = {0: [ml.gpu(0), ml.gpu(1, down=(3, 4))],
                     1: [ml.gpu(0, name="NVIDIA L40S", nvlinks=0), ml.gpu(1, name="NVIDIA L40S", nvlinks=0)]}
        ml.write_nvml_config(self.path("nvml0.conf"), self.gpus[0])
        ml.write_nvml_config(self.path("nvml1.conf"), self.gpus[1], driver="535.104.05")
        conf = self.path("nccl.conf")
        with open(conf, "w") as f:
            f.write("# site settings\nNCCL_SOCKET_IFNAME=eth0\nNCCL_ALGO=Tree\nNCCL_IB_HCA=mlx5_0\n")
        preload = ":".join([p for p in lib.job_env()["LD_PRELOAD"].split(":")[:-1]] +
                           [ml.host_shim(), ml.fake_driver(), lib.preload_lib()])
        per_rank = {
            0: {"NPKIT_SYSFS_ROOT": r0, "FAKE_NVML_CONFIG": self.path("nvml0.conf"), "FAKE_HOSTNAME": "npkit-fake-a",
                "NCCL_ALGO": "Ring", "NCCL_CONF_FILE": conf, "LD_PRELOAD": preload,
                "FAKE_CUDA_BUS_IDS": "0000:28:00.0,0000:18:00.0"},
            1: {"NPKIT_SYSFS_ROOT": r1, "FAKE_NVML_CONFIG": self.path("nvml1.conf"), "FAKE_HOSTNAME": "npkit-fake-b",
                "NCCL_ALGO": "Tree", "CUDA_VISIBLE_DEVICES": self.gpus[1][1]["uuid"][:12]},
        }
        settings = self.settings(LD_LIBRARY_PATH=lib.nccl_dir("fake") + ":" + ml.fake_nvml_dir(),
                                 FAKE_RESOLVABLE="npkit-fake-a", FAKE_NCCL_DEVICE="0")
        return self.run_ok(2, settings, per_rank)

    def test_records(self):
        run, logs = self.two_hosts()
        for rank, log in logs.items():
            recs = ml.machine_records(log)
            one = lambda kind: self.only(recs, kind, log)  # noqa: E731
            snap = one("snapshot")
            self.assertEqual(snap["sysfs_root"], self.path("sys%d" % rank))
            self.assertEqual((snap["gpu_sample_us"], snap["cpu_sample_ns"], snap["pcie"]), ("0", "0", "no"))
            host = one("host")
            self.assertEqual(host["name"], "npkit-fake-%s" % "ab"[rank])
            if rank == 0:
                self.assertEqual((host["resolves"], host["addr"]), ("yes", "127.0.0.1"))
            else:
                self.assertEqual(host["resolves"], "no")
                self.assertTrue(host["error"], host)
            system = one("system")
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            self.assertEqual(system["nofile_soft"], "unlimited" if soft == resource.RLIM_INFINITY else str(soft))
            self.assertEqual(system["nofile_hard"], "unlimited" if hard == resource.RLIM_INFINITY else str(hard))
            u = os.uname()
            self.assertEqual(system["kernel"], "%s %s" % (u.release, u.version))
            self.assertEqual(system["machine"], u.machine)
            self.assertEqual(int(system["cpus"]), os.cpu_count())
            self.check_ports(recs, self.ports[rank], log)
            self.check_gpus(recs, self.gpus[rank], rank, log)
            self.assertEqual(one("nccl")["version"], "22809")
            env = {f["name"]: f for f in ml.records_of(recs, "env")}
            self.assertEqual(env["NCCL_ALGO"]["value"], ["Ring", "Tree"][rank])
            self.assertEqual(env["NPKIT_SYSFS_ROOT"]["value"], self.path("sys%d" % rank))
            self.assertEqual(env["NCCL_PROFILER_PLUGIN"].get("set_by"), "npkit")
            self.assertNotIn("set_by", env["NCCL_ALGO"])
            self.assertTrue(all(n.startswith(("NCCL_", "NPKIT_", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"))
                                for n in env), sorted(env))
            conf = {f["name"]: f for f in ml.records_of(recs, "conf")}
            if rank == 0:
                self.assertEqual(set(conf), {"NCCL_SOCKET_IFNAME", "NCCL_ALGO", "NCCL_IB_HCA"})
                self.assertEqual({n: (c["value"], c["applied"], c["file"]) for n, c in conf.items()},
                                 {"NCCL_SOCKET_IFNAME": ("eth0", "yes", self.path("nccl.conf")),
                                  "NCCL_ALGO": ("Tree", "no", self.path("nccl.conf")),
                                  "NCCL_IB_HCA": ("mlx5_0", "yes", self.path("nccl.conf"))})

    def only(self, recs, kind, log):
        found = ml.records_of(recs, kind)
        self.assertEqual(len(found), 1, "%s: %d %s records: %r" % (log, len(found), kind, recs))
        return found[0]

    def check_ports(self, recs, ports, log):
        got = ml.records_of(recs, "port")
        ib = sorted([p for p in ports if p["type"] == "ib"], key=lambda p: (len(p["dev"]), p["dev"]))
        eth = sorted([p for p in ports if p["type"] == "eth"], key=lambda p: (p["dev"].rstrip("0123456789"),
                                                                              len(p["dev"]), p["dev"]))
        want = []
        for p in ib:
            want.append({k: p[k] for k in ("type", "dev", "port", "rate", "state", "phys_state", "link_layer")})
        for p in eth:
            w = {k: p[k] for k in ("type", "dev", "duplex", "operstate", "mtu")}
            w["arp_type"] = p["arp_type"]
            w["physical"] = "yes" if p["physical"] else "no"
            if p["speed_unreadable"]:
                w["speed_error"] = str(errno.EISDIR)
            else:
                w["speed"] = p["speed"]
            want.append(w)
        self.assertEqual(got, want, log)

    def check_gpus(self, recs, gpus, rank, log):
        nvml = self.only(recs, "nvml", log)
        self.assertEqual((nvml["status"], nvml["gpus"], nvml["driver"]),
                         ("ok", str(len(gpus)), ["550.54.15", "535.104.05"][rank]))
        got = ml.records_of(recs, "gpu")
        self.assertEqual([(g["index"], g["name"], g["uuid"], g["bus_id"], g["nvlinks"]) for g in got],
                         [(str(i), g["name"], g["uuid"], g["bus_id"], str(g["nvlinks"])) for i, g in enumerate(gpus)])
        links = ml.records_of(recs, "nvlink")
        want = []
        for i, g in enumerate(gpus):
            down = {int(d) for d in g["down"].split(",") if d}
            for link in range(g["nvlinks"]):
                want.append({"gpu": str(i), "link": str(link), "active": "no" if link in down else "yes",
                             "version": str(g["nvlink_version"])})
        self.assertEqual(links, want, log)
        bind = self.only(recs, "bind", log)
        if rank == 0:  # CUDA device 0 is at the bus of NVML's GPU 1
            self.assertEqual(bind, {"cuda_device": "0", "gpu": "1", "how": "pci_bus_id", "bus_id": "0000:28:00.0"})
        else:  # CUDA_VISIBLE_DEVICES names GPU 1 by a prefix of its UUID
            self.assertEqual(bind, {"cuda_device": "0", "gpu": "1", "how": "cuda_visible_devices"})

    def test_trace_and_info(self):
        run, logs = self.two_hosts()
        traces = lib.load_traces(self.trace_dir, expect=2)
        m0, m1 = traces[0].other["machine"], traces[1].other["machine"]
        self.assertEqual(m0["host"], {"name": "npkit-fake-a", "resolves": True, "addr": "127.0.0.1"})
        self.assertEqual((m1["host"]["name"], m1["host"]["resolves"]), ("npkit-fake-b", False))
        self.assertEqual(m0["gpu"], {"cuda_device": 0, "nvml_index": 1, "how": "pci_bus_id", "bus_id": "0000:28:00.0"})
        g1 = m0["gpus"][1]
        self.assertEqual((g1["nvlinks"], g1["nvlinks_active"], g1["links_down"], g1["nvlink_version"], g1["nvlink_gbs"]),
                         (18, 16, [3, 4], "4.0", 16 * 25.0))
        self.assertEqual([g["nvlinks"] for g in m1["gpus"]], [0, 0])
        ports0 = {p["name"]: p for p in m0["ports"]}
        self.assertEqual((ports0["mlx5_0/1"]["rate_gbps"], ports0["mlx5_0/1"]["width"], ports0["mlx5_0/1"]["up"]),
                         (200, 4, True))
        self.assertEqual(ports0["mlx5_10/1"]["up"], False)
        self.assertEqual(ports0["eth1"]["speed_error"], errno.EISDIR)
        self.assertEqual((ports0["docker0"]["speed"], ports0["docker0"]["physical"]), (-1, False))
        ports1 = {p["name"]: p for p in m1["ports"]}
        self.assertEqual((ports1["mlx5_0/1"]["rate_gbps"], ports1["mlx5_0/1"]["width"]), (50, 1))
        self.assertEqual((ports1["eth0"]["rate_gbps"], ports1["eth0"]["duplex"]), (1, "half"))
        settings0 = {(s["name"], s["origin"]): s for s in m0["settings"]}
        self.assertEqual(settings0[("NCCL_ALGO", "conf")]["applied"], False)
        self.assertEqual(settings0[("NCCL_ALGO", "env")]["value"], "Ring")
        info = lib.run_tool(["info", logs[0]])
        self.assertEqual(info.rc, 0, info.describe())
        for want in ("npkit-fake-a (resolves to 127.0.0.1)", "NVLink 4.0: 18 links, 16 active (down: 3 4)",
                     "CUDA device 0 = NVML GPU 1 (by pci_bus_id 0000:28:00.0)", "200 Gb/sec (4X HDR), 4: ACTIVE",
                     "NCCL_ALGO=Tree (%s, not applied: the environment sets it)" % self.path("nccl.conf"),
                     "NCCL         2.28.9 (22809)"):
            self.assertIn(want, info.stdout)
        info1 = lib.run_tool(["info", logs[1]])
        self.assertIn("npkit-fake-b (does NOT resolve", info1.stdout)
        self.assertIn("no NVLink", info1.stdout)

    # -- degraded environments -------------------------------------------------------------------

    def test_no_nvml(self):
        """This machine has no driver: one line per rank, a snapshot without GPUs, the job fine."""
        run, logs = self.run_ok(2, self.settings())
        lines = [l for l in run.npkit_lines if "NVML" in l]
        self.assertEqual(len(lines), 2, run.describe())
        self.assertTrue(all(l.startswith("npkit: no NVML on this machine (") and
                            l.endswith("): the machine snapshot has no GPU part") for l in lines), lines)
        for log in logs.values():
            recs = ml.machine_records(log)
            nvml = self.only(recs, "nvml", log)
            self.assertEqual(nvml["status"], "absent")
            self.assertIn("libnvidia-ml.so.1", nvml["error"])
            self.assertEqual(ml.records_of(recs, "gpu"), [])
            self.assertEqual(self.only(recs, "bind", log), {"cuda_device": "0" if lib.LogFile(log).rank == 0 else "1",
                                                            "gpu": "-1", "error": "no NVML"})
            self.assertTrue(ml.records_of(recs, "host"))

    def test_nvml_without_driver(self):
        run, logs = self.run_ok(1, self.settings(LD_LIBRARY_PATH=lib.nccl_dir("fake") + ":" + ml.fake_nvml_dir()))
        nvml = self.only(ml.machine_records(logs[0]), "nvml", logs[0])
        self.assertEqual(nvml["status"], "error")
        self.assertEqual(nvml["error"], "nvmlInit_v2: Driver Not Loaded (9)")
        self.assertEqual([l for l in run.npkit_lines if "NVML" in l],
                         ["npkit: no NVML on this machine (nvmlInit_v2: Driver Not Loaded (9)): the machine snapshot "
                          "has no GPU part"])

    def test_bad_nvml_library(self):
        run, logs = self.run_ok(1, self.settings(NPKIT_NVML_LIBRARY=self.path("missing", "libnvidia-ml.so.1")))
        self.assertEqual(len([l for l in run.warnings if "NPKIT_NVML_LIBRARY" in l]), 1, run.describe())
        self.assertEqual(self.only(ml.machine_records(logs[0]), "nvml", logs[0])["status"], "absent")

    def test_nvml_library_setting(self):
        """NPKIT_NVML_LIBRARY names the fake by path (no LD_LIBRARY_PATH)."""
        ml.write_nvml_config(self.path("nvml.conf"), [ml.gpu(0, nvlinks=0)])
        run, logs = self.run_ok(1, self.settings(NPKIT_NVML_LIBRARY=os.path.join(ml.fake_nvml_dir(), "libnvidia-ml.so.1"),
                                                 FAKE_NVML_CONFIG=self.path("nvml.conf")))
        recs = ml.machine_records(logs[0])
        self.assertEqual(self.only(recs, "nvml", logs[0])["status"], "ok")
        self.assertEqual(self.only(recs, "bind", logs[0]), {"cuda_device": "0", "gpu": "0", "how": "index"})

    def test_off(self):
        run, logs = self.run_ok(1, self.settings(NPKIT_MACHINE="0"))
        self.assertEqual(ml.machine_records(logs[0]), [])
        self.assertEqual([l for l in run.npkit_lines if "NVML" in l], [])
        self.assertNotIn("machine", lib.load_traces(self.trace_dir, expect=1)[0].other)

    def test_real_sys(self):
        """NPKIT_SYSFS_ROOT unset: the interfaces of this machine's /sys/class/net, as the test reads
        them itself (errors as errno numbers: a virtual interface that is down gives EINVAL)."""
        run, logs = self.run_ok(1, self.settings())
        got = [p for p in ml.records_of(ml.machine_records(logs[0]), "port") if p["type"] == "eth"]
        want = []
        base = "/sys/class/net"
        for dev in sorted(os.listdir(base)):
            d = os.path.join(base, dev)
            if not os.path.isdir(d) or self.read(d, "type") == ("value", "772"):
                continue
            w = {"type": "eth", "dev": dev}
            for k in ("speed", "duplex", "operstate", "mtu"):
                kind, v = self.read(d, k)
                w[k if kind == "value" else k + "_error"] = v
            w["arp_type"] = self.read(d, "type")[1]
            w["physical"] = "yes" if os.path.exists(os.path.join(d, "device")) else "no"
            want.append(w)
        self.assertEqual(sorted(got, key=lambda p: p["dev"]), sorted(want, key=lambda p: p["dev"]))

    @staticmethod
    def read(d, name):
        try:
            with open(os.path.join(d, name)) as f:
                return "value", f.read().split("\n")[0]
        except OSError as e:
            return "error", str(e.errno)


if __name__ == "__main__":
    unittest.main()
