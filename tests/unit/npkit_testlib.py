"""Helpers of the Python unit tests: building logs through build_log, running the npkit tool,
parsing traces exactly, and the names of nccl_api.def read independently of the C code."""
import json
import struct
import os
import re
import subprocess
import sys
from decimal import Decimal

NO_SEQ = 2**64 - 1
TOOL = os.environ.get("NPKIT_TOOL", "npkit")
BUILD_LOG = os.environ.get("NPKIT_BUILD_LOG", "build_log")
SOURCE_DIR = os.environ.get("NPKIT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

# The spellings of docs/trace-format.md, by ncclDataType_t / ncclRedOp_t / ncclResult_t value.
DATATYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
             "bfloat16", "float8e4m3", "float8e5m2"]
DATATYPE_SIZE = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]
REDOPS = ["sum", "prod", "max", "min", "avg"]
RESULTS = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
           "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]
ROOTED = {"ncclBroadcast", "ncclBcast", "ncclReduce", "ncclGather", "ncclScatter"}
CREATES_COMM = {"ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable",
                "ncclCommInitAll", "ncclCommSplit", "ncclCommShrink"}
SIZED = {"ncclMemAlloc", "ncclCommRegister", "ncclCommWindowRegister"}
MIDDOT = "\u00b7"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def api_table():
    """[(name, class, since)] in id order (id = position + 1), parsed from nccl_api.def."""
    text = open(os.path.join(SOURCE_DIR, "src", "format", "nccl_api.def")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for m in re.finditer(r"NPKIT_NCCL_API(_VOID)?\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\d+)", text):
        out.append(("nccl" + m.group(2), m.group(3), int(m.group(4))))
    return out


API = api_table()


def api_returns():
    """name -> the Ret column of nccl_api.def (R, S, I, T; V for the _VOID entries)."""
    text = re.sub(r"/\*.*?\*/", "", open(os.path.join(SOURCE_DIR, "src", "format", "nccl_api.def")).read(), flags=re.S)
    out = {}
    for m in re.finditer(r"NPKIT_NCCL_API(_VOID)?\(\s*(\w+)\s*,\s*\w+\s*,\s*\d+\s*,\s*[01]\s*,\s*(\w+)?", text):
        out["nccl" + m.group(2)] = "V" if m.group(1) else m.group(3)
    return out


RETURNS = api_returns()
# the nccl*Config collectives (2.31) and the collective each is recorded as
CONFIG_OF = {"ncclAllReduce": "ncclAllReduceConfig", "ncclBroadcast": "ncclBroadcastConfig",
             "ncclReduce": "ncclReduceConfig", "ncclAllGather": "ncclAllGatherConfig",
             "ncclReduceScatter": "ncclReduceScatterConfig", "ncclAlltoAll": "ncclAlltoAllConfig",
             "ncclGather": "ncclGatherConfig", "ncclScatter": "ncclScatterConfig"}
API_CONFIG = 0x40
FN_ID = {name: i + 1 for i, (name, _, _) in enumerate(API)}


def fn_name(fid):
    return API[fid - 1][0] if 1 <= fid <= len(API) else "ncclUnknown"


def fn_class(fid):
    return API[fid - 1][1] if 1 <= fid <= len(API) else "misc"


def pct(s):
    """%XX-escapes a value for a build_log spec (bytes or str)."""
    b = s.encode() if isinstance(s, str) else s
    return "".join(chr(c) if 0x21 <= c < 0x7f and c not in (0x25, 0x3d) else "%%%02x" % c for c in b)


def spec_line(record, /, **fields):
    parts = [record]
    for k, v in fields.items():
        if isinstance(v, (str, bytes)):
            v = pct(v)
        parts.append("%s=%s" % (k, v))
    return " ".join(parts)


def build_log(lines, spec_path, log_path):
    """Writes the spec, runs build_log; returns [(type, offset, end)] of the blocks written."""
    with open(spec_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([BUILD_LOG, spec_path, log_path], check=True, capture_output=True, text=True).stdout
    blocks = []
    for line in out.splitlines():
        _, t, off, end = line.split()
        blocks.append((int(t), int(off), int(end)))
    return blocks


def run_tool(*args, check_rc=None):
    p = subprocess.run([TOOL] + list(args), capture_output=True)
    if check_rc is not None and p.returncode != check_rc:
        fail("npkit %s: exit %d, expected %d\nstdout: %s\nstderr: %s" % (
            " ".join(args), p.returncode, check_rc, p.stdout[:2000], p.stderr.decode(errors="replace")))
    return p


def load_trace(text):
    """Strict parse; numbers with a fraction become Decimal so times can be checked to the ns."""
    def no_constants(c):
        raise ValueError("non-standard JSON constant " + c)
    return json.loads(text, parse_float=Decimal, parse_constant=no_constants)


def ns_of(ts):
    """Exact nanoseconds of a ts/dur written with exactly three decimals."""
    check(isinstance(ts, Decimal), "time %r is not written with decimals" % (ts,))
    check(ts.as_tuple().exponent == -3, "time %s does not have exactly 3 decimals" % ts)
    return int(ts * 1000)


def comm_label(comm_id, rank, nranks):
    return "comm %08x (rank %d/%d)" % (comm_id >> 32, rank, nranks)


def header_sizes(path):
    """(header_size, record_size) as the log's header states them."""
    with open(path, "rb") as f:
        h = f.read(24)
    return struct.unpack_from("<II", h, 12)
