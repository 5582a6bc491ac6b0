"""The set-up of the README's two commands (scripts/lib/deps.sh reading scripts/packages.txt):
which packages each group needs, what happens when some are missing as root (apt-get installs
exactly those) and as another user (the command to run is printed, nothing is installed), and that
scripts/demo.sh, scripts/run_tests.sh and .ci/run stop there before building anything.

Nothing is installed or removed here: apt-get is a stand-in on PATH that records its arguments, and
packages are made to look missing with NPKIT_DEPS_MISSING (dpkg's answer for the others is real)."""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib as lib  # noqa: E402

SETTINGS = ("NPKIT_SKIP_DEPS", "NPKIT_DEPS_DRY_RUN", "NPKIT_DEPS_MISSING", "NPKIT_DEPS_UID")


def packages_file():
    return os.path.join(lib.source_dir(), "scripts", "packages.txt")


def group(name):
    """The packages of a group, read from packages.txt here."""
    out = []
    with open(packages_file()) as f:
        for line in f:
            fields = line.split("#")[0].split()
            if fields and name in fields[1:]:
                out.append(fields[0])
    return out


def installed(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return p.returncode == 0 and p.stdout == "install ok installed"


class Deps(lib.TempDirTestCase):
    def setUp(self):
        super().setUp()
        if shutil.which("dpkg-query") is None:
            self.skipTest("not a Debian/Ubuntu machine (no dpkg-query)")
        # apt-get as a stand-in: one line per call with its arguments and DEBIAN_FRONTEND
        self.bin = self.path("bin")
        os.makedirs(self.bin)
        self.calls = self.path("apt-calls")
        with open(os.path.join(self.bin, "apt-get"), "w") as f:
            f.write('#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> %s\nexit ${FAKE_APT_RC:-0}\n' % self.calls)
        os.chmod(os.path.join(self.bin, "apt-get"), 0o755)

    def env(self, **settings):
        env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
        env["PATH"] = self.bin + ":" + env["PATH"]
        env.update({k: str(v) for k, v in settings.items()})
        return env

    def ensure(self, who, grp, path=None, **settings):
        env = self.env(**settings)
        if path is not None:
            env["PATH"] = path
        deps = os.path.join(lib.source_dir(), "scripts", "lib", "deps.sh")
        return subprocess.run(["/bin/bash", "-c", 'source "$0"; npkit_deps_ensure "$1" "$2"', deps, who, grp],
                              env=env, capture_output=True, text=True, timeout=60)

    def apt_calls(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return f.read().splitlines()

    def test_groups(self):
        deps = os.path.join(lib.source_dir(), "scripts", "lib", "deps.sh")
        for name in ("demo", "test"):
            p = subprocess.run(["/bin/bash", "-c", 'source "$0"; npkit_deps_list "$1"', deps, name],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.split(), group(name))
        demo, test = group("demo"), group("test")
        self.assertTrue(set(demo) < set(test), "the tests need everything the demo needs")
        self.assertIn("openmpi-bin", demo)
        self.assertIn("chromium", test)
        self.assertNotIn("chromium", demo)  # the demo stays quick to set up

    def test_installs_what_is_missing_as_root(self):
        gone = ["openmpi-bin", "libopenmpi-dev"]
        run = self.ensure("demo.sh", "demo", NPKIT_DEPS_MISSING=" ".join(gone), NPKIT_DEPS_UID=0)
        self.assertEqual(run.returncode, 0, run.stderr)
        want = [p for p in group("demo") if p in gone or not installed(p)]
        self.assertEqual(self.apt_calls(), ["noninteractive update -qq",
                                            "noninteractive install -y -qq " + " ".join(want)])
        self.assertIn("demo.sh: installing " + " ".join(want), run.stderr)

    def test_nothing_to_do(self):
        if not all(installed(p) for p in group("test")):
            self.skipTest("this machine lacks some of the packages")
        run = self.ensure("run_tests.sh", "test", NPKIT_DEPS_UID=0)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(self.apt_calls(), [])
        self.assertEqual(run.stderr, "")

    def test_prints_the_command_when_not_root(self):
        run = self.ensure("demo.sh", "demo", NPKIT_DEPS_MISSING="openmpi-bin", NPKIT_DEPS_UID=1000)
        self.assertEqual(run.returncode, 1)
        want = [p for p in group("demo") if p == "openmpi-bin" or not installed(p)]
        self.assertIn("sudo apt-get update && sudo apt-get install -y " + " ".join(want) + "\n", run.stderr)
        self.assertIn("then run demo.sh again", run.stderr)
        self.assertEqual(self.apt_calls(), [])

    def test_apt_get_fails(self):
        run = self.ensure("demo.sh", "demo", NPKIT_DEPS_MISSING="cmake", NPKIT_DEPS_UID=0, FAKE_APT_RC=100)
        self.assertEqual(run.returncode, 1)
        self.assertIn("apt-get could not install", run.stderr)

    def test_dry_run_and_skip(self):
        run = self.ensure("demo.sh", "demo", NPKIT_DEPS_MISSING="cmake", NPKIT_DEPS_UID=0, NPKIT_DEPS_DRY_RUN=1)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("would run: DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake", run.stderr)
        self.assertEqual(self.apt_calls(), [])
        run = self.ensure("demo.sh", "demo", NPKIT_DEPS_MISSING="cmake", NPKIT_DEPS_UID=1000, NPKIT_SKIP_DEPS=1)
        self.assertEqual((run.returncode, run.stderr), (0, ""))

    def test_without_dpkg(self):
        # a PATH with the tools the script uses and the demo's commands but mpirun, and no dpkg
        tools = self.path("tools")
        os.makedirs(tools)
        for name in ("bash", "sed", "awk", "dirname", "id", "cat", "cmake", "make", "cc", "python3"):
            where = shutil.which(name)
            if where is None:
                self.skipTest("%s is not installed" % name)
            os.symlink(where, os.path.join(tools, name))
        run = self.ensure("demo.sh", "demo", path=tools)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("demo.sh: not found: mpirun.", run.stderr)

    def test_the_commands_stop_before_building(self):
        src = lib.source_dir()
        build = self.path("demo-build")
        for cmd, who in ((["scripts/demo.sh", "--out", self.path("out")], "demo.sh"),
                         (["scripts/run_tests.sh"], "run_tests.sh"), (["bash", ".ci/run"], "run_tests.sh")):
            env = self.env(NPKIT_DEPS_MISSING="chromium cmake", NPKIT_DEPS_UID=1000, NPKIT_DEMO_BUILD=build)
            p = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, (cmd, p.stdout, p.stderr))
            self.assertIn("%s: missing packages: " % who, p.stderr)
            # the demo needs no chromium, the tests do: each uses its own group of the one list
            self.assertEqual("chromium" in p.stderr, who == "run_tests.sh", p.stderr)
            self.assertNotIn("== build", p.stdout)
        self.assertFalse(os.path.exists(build))
        self.assertEqual(self.apt_calls(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
