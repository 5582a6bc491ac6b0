"""`npkit api` lists exactly the public host functions of NCCL up to 2.31.2 (nccl.h and the device
API's nccl_device/*.h), in the order of nccl_api.def, each with a class and the first release that
declares it: the functions the build's headers declare (parsed here) have a first version no newer
than the header, and every first version is the one of tests/reference/nccl_api_releases.tsv,
compiled from NVIDIA/nccl's release tags independently of the API table.  The oldest NCCL the
wrappers know is 2.17, so older first releases read 2.17.0."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

OLDEST = 21700
inc = os.environ.get("NPKIT_CUDA_INCLUDE_DIR", "/usr/local/cuda/include")
header = open(os.path.join(inc, "nccl.h")).read()
header = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
header = re.sub(r"//[^\n]*", " ", header)
declared = set(re.findall(r"(?:^|[;}\s])(?:ncclResult_t|const\s+char\s*\*|void)\s*\**\s*(nccl\w+)\s*\(", header, re.M))
check(len(declared) > 40, "parsed %d functions from nccl.h" % len(declared))
version = int(re.search(r"#define\s+NCCL_VERSION_CODE\s+(\d+)", header).group(1))


def code(release):
    major, minor, patch = (int(x) for x in release.lstrip("<=").split("."))
    return major * 10000 + minor * 100 + patch


reference = {}
for line in open(os.path.join(SOURCE_DIR, "tests", "reference", "nccl_api_releases.tsv")):
    if line.strip() and not line.startswith("#"):
        name, _, first = line.rstrip("\n").split("\t")
        reference[name] = max(OLDEST, code(first))

out = run_tool("api", check_rc=0).stdout.decode()
rows = [line.split("\t") for line in out.splitlines()]
check(all(len(r) == 4 for r in rows), "four tab-separated fields per line")
listed = [r[0] for r in rows]
check(len(listed) == len(set(listed)), "no duplicates")
missing = declared - set(listed)
check(not missing, "nccl.h functions missing from npkit api: %s" % sorted(missing))
check(set(listed) == set(reference), "npkit api vs the reference list: %s" % sorted(set(listed) ^ set(reference)))
for name, cls, since, release in rows:
    check(cls in ("coll", "p2p", "group", "comm", "mem", "query", "misc"), "%s: class %s" % (name, cls))
    check(since.isdigit() and int(since) == reference[name], "%s: since %s, the reference says %d" % (name, since, reference[name]))
    check(name not in declared or int(since) <= version, "%s: since %s, but nccl.h %d declares it" % (name, since, version))
    # the release spelled out: 22902 -> 2.29.2
    s = int(since)
    check(release == "%d.%d.%d" % (s // 10000, s // 100 % 100, s % 100), "%s: release %s for %s" % (name, release, since))
# the ids are the positions in nccl_api.def
check(listed == [n for n, _, _ in API], "order of nccl_api.def")
print("test_api_list: %d functions, %d of them in nccl.h %d, first releases as the reference says"
      % (len(listed), len(declared), version))
