"""The preloaded library as a binary: no link-time dependency on NCCL or CUDA, and a wrapper for
every public function declared in nccl.h (parsed here, independently of the API table)."""
import re
import subprocess
import sys
import unittest

LIB, NCCL_H = sys.argv[1], sys.argv[2]


def nccl_h_functions():
    text = open(NCCL_H).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return set(re.findall(r"^\s*(?:ncclResult_t|const char\s*\*|void)\s+(nccl\w+)\s*\(", text, flags=re.M))


class LibraryBinary(unittest.TestCase):
    def test_no_cuda_or_nccl_dependency(self):
        out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
        self.assertTrue(needed, "readelf printed no NEEDED entries at all")
        for lib in needed:
            self.assertNotRegex(lib, r"nccl|cupti|cudart|libcuda\b|libcuda\.so",
                                f"{LIB} links {lib} at build time")

    def test_exports_every_nccl_function(self):
        declared = nccl_h_functions()
        self.assertGreaterEqual(len(declared), 40, "nccl.h parse found too few functions")
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                             check=True).stdout
        exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
        self.assertEqual(sorted(declared - exported), [], "nccl.h functions without a wrapper")
        # Nothing else of NCCL's name space: pnccl* must stay NCCL's own (the PMPI-like entry).
        self.assertEqual(sorted(s for s in exported if s.startswith("nccl") and s not in declared), [])
        self.assertEqual(sorted(s for s in exported if s.startswith("pnccl")), [])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
