"""scripts/nccl_matrix.sh with the project's nccl-tests stand-in (perf/*_perf) on the fake NCCL under
real mpirun: one run per operation × protocol, every size of the sweep in the combined report with
the calls of all ranks, and NCCL_PROTO reaching the ranks (the fake NCCL's profiler events report
the protocol it was forced to)."""

import csv
import os
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

    def test_bad_options(self):
        perf = self.perf_dir()
        for args, pattern in [(["--ops", "allreduce,bogus"], "unknown operation 'bogus'"),
                              (["--protos", "LL,fast"], "unknown protocol 'fast'"),
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
        for opt in ("--bench-dir", "--ops", "--protos", "--min-bytes", "--max-bytes", "--step-factor", "--iters",
                    "--warmup", "--out", "--launcher", "--launcher-arg", "--bench-arg", "--lib", "--npkit"):
            self.assertRegex(r.stdout, r"\n  %s " % opt)


if __name__ == "__main__":
    unittest.main()
