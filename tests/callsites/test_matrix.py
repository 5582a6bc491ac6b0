"""scripts/nccl_matrix.sh with the project's nccl-tests stand-in (perf/*_perf) on the fake NCCL under
real mpirun: one run per operation × protocol, every size of the sweep in the combined report with
the calls of all ranks, and NCCL_PROTO reaching the ranks (the fake NCCL's profiler events report
the protocol it was forced to)."""

import csv
import os
import re
import subprocess
import unittest

import callsites_lib as cs

lib = cs.lib
ITERS, WARMUP, NP = 3, 1, 2


def matrix():
    return lib.need_file(cs.source("scripts", "nccl_matrix.sh"), "scripts/nccl_matrix.sh")


class Matrix(lib.TempDirTestCase):

    def run_matrix(self, args, launcher=None):
        cmd = [matrix(), "--lib", lib.preload_lib(), "--npkit", lib.tool()]
        if lib.sanitizer_runtime():  # for the ranks, through the launcher; the scripts must not get it
            cmd += ["--launcher-arg", "--preload", "--launcher-arg", lib.sanitizer_runtime()]
        cmd += list(args)
        if launcher is not None:
            cmd += ["--"] + launcher
        env = lib._base_env()
        for k in cs.SETTINGS:
            env.pop(k, None)
        env.update(lib.sanitizer_env())
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=280, cwd=self.tmp)
        return lib.Run(cmd, proc)

    def perf_dir(self):
        d = os.path.join(cs.build_dir(), "perf")
        lib.need_file(os.path.join(d, "all_reduce_perf"), "perf/all_reduce_perf")
        return d

    def test_matrix(self):
        out = self.path("m")
        mpirun = [lib.mpirun(), "-np", str(NP), "--oversubscribe", "--bind-to", "none"]
        r = self.run_matrix(["--bench-dir", self.perf_dir(), "--ops", "allreduce,allgather,sendrecv",
                             "--protos", "LL,Simple", "--min-bytes", "64K", "--max-bytes", "128K",
                             "--iters", str(ITERS), "--warmup", str(WARMUP), "--bench-arg", "-c", "--bench-arg", "1",
                             "--launcher-arg", "--env", "--launcher-arg", "LD_LIBRARY_PATH=" + lib.nccl_dir("fake"),
                             "--out", out], mpirun)
        self.assertEqual(r.rc, 0, r.describe())
        with open(os.path.join(out, "matrix.csv")) as f:
            rows = list(csv.DictReader(f))
        got = {(x["op"], x["nccl_proto"], x["function"], int(x["bytes"])): x for x in rows}
        want = {(op, proto, fn, size) for op, fns in (("allreduce", ["AllReduce"]), ("allgather", ["AllGather"]),
                                                     ("sendrecv", ["Send", "Recv"]))
                for proto in ("LL", "Simple") for fn in fns for size in (65536, 131072)}
        self.assertEqual(set(got), want)
        for key, row in got.items():
            self.assertEqual(int(row["calls"]), NP * (ITERS + WARMUP), key)
            self.assertEqual(int(row["nranks"]), NP)
            if key[0] != "sendrecv":  # grouped send/recv are untimed calls
                self.assertGreater(float(row["time_p50_us"]), 0)
                self.assertEqual(row["protocol_seen"], key[1].upper(), key)
        with open(os.path.join(out, "matrix.txt")) as f:
            text = f.read()
        self.assertIn(text, r.stdout)
        self.assertEqual(len(text.splitlines()), 1 + len(want))
        for op, proto in (("allreduce", "LL"), ("sendrecv", "Simple")):
            cell = os.path.join(out, "%s.%s" % (op, proto))
            self.assertEqual(len([f for f in os.listdir(cell) if f.endswith(".npkit")]), NP)
            with open(os.path.join(cell, "bench.out")) as f:
                sizes = [int(l.split()[0]) for l in f if l.strip() and not l.startswith("#")]
            self.assertEqual(sizes, [65536, 131072])

    def test_recommendation(self):
        """With a fake NCCL whose LL has low latency and low bandwidth and whose Simple the opposite
        (FAKE_NCCL_PROTO_*), the matrix ends with LL for the small sizes and Simple for the large one,
        each with the ratio of the medians in matrix.csv, the settings to try and the caveat; every
        line is checked against matrix.csv itself.  The
        calls' CPU times (no kernel-channel events): the fake's GPU times leave its latency out."""
        out = self.path("rec")
        mpirun = [lib.mpirun(), "-np", str(NP), "--oversubscribe", "--bind-to", "none"]
        env = ["--launcher-arg", "--env", "--launcher-arg", "LD_LIBRARY_PATH=" + lib.nccl_dir("fake"),
               # far apart, so that a loaded machine's milliseconds of noise do not decide: LL 5 MB/s and no
               # latency (1 MiB: 210 ms, 32 KiB: 6.6 ms), Simple 100 ms of latency
               "--launcher-arg", "--env", "--launcher-arg", "FAKE_NCCL_PROTO_LAT_US=LL=0,SIMPLE=100000",
               "--launcher-arg", "--env", "--launcher-arg", "FAKE_NCCL_PROTO_BW_GBPS=LL=0.005,SIMPLE=20",
               "--launcher-arg", "--env", "--launcher-arg", "NPKIT_PLUGIN_EVENTS=coll"]
        r = self.run_matrix(["--bench-dir", self.perf_dir(), "--ops", "allreduce", "--protos", "LL,Simple",
                             "--min-bytes", "1K", "--max-bytes", "1M", "--step-factor", "32", "--iters", "5",
                             "--warmup", "1", "--out", out] + env, mpirun)
        self.assertEqual(r.rc, 0, r.describe())
        with open(os.path.join(out, "matrix.csv")) as f:
            p50 = {(x["nccl_proto"], int(x["bytes"])): float(x["time_p50_us"]) for x in csv.DictReader(f)}
        with open(os.path.join(out, "recommendation.txt")) as f:
            rec = f.read()
        self.assertIn(rec, r.stdout)
        lines = [l for l in rec.splitlines() if l.startswith("allreduce")]
        # the lines follow from matrix.csv, whatever the timing: per size the fastest protocol,
        # consecutive sizes with the same one in one range, the ratios of the medians
        ranges = []
        for size, label in ((1024, "1 KiB"), (32768, "32 KiB"), (1 << 20, "1 MiB")):
            best, other = sorted(("LL", "Simple"), key=lambda proto: p50[(proto, size)])
            ratio = p50[(other, size)] / p50[(best, size)]
            if ranges and ranges[-1][0] == best:
                ranges[-1][2] = label
                ranges[-1][3].append(ratio)
            else:
                ranges.append([best, label, label, [ratio], other])
        self.assertEqual(len(lines), len(ranges), rec)
        for line, (best, first, last, ratios, other) in zip(lines, ranges):
            span = first if first == last else "%s - %s" % (first, last)
            lo, hi = min(ratios), max(ratios)
            by = "%.2fx" % lo if abs(hi - lo) < 0.005 else "%.2fx-%.2fx" % (lo, hi)
            self.assertEqual(re.sub(" +", " ", line), "allreduce AllReduce %s %s %s faster than %s (next best); try "
                             "NCCL_PROTO=%s" % (span, best, by, other, best))
        # and with the fake's protocols far apart, LL wins the small sizes and Simple the large one
        # (a sanitized build slows the fake's own work past these margins: there only the above)
        if not lib.sanitizer_runtime():
            self.assertEqual([(x[0], x[1], x[2]) for x in ranges], [("LL", "1 KiB", "32 KiB"), ("Simple", "1 MiB", "1 MiB")],
                             rec)
        self.assertIn("advice to test, not a promise", rec)
        self.assertIn("one global setting would slow the other sizes", rec)

    def test_algorithms_varied(self):
        """--algos runs every protocol × algorithm; the recommendation names the fastest cell of
        matrix.csv at each size, with NCCL_ALGO."""
        out = self.path("algo")
        mpirun = [lib.mpirun(), "-np", str(NP), "--oversubscribe", "--bind-to", "none"]
        r = self.run_matrix(["--bench-dir", self.perf_dir(), "--ops", "allreduce", "--protos", "Simple",
                             "--algos", "Ring,Tree", "--min-bytes", "64K", "--max-bytes", "64K", "--iters", "3",
                             "--warmup", "1", "--out", out, "--launcher-arg", "--env", "--launcher-arg",
                             "LD_LIBRARY_PATH=" + lib.nccl_dir("fake")], mpirun)
        self.assertEqual(r.rc, 0, r.describe())
        self.assertTrue(os.path.isdir(os.path.join(out, "allreduce.Simple.Tree")))
        with open(os.path.join(out, "matrix.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(sorted(x["nccl_algo"] for x in rows), ["Ring", "Tree"])
        best = min(rows, key=lambda x: float(x["time_p50_us"]))
        with open(os.path.join(out, "recommendation.txt")) as f:
            rec = f.read()
        self.assertIn("try NCCL_PROTO=Simple NCCL_ALGO=%s\n" % best["nccl_algo"], rec)
        self.assertIn("Simple/%s " % best["nccl_algo"], rec)

    def test_bad_options(self):
        perf = self.perf_dir()
        for args, pattern in [(["--ops", "allreduce,bogus"], "unknown operation 'bogus'"),
                              (["--protos", "LL,fast"], "unknown protocol 'fast'"),
                              (["--algos", "Ring,Fastest"], "unknown algorithm 'Fastest'"),
                              (["--min-bytes", "1X"], "--min-bytes"),
                              (["--min-bytes", "2M", "--max-bytes", "1M"], "larger than --max-bytes"),
                              (["--step-factor", "1"], "--step-factor"),
                              (["--frobnicate"], "unknown option '--frobnicate'")]:
            r = self.run_matrix(["--bench-dir", perf] + args, ["mpirun", "-np", "2"])
            self.assertEqual(r.rc, 2, r.describe())
            self.assertIn(pattern, r.stderr)
        r = self.run_matrix(["--ops", "allreduce"], ["mpirun"])
        self.assertEqual(r.rc, 2)
        self.assertIn("--bench-dir is required", r.stderr)
        empty = self.path("empty")
        os.mkdir(empty)
        r = self.run_matrix(["--bench-dir", empty], ["mpirun"])
        self.assertEqual(r.rc, 2)
        self.assertIn("all_reduce_perf is missing", r.stderr)
        r = self.run_matrix(["--bench-dir", perf])
        self.assertEqual(r.rc, 2)
        self.assertIn("missing the launcher command", r.stderr)
        r = self.run_matrix(["--help"])
        self.assertEqual(r.rc, 0)
        for opt in ("--bench-dir", "--ops", "--protos", "--algos", "--min-bytes", "--max-bytes", "--step-factor", "--iters",
                    "--warmup", "--out", "--launcher", "--launcher-arg", "--bench-arg", "--lib", "--npkit"):
            self.assertRegex(r.stdout, r"\n  %s " % opt)


if __name__ == "__main__":
    unittest.main()
