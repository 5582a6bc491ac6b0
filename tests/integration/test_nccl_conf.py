#!/usr/bin/env python3
"""NCCL's own configuration files and the library's self-registration as NCCL's profiler plugin.

NCCL applies NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf, to variables that are still
unset, when it starts; the fake NCCL does the same (tests/fakes/fake_env.c).  A value there is the
site's choice: the library must not set NCCL_PROFILER_PLUGIN first, and says once that it left it
alone.  nccl_mix runs on 2 ranks of the fake NCCL; the password database's home directory and
/etc/nccl.conf are moved into the test's folder by nccl_conf_shim (tests/programs), preloaded
before the library, so the real files are never touched.
"""
import os
import unittest

import npkit_testlib as lib

NP = 2
PLUGIN_CATS = ("nccl_kernel", "nccl_gpu", "nccl_proxy", "nccl_net")


class NcclConfFiles(lib.TempDirTestCase):

    def job(self, settings, files=None, passwd_home=None, etc=None):
        """nccl_mix under the library with the shim; files: {name: text} written in the folder."""
        for name, text in (files or {}).items():
            path = self.path(name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", newline="") as f:
                f.write(text)
        trace_dir = self.path("trace")
        preload = lib.job_env("fake", True)["LD_PRELOAD"].split(":")
        preload.insert(len(preload) - 1, lib.program("nccl_conf_shim.so"))  # before the library
        settings = dict(settings, NPKIT_TRACE_DIR=trace_dir, LD_PRELOAD=":".join(preload),
                        NPKIT_TEST_PASSWD_HOME=passwd_home or self.path("passwd_home"),
                        NPKIT_TEST_ETC_NCCL_CONF=etc or self.path("etc_nccl.conf"))
        settings.setdefault("HOME", self.path("env_home"))
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "1"], NP, settings=settings)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        return run, lib.load_traces(trace_dir, expect=NP)

    @staticmethod
    def plugin_events(t):
        return [e for e in t.events if e.get("cat") in PLUGIN_CATS]

    @staticmethod
    def notes(t):
        return [e["args"]["message"] for e in t.events
                if e.get("cat") == "npkit" and e.get("ph") == "i" and e["name"].startswith("npkit ")]

    def assertLeftAlone(self, run, traces, value, where, extra=""):
        """No plugin events, and one warning per rank, in stderr and in the trace, naming the
        variable, its value and the file."""
        want = "NCCL_PROFILER_PLUGIN=%s%s is set in %s" % (value, extra, where)
        lines = [l for l in run.warnings if "NCCL_PROFILER_PLUGIN" in l]
        self.assertEqual(len(lines), NP, run.describe())
        for line in lines:
            self.assertTrue(line.startswith("npkit: warning: " + want), line)
            self.assertIn("left alone", line)
        for t in traces.values():
            self.assertTrue(t.api())
            self.assertEqual(self.plugin_events(t), [])
            self.assertEqual([e for e in t.api() if "algorithm" in e["args"]], [])
            notes = [n for n in self.notes(t) if "NCCL_PROFILER_PLUGIN" in n]
            self.assertEqual(len(notes), 1, self.notes(t))
            self.assertTrue(notes[0].startswith(want), notes[0])
        return lines[0]

    def assertSelfRegistered(self, run, traces):
        self.assertEqual([l for l in run.npkit_lines if "NCCL_PROFILER_PLUGIN" in l], [], run.describe())
        for t in traces.values():
            self.assertTrue(self.plugin_events(t))
            self.assertTrue([e for e in t.api() if "algorithm" in e["args"]])
            self.assertFalse([n for n in self.notes(t) if "NCCL_PROFILER_PLUGIN" in n])

    # --- the tests -----------------------------------------------------------------------------

    def test_site_file_none(self):
        """/etc/nccl.conf sets NCCL_PROFILER_PLUGIN=none: NCCL applies it, the library leaves it
        alone and says so once per process."""
        run, traces = self.job({}, {"etc_nccl.conf": "# site settings\nNCCL_PROFILER_PLUGIN=none\n"})
        line = self.assertLeftAlone(run, traces, "none", "/etc/nccl.conf")
        self.assertNotIn("(as NCCL", line)  # both readings set it

    def test_conf_file_instead_of_home(self):
        """NCCL_CONF_FILE replaces ~/.nccl.conf and comes before /etc/nccl.conf."""
        run, traces = self.job({"NCCL_CONF_FILE": self.path("my.conf")},
                               {"my.conf": "NCCL_DEBUG_SUBSYS=INIT\nNCCL_PROFILER_PLUGIN=none\n",
                                "passwd_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=from-home\n",
                                "etc_nccl.conf": "NCCL_PROFILER_PLUGIN=from-etc\n"})
        self.assertLeftAlone(run, traces, "none", self.path("my.conf"))

    def test_file_without_the_variable(self):
        """Files that do not set it: the library registers itself as today."""
        run, traces = self.job({"NCCL_CONF_FILE": self.path("my.conf")},
                               {"my.conf": "NCCL_DEBUG_SUBSYS=INIT\n",
                                "passwd_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=none\n",
                                "etc_nccl.conf": "# nothing here\n"})
        self.assertSelfRegistered(run, traces)

    def test_malformed_lines(self):
        """Lines NCCL does not take as NCCL_PROFILER_PLUGIN: an indented or commented name, a space
        before '=', no '=', an empty name."""
        run, traces = self.job({}, {"etc_nccl.conf": " NCCL_PROFILER_PLUGIN=none\n#NCCL_PROFILER_PLUGIN=none\n"
                                                     "NCCL_PROFILER_PLUGIN =none\nNCCL_PROFILER_PLUGIN\n"
                                                     "=none\n\x01\x02garbage\n"})
        self.assertSelfRegistered(run, traces)

    def test_unreadable_conf_file(self):
        """A NCCL_CONF_FILE that opens but cannot be read (a folder; also one without permission
        when not root): nothing from it, and the home file is still not read."""
        os.makedirs(self.path("folder.conf"))
        run, traces = self.job({"NCCL_CONF_FILE": self.path("folder.conf")},
                               {"passwd_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=none\n"})
        self.assertSelfRegistered(run, traces)

    @unittest.skipIf(os.geteuid() == 0, "root reads a file without read permission")
    def test_conf_file_without_permission(self):
        path = self.path("locked.conf")
        with open(path, "w") as f:
            f.write("NCCL_PROFILER_PLUGIN=none\n")
        os.chmod(path, 0)
        run, traces = self.job({"NCCL_CONF_FILE": path})
        self.assertSelfRegistered(run, traces)

    def test_missing_conf_file(self):
        """A missing NCCL_CONF_FILE: nothing from it, /etc/nccl.conf is still read."""
        run, traces = self.job({"NCCL_CONF_FILE": self.path("missing.conf")},
                               {"passwd_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=from-home\n",
                                "etc_nccl.conf": "NCCL_PROFILER_PLUGIN=none\n"})
        self.assertLeftAlone(run, traces, "none", "/etc/nccl.conf")

    def test_home_of_the_password_database(self):
        """~/.nccl.conf with the password entry's home (NCCL 2.28.9 reads it, the fake too), $HOME
        elsewhere: left alone, and the line says which NCCL reads it."""
        run, traces = self.job({}, {"passwd_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=none\n"})
        line = self.assertLeftAlone(run, traces, "none", self.path("passwd_home", ".nccl.conf"))
        self.assertIn("(as NCCL before 2.30.3 reads it)", line)

    def test_home_of_the_environment(self):
        """$HOME/.nccl.conf alone: NCCL 2.30.3 and later read it, so the library leaves the
        variable alone; the fake (2.28.9) does not read it, so NCCL then loads no plugin."""
        run, traces = self.job({}, {"env_home/.nccl.conf": "NCCL_PROFILER_PLUGIN=none\n"})
        line = self.assertLeftAlone(run, traces, "none", self.path("env_home", ".nccl.conf"))
        self.assertIn("(as NCCL 2.30.3 and later read it)", line)

    def test_carriage_return(self):
        """A CRLF file: NCCL before 2.30.3 keeps the carriage return in the value, later ones drop
        it; either way the value is the site's."""
        run, traces = self.job({}, {"etc_nccl.conf": "NCCL_PROFILER_PLUGIN=none\r\n"})
        self.assertLeftAlone(run, traces, "none", "/etc/nccl.conf",
                             " (its line ends in a carriage return, which NCCL before 2.30.3 keeps in the value)")

    def named_in(self, settings, name, shown, loaded):
        """A file that names this library: left to NCCL, with an informational line; the plugin
        events say whether NCCL (the fake) read that file and loaded the library from it."""
        run, traces = self.job(settings, {name: "NCCL_PROFILER_PLUGIN=%s\n" % lib.preload_lib()})
        lines = [l for l in run.npkit_lines if "NCCL_PROFILER_PLUGIN" in l]
        self.assertEqual(len(lines), NP, run.describe())
        for l in lines:
            self.assertTrue(l.startswith("npkit: NCCL_PROFILER_PLUGIN=%s is set in %s" % (lib.preload_lib(), shown)), l)
            self.assertIn("it names this library", l)
        for t in traces.values():
            self.assertEqual(bool(self.plugin_events(t)), loaded)

    def test_value_naming_this_library(self):
        self.named_in({"NCCL_CONF_FILE": self.path("my.conf")}, "my.conf", self.path("my.conf"), True)

    def test_fake_reads_the_system_file(self):
        self.named_in({}, "etc_nccl.conf", "/etc/nccl.conf", True)

    def test_fake_reads_the_password_home(self):
        self.named_in({}, "passwd_home/.nccl.conf", self.path("passwd_home", ".nccl.conf"), True)

    def test_fake_ignores_home_variable(self):
        """NCCL 2.28.9 (the fake) does not read $HOME/.nccl.conf: nothing loads the plugin."""
        self.named_in({}, "env_home/.nccl.conf", self.path("env_home", ".nccl.conf"), False)

    def test_injection_path(self):
        """CUDA_INJECTION64_PATH from NCCL's files is left alone too."""
        run, traces = self.job({}, {"etc_nccl.conf": "CUDA_INJECTION64_PATH=/opt/site/libinject.so\n"})
        lines = [l for l in run.warnings if "CUDA_INJECTION64_PATH" in l]
        self.assertEqual(len(lines), NP, run.describe())
        for l in lines:
            self.assertTrue(l.startswith("npkit: warning: CUDA_INJECTION64_PATH=/opt/site/libinject.so "
                                         "is set in /etc/nccl.conf"), l)
        for t in traces.values():
            self.assertTrue(self.plugin_events(t))  # the profiler plugin is not concerned

    def test_environment_wins(self):
        """A value in the environment: the files do not matter and nothing is said."""
        run, traces = self.job({"NCCL_PROFILER_PLUGIN": lib.preload_lib()},
                               {"etc_nccl.conf": "NCCL_PROFILER_PLUGIN=none\n"})
        self.assertSelfRegistered(run, traces)


if __name__ == "__main__":
    unittest.main(verbosity=2)
