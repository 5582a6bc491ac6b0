"""`npkit api` lists exactly the functions nccl.h declares (returning ncclResult_t, const char* or
void; the pnccl* profiling aliases excluded), each with a class and a first version no newer than
the header."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

inc = os.environ.get("NPKIT_CUDA_INCLUDE_DIR", "/usr/local/cuda/include")
header = open(os.path.join(inc, "nccl.h")).read()
header = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
header = re.sub(r"//[^\n]*", " ", header)
declared = set(re.findall(r"(?:^|[;}\s])(?:ncclResult_t|const\s+char\s*\*|void)\s*\**\s*(nccl\w+)\s*\(", header, re.M))
check(len(declared) > 40, "parsed %d functions from nccl.h" % len(declared))
version = int(re.search(r"#define\s+NCCL_VERSION_CODE\s+(\d+)", header).group(1))

out = run_tool("api", check_rc=0).stdout.decode()
rows = [line.split("\t") for line in out.splitlines()]
check(all(len(r) == 3 for r in rows), "three tab-separated fields per line")
listed = [r[0] for r in rows]
check(len(listed) == len(set(listed)), "no duplicates")
missing, extra = declared - set(listed), set(listed) - declared
check(not missing and not extra, "nccl.h vs npkit api: missing %s, extra %s" % (sorted(missing), sorted(extra)))
for name, cls, since in rows:
    check(cls in ("coll", "p2p", "group", "comm", "mem", "query", "misc"), "%s: class %s" % (name, cls))
    check(since.isdigit() and 21700 <= int(since) <= version, "%s: since %s (header %d)" % (name, since, version))
# the ids are the positions in nccl_api.def
check(listed == [n for n, _, _ in API], "order of nccl_api.def")
print("test_api_list: %d functions match nccl.h %d" % (len(listed), version))
