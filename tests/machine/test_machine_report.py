"""`npkit report` on jobs whose machines have something to say, under real mpirun with a /sys tree,
fake NVML and host name per host:

  two hosts, two ranks each: host a with 4X SDR InfiniBand (10 Gb/s) and a GPU with two NVLinks
  down; host b with the same port at 1X (2.5 Gb/s), Ethernet at half duplex, a name that does not
  resolve, a low open-file limit and another NCCL_ALGO; the fake NCCL moves data at 0.3 GB/s, just
  under what the slow port allows (slow enough that the fake's own copying on a loaded machine does
  not decide the time): the findings name host, port, rates, the capped collective and its time at
  stake, the link use, and the throughput the sampled port counters measured during each collective;

  Ethernet only, slow collectives with two channels, then many small collectives: the advice
  (socket threads, channels, grouping), each with its evidence and expected gain.

Every number the report states is recomputed here from the report's own table and the trees."""

import json
import math
import os
import re
import unittest

import machine_lib as ml

lib = ml.lib


def report(trace_dir, *extra):
    run = lib.run_tool(["report", "--json", trace_dir] + list(extra), timeout=120)
    if run.rc != 0:
        raise AssertionError(run.describe())
    return json.loads(run.stdout), run


def findings(rep, kind):
    return [f for f in rep["findings"] if f["kind"] == kind]


def link_use_from_logs(trace_dir, data_ports):
    """{bytes: (tx Gb/s, rx Gb/s)} of the AllReduce calls of every rank, as the report must compute them."""
    import bisect
    sums = {}
    for path in lib.log_files(trace_dir):
        log = lib.LogFile(path)
        series = {}
        for e in ml.machine_events(path):
            if e["kind"] == "port" and e["name"] in data_ports and not e["flags"] & 6:
                s = series.setdefault(e["name"], [])
                if not s or e["end"] > s[-1][0]:
                    s.append((e["end"], e["tx"], e["rx"]))
        for (func, start, end, _thread, api), kind in zip(log.events, log.kinds):
            if (kind != 1 or lib.api_table()[func - 1][0] != "ncclAllReduce" or api[10] != 0 or api[11] & 0x9
                    or end <= start):
                continue
            mid = start + (end - start) // 2
            tx = rx = 0.0
            got = False
            for s in series.values():
                ts = [x[0] for x in s]
                if len(s) < 2 or mid < ts[0] or mid > ts[-1]:
                    continue
                lo = min(bisect.bisect_right(ts, mid) - 1, len(s) - 2)
                (t0, a0, b0), (t1, a1, b1) = s[lo], s[lo + 1]
                if a1 < a0 or b1 < b0:
                    continue
                tx += (a1 - a0) * 1e9 / (t1 - t0)
                rx += (b1 - b0) * 1e9 / (t1 - t0)
                got = True
            if got:
                w = sums.setdefault(api[1], [0.0, 0.0, 0.0])  # bytes
                dur = float(end - start)
                w[0] += dur
                w[1] += tx * 8 / 1e9 * dur
                w[2] += rx * 8 / 1e9 * dur
    return {b: (w[1] / w[0], w[2] / w[0]) for b, w in sums.items()}


def wall_us(row):
    return row["time_mean_us"] * row["calls"] / row["nranks"]


