"""The preloaded library as a binary: no link-time dependency on NCCL or CUDA, and a wrapper for
every public host function of NCCL: those the build's nccl.h and nccl_device/*.h declare (parsed
here, independently of the API table), and those of the newer releases up to 2.31.2, from
tests/reference/nccl_api_releases.tsv (compiled from NVIDIA/nccl's release tags)."""
import glob
import os
import re
import subprocess
import sys
import unittest

LIB, NCCL_H = sys.argv[1], sys.argv[2]
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "nccl_api_releases.tsv")


def uncomment(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def nccl_h_functions():
    text = uncomment(open(NCCL_H).read())
    return set(re.findall(r"^\s*(?:ncclResult_t|const char\s*\*|void)\s+(nccl\w+)\s*\(", text, flags=re.M))


def header_version():
    return int(re.search(r"#define\s+NCCL_VERSION_CODE\s+(\d+)", open(NCCL_H).read()).group(1))


def device_host_functions():
    """The device API's host functions: NCCL_EXTERN_C __host__, not inline (libnccl exports them)."""
    found = set()
    for path in glob.glob(os.path.join(os.path.dirname(NCCL_H), "nccl_device", "*.h")):
        text = uncomment(open(path).read())
        found |= set(re.findall(r"NCCL_EXTERN_C\s+__host__\s+[\w\s\*]+?\b(nccl\w+)\s*\(", text))
    return found


def release_code(release):
    major, minor, patch = (int(x) for x in release.lstrip("<=").split("."))
    return major * 10000 + minor * 100 + patch


def reference():
    """name -> (header, first release code) from the reference list."""
    rows = {}
    for line in open(REFERENCE):
        if line.startswith("#") or not line.strip():
            continue
        name, header, first = line.rstrip("\n").split("\t")
        rows[name] = (header, release_code(first))
    return rows


class LibraryBinary(unittest.TestCase):
    def test_no_cuda_or_nccl_dependency(self):
        out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
        self.assertTrue(needed, "readelf printed no NEEDED entries at all")
        for lib in needed:
            self.assertNotRegex(lib, r"nccl|cupti|cudart|libcuda\b|libcuda\.so",
                                f"{LIB} links {lib} at build time")

    def exported(self):
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                             check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if " T " in line}

    def test_exports_every_nccl_function(self):
        declared = nccl_h_functions()
        self.assertGreaterEqual(len(declared), 40, "nccl.h parse found too few functions")
        device = device_host_functions()
        exported = self.exported()
        self.assertEqual(sorted(declared - exported), [], "nccl.h functions without a wrapper")
        self.assertEqual(sorted(device - exported), [], "device API host functions without a wrapper")
        # the newer releases' functions, and nothing else of NCCL's name space: pnccl* must stay
        # NCCL's own (the PMPI-like entry)
        ref = reference()
        self.assertEqual(sorted(set(ref) - exported), [], "functions of NCCL <= 2.31.2 without a wrapper")
        self.assertEqual(sorted(s for s in exported if s.startswith("nccl") and s not in ref), [])
        self.assertEqual(sorted(s for s in exported if s.startswith("pnccl")), [])

    def test_reference_matches_the_headers_of_the_build(self):
        # the build's headers declare exactly the reference functions as old as they are
        version = header_version()
        ref = reference()
        for header, parsed in (("nccl.h", nccl_h_functions()), ("nccl_device", device_host_functions())):
            if header == "nccl_device" and not glob.glob(os.path.join(os.path.dirname(NCCL_H), "nccl_device")):
                continue  # an nccl.h older than the device API
            want = {n for n, (h, first) in ref.items() if h == header and first <= version}
            self.assertEqual(sorted(parsed ^ want), [], "%s of %d vs the reference list" % (header, version))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
