"""`cmake --install` puts the library, the npkit command, the headers and the scripts in the usual
places, and the installed command and library work from there."""
import os
import subprocess
import sys
import tempfile
import unittest

BUILD, SOURCE = sys.argv[1], sys.argv[2]


class Install(unittest.TestCase):
    def test_install_layout_and_use(self):
        with tempfile.TemporaryDirectory() as prefix:
            r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            libdir = next(d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                          if os.path.exists(os.path.join(prefix, d, "libnpkit_preload.so")))
            for rel in ("bin/npkit", "include/npkit/event_log.h", f"{libdir}/libnpkit_preload.so"):
                self.assertTrue(os.path.exists(os.path.join(prefix, rel)), rel)
            for script in ("npkit_launcher.sh", "nccl_matrix.sh"):
                if os.path.exists(os.path.join(SOURCE, "scripts", script)):
                    path = os.path.join(prefix, "bin", script)
                    self.assertTrue(os.access(path, os.X_OK), path)
            if os.path.exists(os.path.join(SOURCE, "include", "npkit_preload.h")):
                self.assertTrue(os.path.exists(os.path.join(prefix, "include", "npkit_preload.h")))
            out = subprocess.run([os.path.join(prefix, "bin", "npkit"), "api"], capture_output=True,
                                 text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("ncclAllReduce", out.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