class MachineReport(lib.TempDirTestCase):

    def job(self, np, hosts, args, settings, per_host, feed=None):
        """hosts[r]: the host of rank r; per_host[h]: (ports, gpus, extra variables)."""
        self.trace_dir = self.path("trace")
        per_rank, feeders = {}, []
        for h, (ports, gpus, extra) in per_host.items():
            root = self.path("sys-" + h)
            ml.make_sysfs(root, ports)
            if feed:
                feeders.append(ml.CounterFeeder(root, [(p, feed[p["dev"]]) for p in ports if p["dev"] in feed]))
            conf = self.path("nvml-%s.conf" % h)
            ml.write_nvml_config(conf, gpus)
            for r in range(np):
                if hosts[r] == h:
                    per_rank[r] = dict({"NPKIT_SYSFS_ROOT": root, "FAKE_NVML_CONFIG": conf, "FAKE_HOSTNAME": "npkit-fake-" + h},
                                       **extra)
        s = {"NPKIT_TRACE_DIR": self.trace_dir, "NPKIT_CUPTI": "0", "FAKE_RESOLVABLE": "npkit-fake-a",
             "NPKIT_NVML_LIBRARY": os.path.join(ml.fake_nvml_dir(), "libnvidia-ml.so.1"), "FAKE_NCCL_NDEV": "2"}
        s.update(settings)
        for f in feeders:
            f.start()
        try:
            run = ml.run_job(self.tmp, np, [ml.perf()] + args, s, per_rank)
        finally:
            for f in feeders:
                f.stop()
        self.assertEqual(run.rc, 0, run.describe())
        return run

    def test_degraded_port_and_more(self):
        feed = {"mlx5_0": (0.2e9, 0.15e9), "eth0": (1e6, 2e6)}  # bytes/s
        self.job(4, ["a", "a", "b", "b"], ["-b", "1M", "-e", "4M", "-f", "4", "-n", "60", "-w", "2"],
                 {"FAKE_NCCL_BW_GBPS": "0.3", "NPKIT_GPU_SAMPLE_RATE": "20000", "NPKIT_PLUGIN_EVENTS": "coll"},
                 {"a": ([ml.ib_port("mlx5_0", 1, "10 Gb/sec (4X SDR)"), ml.eth_port("eth0")],
                        [ml.gpu(0), ml.gpu(1, down=(3, 4))], {"NCCL_ALGO": "Ring"}),
                  "b": ([ml.ib_port("mlx5_0", 1, "2.5 Gb/sec (1X SDR)"), ml.eth_port("eth0", speed="1000", duplex="half")],
                        [ml.gpu(0), ml.gpu(1)], {"NCCL_ALGO": "Tree", "ulimit_n": 1000})},
                 feed=feed)
        rep, _ = report(self.trace_dir)
        rows = [r for r in rep["collectives"] if r["op"] == "AllReduce"]
        big = max(rows, key=lambda r: r["bytes"])
        cap = 2.5 / 8.0  # GB/s: host b's one port at 2.5 Gb/s
        # the calls' CPU times: the fake's 0.3 GB/s at most, less on a loaded machine
        self.assertLessEqual(big["busbw_gbs"], 0.3 * 1.01, big)
        # the port
        port = [f for f in findings(rep, "network_port") if "mlx5_0/1" in f["title"]]
        self.assertEqual(len(port), 1, rep["findings"])
        f = port[0]
        self.assertEqual(f["title"], "Port mlx5_0/1 of host npkit-fake-b (ranks 2-3) runs at 2.5 Gb/s (1X) where the "
                                     "others run at 10 Gb/s (4X)")
        self.assertIn('/sys/class/infiniband/mlx5_0/ports/1/rate reads "2.5 Gb/sec (1X SDR)" on npkit-fake-b', f["evidence"])
        self.assertIn('; 1 of the 2 InfiniBand ports compared run at 10 Gb/s ("10 Gb/sec (4X SDR)") (e.g. on host npkit-fake-a).',
                      f["evidence"])
        if big["busbw_gbs"] >= 0.7 * cap:  # what the report must say depends on the busbw reached
            self.assertIn("Cross-host AllReduce 4 MiB reaches %.3g GB/s busbw, the limit of a 2.5 Gb/s port (0.312 GB/s)"
                          % big["busbw_gbs"], f["evidence"])
            self.assertAlmostEqual(f["time_at_stake_us"], wall_us(big) * (1 - cap / 1.25), delta=1e-3 * wall_us(big))
        else:
            self.assertIn("Cross-host AllReduce 4 MiB reaches %.3g GB/s busbw, below the 0.312 GB/s of a 2.5 Gb/s port"
                          % big["busbw_gbs"], f["evidence"])
            self.assertIsNone(f["time_at_stake_us"])
        self.assertFalse(f["advice"])
        self.assertIn("ibstat", f["next_step"])
        slow_eth = [f for f in findings(rep, "network_port") if f["title"].startswith("Port eth0")]
        self.assertEqual([f["title"] for f in slow_eth],
                         ["Port eth0 of host npkit-fake-b (ranks 2-3) runs at 1 Gb/s where the others run at 100 Gb/s"])
        self.assertIn("NCCL moves this host's data over its InfiniBand ports, not this one", slow_eth[0]["evidence"])
        self.assertIsNone(slow_eth[0]["time_at_stake_us"])
        half = [f for f in findings(rep, "network_port") if "half duplex" in f["title"]]
        self.assertEqual([f["title"] for f in half], ["Ethernet port eth0 of host npkit-fake-b (ranks 2-3) runs at half duplex"])
        # the GPU of rank 1 (CUDA device 1 = NVML GPU 1 by index) with two links down
        nv = findings(rep, "nvlink_down")
        self.assertEqual([f["title"] for f in nv],
                         ["NVLink: GPU 1 (used by rank 1) of host npkit-fake-a (ranks 0-1) has 16 of its 18 links active"])
        self.assertIn("links 3 4 inactive", nv[0]["evidence"])
        self.assertIn("400 GB/s per direction instead of 450", nv[0]["evidence"])
        # settings, host names, open files
        st = findings(rep, "settings_differ")
        self.assertEqual(len(st), 1)
        self.assertEqual(st[0]["title"], "NCCL settings differ between ranks: NCCL_ALGO")
        self.assertIn("NCCL_ALGO: Ring on rank 0 (npkit-fake-a), rank 1 (npkit-fake-a); Tree on rank 2 (npkit-fake-b), "
                      "rank 3 (npkit-fake-b);", st[0]["evidence"])
        hn = findings(rep, "host_name_unresolved")
        self.assertEqual([f["title"] for f in hn], ["Host names that do not resolve: npkit-fake-b"])
        fl = findings(rep, "open_file_limit")
        self.assertEqual([f["title"] for f in fl], ["Low open-file limit (RLIMIT_NOFILE) on npkit-fake-b"])
        self.assertIn("soft limit 1000", fl[0]["evidence"])
        # busbw against the network's capacity (the slow host's port)
        lu = findings(rep, "link_use")
        self.assertEqual(len(lu), 1, rep["findings"])
        self.assertEqual(lu[0]["title"], "AllReduce 4 MiB across 2 hosts reaches %.0f %% of what the network allows"
                         % (100 * big["busbw_gbs"] / cap))
        self.assertIn("1 x 2.5 Gb/s InfiniBand port of host npkit-fake-b", lu[0]["evidence"])
        # the throughput the port counters measured during the calls, recomputed from the logs: at the
        # middle of every call the rate of the sample interval around it, summed over the host's data
        # ports, weighted by the call's time (the test fed the counters, but a loaded machine delays
        # its writes: the logs say what the library read)
        want = link_use_from_logs(self.trace_dir, {"mlx5_0/1", "eth0"})
        for r in rows:
            link = r["link_throughput"]
            self.assertIsNotNone(link, r)
            # (1e-6: the report keeps calls longer than 0.5 s, seen on a loaded machine under TSan, to the µs)
            self.assertAlmostEqual(link["net_tx_gbps"], want[r["bytes"]][0], delta=1e-6 * want[r["bytes"]][0])
            self.assertAlmostEqual(link["net_rx_gbps"], want[r["bytes"]][1], delta=1e-6 * want[r["bytes"]][1])
            self.assertGreater(link["net_tx_gbps"], 0)
        # the machine of each rank, as its trace has it
        by_rank = {r["rank"]: r for r in rep["ranks"]}
        self.assertEqual(by_rank[3]["machine"]["host"]["name"], "npkit-fake-b")
        self.assertEqual(by_rank[1]["machine"]["gpu"]["nvml_index"], 1)
        # text and HTML
        text, _ = self.text_and_html()
        self.assertIn("== Machine", text)
        self.assertRegex(text, r"port mlx5_0/1\s+ib\s+2.5 Gb/s 1X, 4: ACTIVE, 5: LinkUp, InfiniBand")
        self.assertIn("Link throughput while the collectives ran (sampled every 20000 us", text)
        self.assertRegex(text, r"\[machine\] Host names that do not resolve: npkit-fake-b")

    def text_and_html(self):
        run = lib.run_tool(["report", self.trace_dir, "--html", self.path("r.html")], timeout=120)
        self.assertEqual(run.rc, 0, run.describe())
        with open(self.path("r.html")) as f:
            html = f.read()
        self.assertIn('<section id="machine"><h2>Machine</h2>', html)
        self.assertIn('id="link-throughput"', html) if "Link throughput" in run.stdout else None
        return run.stdout, html

    def test_advice_sockets_and_channels(self):
        """Ethernet only (no InfiniBand): NCCL uses sockets; 2 channels for 32 MiB; busbw of the fake's
        1 GB/s is far below the 100 Gb/s ports."""
        eth = [ml.eth_port("eth0", speed="100000")]
        self.job(2, ["a", "b"], ["-b", "16M", "-e", "32M", "-f", "2", "-n", "6", "-w", "1"],
                 {"FAKE_NCCL_BW_GBPS": "1", "FAKE_NCCL_NCHANNELS": "2", "FAKE_RESOLVABLE": "npkit-fake-a,npkit-fake-b"},
                 {"a": (eth, [ml.gpu(0, nvlinks=0), ml.gpu(1, nvlinks=0)], {}),
                  "b": (eth, [ml.gpu(0, nvlinks=0), ml.gpu(1, nvlinks=0)], {})})
        rep, _ = report(self.trace_dir)
        big = max((r for r in rep["collectives"] if r["op"] == "AllReduce"), key=lambda r: r["bytes"])
        cap = 100 / 8.0
        self.assertEqual(big["channels"], {"min": 2, "max": 2})
        so = findings(rep, "advice_socket_threads")
        self.assertEqual(len(so), 1, rep["findings"])
        f = so[0]
        self.assertTrue(f["advice"])
        self.assertTrue(f["title"].startswith("Advice to test: "))
        self.assertIn("no InfiniBand port is up on every host", f["evidence"])
        self.assertIn("AllReduce 32 MiB across 2 hosts reaches %.3g GB/s busbw, %.0f %% of the 12.5 GB/s of 1 x 100 Gb/s "
                      "Ethernet port" % (big["busbw_gbs"], 100 * big["busbw_gbs"] / cap), f["evidence"])
        want = sum(wall_us(r) * (1 - r["busbw_gbs"] / (0.8 * cap)) for r in rep["collectives"]
                   if r["op"] == "AllReduce" and r["bytes"] >= big["bytes"] / 16)
        self.assertAlmostEqual(f["time_at_stake_us"], want, delta=1e-3 * want)
        self.assertIn("NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4", f["next_step"])
        self.assertIn("not a promise", f["next_step"])
        ch = findings(rep, "advice_channels")
        self.assertEqual(len(ch), 1, rep["findings"])
        self.assertEqual(ch[0]["title"], "Advice to test: more channels for large messages (NCCL_MIN_NCHANNELS=4)")
        self.assertIn("reports 2 channels for AllReduce 32 MiB", ch[0]["evidence"])
        self.assertAlmostEqual(ch[0]["time_at_stake_us"], wall_us(big) * (1 - big["busbw_gbs"] / (0.8 * cap)),
                               delta=1e-3 * wall_us(big))
        text, html = self.text_and_html()
        self.assertRegex(text, r"\[advice: up to [0-9.]+ [mu]?s\] Advice to test: more sockets")
        self.assertIn("[advice: up to", html)
        self.assertEqual(findings(rep, "host_name_unresolved"), [])

    def test_advice_small_collectives(self):
        """Two ranks on one host, each on an NVLink 4.0 GPU (one with a link down): many small
        collectives; and the link use against NVLink, set by the slower GPU (17 links)."""
        self.job(2, ["a", "a"], ["-b", "1K", "-e", "4K", "-f", "2", "-n", "80", "-w", "1"], {},
                 {"a": ([], [ml.gpu(0), ml.gpu(1, down=(5,))], {})})
        rep, _ = report(self.trace_dir)
        lu = findings(rep, "link_use")
        self.assertEqual(len(lu), 1, rep["findings"])
        top = max((r for r in rep["collectives"] if r["op"] == "AllReduce"), key=lambda r: r["bytes"])
        self.assertEqual(lu[0]["title"], "AllReduce 4 KiB on 2 GPUs of one host reaches %.0f %% of what NVLink allows"
                         % (100 * top["busbw_gbs"] / 425.0))
        self.assertIn("Capacity per rank and direction: 425 GB/s (NVLink 4.0: 17 links x 25 GB/s).", lu[0]["evidence"])
        sm = findings(rep, "advice_small_collectives")
        self.assertEqual(len(sm), 1, rep["findings"])
        rows = [r for r in rep["collectives"] if r["time_mean_us"] is not None]
        calls = sum(r["calls"] / r["nranks"] for r in rows)
        latency = min(r["time_mean_us"] for r in rows)
        nbytes = sum(r["bytes"] * r["calls"] / r["nranks"] for r in rows)
        want = (calls - math.ceil(nbytes / (4 << 20))) * latency
        self.assertTrue(sm[0]["title"].startswith("Advice to test: group or bucket the %.0f small collectives" % calls))
        self.assertAlmostEqual(sm[0]["time_at_stake_us"], want, delta=1e-3 * want)
        self.assertIn("ncclGroupStart/ncclGroupEnd", sm[0]["next_step"])
        self.assertEqual(findings(rep, "advice_socket_threads"), [])


if __name__ == "__main__":
    unittest.main()
