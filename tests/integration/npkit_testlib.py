"""Shared helpers of the integration tests: where the binaries are, how to run a job under mpirun
with or without the preloaded library, how to read traces, logs and journals, and how to compare
a journal (what a test program says it called) with a trace (what the library recorded).

The tests run through ctest, which sets the NPKIT_* paths (see tests/CMakeLists.txt).  A missing
binary is a test failure with a clear message, never a silent skip.
"""

import decimal
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

# --- locations ------------------------------------------------------------------------------

# Settings the library reads: removed from the inherited environment so that only what a test
# sets reaches the job.
LIBRARY_SETTINGS = (
    "NPKIT_DISABLE", "NPKIT_TRACE_DIR", "NPKIT_EVENT_BUF_SIZE", "NPKIT_OPS", "NPKIT_QUIET",
    "NPKIT_LOG_LEVEL", "NPKIT_NCCL_LIBRARY", "NPKIT_FLUSH_MS", "NPKIT_JSON", "NPKIT_POOL_DIR",
    "NPKIT_PLUGIN", "NPKIT_PLUGIN_EVENTS", "NCCL_PROFILER_PLUGIN",
    "NPKIT_CUPTI", "NPKIT_CUPTI_LIBRARY", "NPKIT_CUPTI_BUFFERS", "NPKIT_CUPTI_BUFFER_KB",
    "CUDA_INJECTION64_PATH", "NPKIT_SIGNALS", "NPKIT_STACK_DEPTH", "NPKIT_STACK_LINES",
    "NPKIT_START_AFTER", "NPKIT_STOP_AFTER", "NPKIT_TOGGLE_SIGNAL",
    "NPKIT_DUMP_DIR", "NPKIT_DUMP_HEADER", "NPKIT_DUMP_MAX_MB", "NPKIT_CLOCK",
    "NPKIT_SIMULATED", "NPKIT_RING_MB", "NPKIT_DUMP_SIGNAL", "NPKIT_HANG_TIMEOUT",
    "NCCL_CONF_FILE",
    "NPKIT_MACHINE", "NPKIT_GPU_SAMPLE_RATE", "NPKIT_CPU_SAMPLE_INTERVAL", "NPKIT_SYSFS_ROOT",
    "NPKIT_NVML_LIBRARY", "NPKIT_METRICS", "NPKIT_METRICS_DIR", "NPKIT_METRICS_INTERVAL_S", "NPKIT_METRICS_MIN_BYTES",
)


def need_env(name):
    value = os.environ.get(name, "")
    if not value:
        raise AssertionError("%s is not set: run the integration tests through ctest in a build "
                             "folder where its target is configured" % name)
    return value


def need_file(path, what):
    if not os.path.exists(path):
        raise AssertionError("%s not found at %s: build it first (cmake --build BUILD)"
                             % (what, path))
    return path


def source_dir():
    return need_env("NPKIT_SOURCE_DIR")


def preload_lib():
    return need_file(need_env("NPKIT_PRELOAD_LIB"), "the preloaded library")


def tool():
    return need_file(need_env("NPKIT_TOOL"), "the npkit tool")


def program(name):
    return need_file(os.path.join(need_env("NPKIT_PROGRAMS_DIR"), name), "test program " + name)


def nccl_dir(kind):
    """Folder holding the libnccl.so.2 of a kind: 'fake' (the fake playing NCCL 2.28.9, the
    toolkit's nccl.h), 'old' (the fake behaving like NCCL 2.17), 'new' (the fake playing NCCL
    2.31.2) or 'real' (the CUDA toolkit's)."""
    if kind == "fake":
        path = need_env("NPKIT_FAKES_DIR")
    elif kind in ("old", "new"):
        path = os.path.join(need_env("NPKIT_FAKES_DIR"), kind)
    elif kind == "real":
        path = need_env("NPKIT_CUDA_LIB_DIR")
    else:
        raise ValueError(kind)
    need_file(os.path.join(path, "libnccl.so.2"), "libnccl.so.2 (%s)" % kind)
    return path


def real_nccl_available():
    lib_dir = os.environ.get("NPKIT_CUDA_LIB_DIR", "")
    return bool(lib_dir) and os.path.exists(os.path.join(lib_dir, "libnccl.so.2"))


def mpirun():
    path = os.environ.get("NPKIT_MPIRUN") or shutil.which("mpirun")
    if not path:
        raise AssertionError("mpirun not found (install Open MPI, or set NPKIT_MPIRUN)")
    return path


# --- sanitizers -----------------------------------------------------------------------------

def sanitizer_runtime():
    """The sanitizer runtime that must be preloaded before an instrumented library, or None.
    A sanitized libnpkit_preload.so cannot be LD_PRELOADed into an uninstrumented mpirun child
    unless the runtime comes first in LD_PRELOAD."""
    kind = os.environ.get("NPKIT_SANITIZE", "")
    if not kind:
        return None
    name = {"address": "libasan.so", "thread": "libtsan.so"}.get(kind)
    if not name:
        raise AssertionError("NPKIT_SANITIZE=%r is neither 'address' nor 'thread'" % kind)
    cc = os.environ.get("NPKIT_C_COMPILER") or "cc"
    out = subprocess.run([cc, "-print-file-name=" + name], capture_output=True, text=True)
    path = out.stdout.strip()
    if out.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
        raise AssertionError("cannot find %s with %s -print-file-name" % (name, cc))
    return path


def sanitizer_env():
    kind = os.environ.get("NPKIT_SANITIZE", "")
    env = {}
    if kind == "address":
        # MPI and NCCL keep allocations until exit by design; leaks are the unit tests' business
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


# --- running jobs ---------------------------------------------------------------------------

class Run:
    """The outcome of one job: return code, stdout and stderr as text."""

    def __init__(self, cmd, proc):
        self.cmd = cmd
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def stderr_lines(self):
        return self.stderr.splitlines()

    @property
    def npkit_lines(self):
        return [l for l in self.stderr_lines if l.startswith("npkit:")]

    @property
    def warnings(self):
        return [l for l in self.stderr_lines if l.startswith("npkit: warning:")]

    def describe(self):
        return "command: %s\nrc=%s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            " ".join(self.cmd), self.rc, self.stdout[-3000:], self.stderr[-6000:])


def job_env(nccl="fake", preload=True, settings=None):
    """The variables a job needs: which libnccl, the preload (with a sanitizer runtime first when
    the build is sanitized) and the library settings given."""
    env = {"LD_LIBRARY_PATH": nccl_dir(nccl)}
    inherited = os.environ.get("LD_LIBRARY_PATH", "")
    if inherited:
        env["LD_LIBRARY_PATH"] += ":" + inherited
    if preload:
        libs = [preload_lib()]
        runtime = sanitizer_runtime()
        if runtime:
            libs.insert(0, runtime)
        env["LD_PRELOAD"] = ":".join(libs)
    env.update(sanitizer_env())
    env.update(settings or {})
    return env


def _base_env():
    env = {k: v for k, v in os.environ.items() if k not in LIBRARY_SETTINGS}
    env.pop("LD_PRELOAD", None)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def run_mpi(prog, args, np, nccl="fake", preload=True, settings=None, cwd=None, timeout=120):
    """Runs a test program on np ranks.  The job's variables go through mpirun -x NAME=value, so
    mpirun itself is never preloaded."""
    env = _base_env()
    cmd = [mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    for name, value in sorted(job_env(nccl, preload, settings).items()):
        cmd += ["-x", "%s=%s" % (name, value)]
    cmd += [program(prog)] + list(args)
    return _run(cmd, env, cwd, timeout)


def run_direct(prog, args, nccl="fake", preload=True, settings=None, cwd=None, timeout=120):
    """Runs a test program as a plain process, without a launcher."""
    env = _base_env()
    env.update(job_env(nccl, preload, settings))
    cmd = [program(prog)] + list(args)
    return _run(cmd, env, cwd, timeout)


def _run(cmd, env, cwd, timeout):
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("timed out after %ss: %s\n--- stderr ---\n%s"
                             % (timeout, " ".join(cmd), (e.stderr or b"")[-4000:]))
    return Run(cmd, proc)


def run_tool(args, timeout=60, env=None):
    proc = subprocess.run([tool()] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env)
    return Run([tool()] + list(args), proc)


class TempDirTestCase(unittest.TestCase):
    """A test case with its own temporary folder, kept when NPKIT_KEEP_TEST_OUTPUT is set."""

    def setUp(self):
        self.tmp = temp_dir(self.id(), self.addCleanup)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def assertRunOk(self, run, msg=""):
        self.assertEqual(run.rc, 0, "%s\n%s" % (msg, run.describe()))


def make_temp_dir(name):
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-60:]
    return tempfile.mkdtemp(prefix="npkit_it_%s_" % safe)


def temp_dir(name, add_cleanup):
    """A new temporary folder, removed through add_cleanup (a test case's addCleanup or
    addClassCleanup) unless NPKIT_KEEP_TEST_OUTPUT is set."""
    tmp = make_temp_dir(name)
    if not os.environ.get("NPKIT_KEEP_TEST_OUTPUT"):
        add_cleanup(shutil.rmtree, tmp, True)
    return tmp


# --- the API table --------------------------------------------------------------------------

_API = None


def api_table():
    """[(name 'ncclAllReduce', class 'coll', since 21700)] in function id order, read from
    src/format/nccl_api.def: the same table the library is generated from."""
    global _API
    if _API is None:
        path = os.path.join(source_dir(), "src", "format", "nccl_api.def")
        with open(path) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        rows = re.findall(r"NPKIT_NCCL_API(?:_VOID)?\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\d+)", text)
        if not rows:
            raise AssertionError("no functions found in " + path)
        _API = [("nccl" + n, c, int(s)) for n, c, s in rows]
    return _API


def api_returns_result(name):
    """Whether nccl_api.def says the function returns an ncclResult_t (Ret R)."""
    text = re.sub(r"/\*.*?\*/", "", open(os.path.join(source_dir(), "src", "format", "nccl_api.def")).read(),
                  flags=re.S)
    m = re.search(r"NPKIT_NCCL_API\(\s*%s\s*,\s*\w+\s*,\s*\d+\s*,\s*[01]\s*,\s*(\w+)" % re.escape(name[4:]), text)
    return bool(m) and m.group(1) == "R"


def api_class(name):
    for n, c, _ in api_table():
        if n == name:
            return c
    raise AssertionError("%s is not in nccl_api.def" % name)


ALL_CLASSES = ("coll", "p2p", "group", "comm", "mem", "query", "misc")
DEFAULT_CLASSES = tuple(c for c in ALL_CLASSES if c != "query")


# --- message sizes (nccl-tests) -------------------------------------------------------------

DTYPE_SIZE = {
    "int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float16": 2,
    "float32": 4, "float64": 8, "bfloat16": 2, "float8e4m3": 1, "float8e5m2": 1,
}
TIMES_NRANKS = {"ncclAllGather", "ncclReduceScatter", "ncclAlltoAll", "ncclGather",
                "ncclScatter"}
# the nccl*Config collectives of NCCL 2.31 move what their collective moves
CONFIG_VARIANTS = {"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
                   "ncclAlltoAll", "ncclGather", "ncclScatter"}
TIMES_NRANKS |= {f + "Config" for f in TIMES_NRANKS}
DATA_FUNCTIONS = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                  "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                  "ncclRecv", "ncclPutSignal"} | {f + "Config" for f in CONFIG_VARIANTS}


def expected_bytes(fn, count, dtype, nranks):
    """Message size S of nccl-tests: count x type size, x nranks for the gathering/scattering
    collectives (count being the per-rank count passed to NCCL)."""
    size = count * DTYPE_SIZE[dtype]
    return size * nranks if fn in TIMES_NRANKS else size


# --- journals -------------------------------------------------------------------------------

class JournalCall:
    """One line of a journal written by a test program (see tests/programs/test_journal.h)."""

    INT_KEYS = ("nranks", "count", "root", "peer", "size")

    def __init__(self, line, lineno):
        parts = line.split()
        self.fn = parts[0]
        self.lineno = lineno
        self.fields = {}
        for p in parts[1:]:
            key, _, value = p.partition("=")
            self.fields[key] = int(value) if key in self.INT_KEYS else value

    def get(self, key):
        return self.fields.get(key)

    def __repr__(self):
        return "%s %s" % (self.fn, " ".join("%s=%s" % kv for kv in self.fields.items()))


class Journal:
    def __init__(self, path):
        self.path = path
        self.meta = {}
        self.calls = []
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                if line.startswith("#"):
                    for p in line[1:].split():
                        k, _, v = p.partition("=")
                        self.meta[k] = v
                else:
                    self.calls.append(JournalCall(line, n))

    @property
    def tid(self):
        return int(self.meta["tid"])

    def recorded(self, classes=DEFAULT_CLASSES):
        """The calls the library records when NPKIT_OPS selects these classes."""
        return [c for c in self.calls if api_class(c.fn) in classes]


def journal_groups(calls):
    """The outermost groups of a call list, as lists of calls from ncclGroupStart to the matching
    ncclGroupEnd / ncclGroupSimulateEnd inclusive, and whether each had nested groups."""
    groups, depth, current, nested = [], 0, None, False
    for c in calls:
        if c.fn == "ncclGroupStart" and c.get("result") == "ncclSuccess":
            if depth == 0:
                current, nested = [], False
            else:
                nested = True
            depth += 1
        if current is not None:
            current.append(c)
        if c.fn in ("ncclGroupEnd", "ncclGroupSimulateEnd") and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append((current, nested))
                current = None
    return groups


# --- traces ---------------------------------------------------------------------------------

def _reject_constant(name):
    raise ValueError("not JSON: %s" % name)


def _no_duplicate_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def strict_json_load(path):
    """json.load that rejects NaN/Infinity and duplicate keys, with numbers as Decimal so that
    microsecond timestamps convert back to exact nanoseconds."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return json.loads(text, parse_constant=_reject_constant, parse_float=decimal.Decimal,
                      object_pairs_hook=_no_duplicate_keys), text


class Trace:
    """One at-exit Chrome trace of a process."""

    def __init__(self, path):
        self.path = path
        self.doc, self.text = strict_json_load(path)
        self.other = self.doc["otherData"]
        self.events = self.doc["traceEvents"]
        self.base_ns = int(self.other["base_ns"])

    @property
    def rank(self):
        return self.other.get("rank")

    def api(self, tid=None):
        """API call events, in start order (stable for equal starts)."""
        evs = [e for e in self.events if e.get("ph") == "X" and e.get("cat") == "nccl_api"
               and (tid is None or e["tid"] == tid)]
        return sorted(evs, key=lambda e: e["ts"])

    def groups(self, tid=None):
        evs = [e for e in self.events if e.get("ph") == "X" and e.get("cat") == "nccl_group"
               and (tid is None or e["tid"] == tid)]
        return sorted(evs, key=lambda e: e["ts"])

    def metadata(self, name):
        return [e for e in self.events if e.get("ph") == "M" and e.get("name") == name]

    def thread_names(self):
        return {e["tid"]: e["args"]["name"] for e in self.metadata("thread_name")}

    def tid_of_os_thread(self, os_tid):
        """The trace tid of the host thread whose OS id is os_tid (from thread_name)."""
        found = [tid for tid, name in self.thread_names().items()
                 if re.search(r"\btid %d$" % os_tid, name)]
        if len(found) != 1:
            raise AssertionError("%s: %d thread_name entries for OS thread %d: %r"
                                 % (self.path, len(found), os_tid, self.thread_names()))
        return found[0]

    def start_ns(self, ev):
        return self.base_ns + int(ev["ts"] * 1000)

    def end_ns(self, ev):
        return self.base_ns + int((ev["ts"] + ev["dur"]) * 1000)


def trace_files(trace_dir):
    return sorted(glob.glob(os.path.join(trace_dir, "*.json")))


def log_files(trace_dir):
    return sorted(glob.glob(os.path.join(trace_dir, "*.npkit")))


def load_traces(trace_dir, expect=None):
    """Traces of a job by rank.  With `expect`, asserts there is exactly one per rank 0..expect-1
    and that its file name carries the rank."""
    files = trace_files(trace_dir)
    if not files:
        raise AssertionError("no trace written in %s (contents: %r)"
                             % (trace_dir, os.listdir(trace_dir) if os.path.isdir(trace_dir)
                                else "missing"))
    traces = {}
    for f in files:
        t = Trace(f)
        if t.rank in traces:
            raise AssertionError("two traces for rank %r: %s %s" % (t.rank, traces[t.rank].path, f))
        traces[t.rank] = t
    if expect is not None:
        if sorted(traces) != list(range(expect)):
            raise AssertionError("expected traces of ranks 0..%d, got %r"
                                 % (expect - 1, sorted(traces)))
        for r, t in traces.items():
            name = os.path.basename(t.path)
            if not name.startswith("npkit_rank%d_" % r):
                raise AssertionError("trace of rank %d is named %s" % (r, name))
    return traces


# --- binary log (include/npkit/event_log.h), read independently of the tool ---------------

LOG_HEADER = struct.Struct("<8sIIIIQQiiiiII64s16s16s96s")
BLOCK_HEADER = struct.Struct("<IHHII")
BLOCK_MAGIC = 0x424B504E
BLOCK_EVENTS, BLOCK_COMM, BLOCK_CHECK, BLOCK_END = 1, 2, 14, 15
BLOCK_EVENTS_PACKED = 10
CHECK_REC = struct.Struct("<II")


def _crc32c_table():
    t = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(data, crc=0):
    """CRC32C (Castagnoli) as the event log's CHECK blocks hold it, computed independently of the C
    code: reflected polynomial 0x82F63B78, register inverted before and after."""
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC32C[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def log_format_version():
    """NPKIT_LOG_VERSION of include/npkit/event_log.h."""
    text = open(os.path.join(source_dir(), "include", "npkit", "event_log.h")).read()
    return int(re.search(r"#define NPKIT_LOG_VERSION (\d+)u", text).group(1))
EVENT_HEAD = struct.Struct("<QQHHI")
API_BODY = struct.Struct("<QQQQQQIiiiiI")
COMM_REC = struct.Struct("<IIQQiiiHHQ32s")


def _varint(data, o):
    v = shift = 0
    while True:
        b = data[o]
        o += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, o
        shift += 7


def unpack_events(data, payload, size, count, record_size):
    """The records of an EVENTS_PACKED block (event-log version 5), decoded as docs/trace-format.md
    describes the encoding, independently of src/format/event_pack.c: each event is its kind
    (varint), a mask of the 64-bit words that differ from the previous event of the same kind
    (lane kind % 64) and those differences (zigzag varints); the second word is stored as the
    duration.  Returns the records as bytes."""
    words = record_size // 8
    mbytes = (words + 7) // 8
    lanes = {}
    o, end, out = payload, payload + size, []
    for _ in range(count):
        kind, o = _varint(data, o)
        mask = int.from_bytes(data[o:o + mbytes], "little")
        o += mbytes
        prev = lanes.setdefault(kind % 64, [0] * words)
        for i in range(words):
            if mask >> i & 1:
                z, o = _varint(data, o)
                d = (z >> 1) ^ -(z & 1)
                prev[i] = (prev[i] + d) % (1 << 64)
        w = list(prev)
        w[1] = (w[1] + w[0]) % (1 << 64)
        if w[2] & 0xFFFF != kind:
            raise AssertionError("packed event of kind %d decodes to kind %d" % (kind, w[2] & 0xFFFF))
        out.append(struct.pack("<%dQ" % words, *w))
    if o > end or end - o >= 8 or any(data[o:end]):
        raise AssertionError("packed block: %d bytes left after %d events" % (end - o, count))
    return out


class LogFile:
    """A minimal reader of the event log: header, block list, API events and comm records."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < LOG_HEADER.size:
            raise AssertionError("%s: %d bytes, shorter than the header" % (path, len(data)))
        h = LOG_HEADER.unpack_from(data, 0)
        self.magic, self.version, self.header_size, self.record_size, self.endian = h[:5]
        self.clock_base_ns, self.pid, self.rank = h[5], h[7], h[8]
        self.host = h[13].split(b"\0")[0].decode()
        self.blocks = []   # (type, count, size)
        self.events = []   # (func, start_ns, end_ns, thread, api tuple)
        self.kinds = []    # the event kind of each of them
        self.comms = []    # (local_id, comm_id, rank, nranks)
        self.checked = 0   # blocks whose CHECK block (version 2 on) holds their CRC32C
        self.packed_events = 0  # events that came from EVENTS_PACKED blocks (version 5 on)
        off = self.header_size
        while off + BLOCK_HEADER.size <= len(data):
            magic, btype, _flags, count, size = BLOCK_HEADER.unpack_from(data, off)
            if magic != BLOCK_MAGIC:
                raise AssertionError("%s: bad block magic at offset %d" % (path, off))
            payload = off + BLOCK_HEADER.size
            if payload + size > len(data):
                break  # cut short: readers stop at the last complete block
            if btype == BLOCK_CHECK and self.version >= 2:
                raise AssertionError("%s: a CHECK block without its block at offset %d" % (path, off))
            if self.version >= 2:
                c = payload + size
                if c + BLOCK_HEADER.size + CHECK_REC.size > len(data):
                    break  # the block's checksum was not written: cut short
                cmagic, ctype, _f, ccount, csize = BLOCK_HEADER.unpack_from(data, c)
                if (cmagic, ctype, ccount, csize) != (BLOCK_MAGIC, BLOCK_CHECK, 1, CHECK_REC.size):
                    raise AssertionError("%s: block at offset %d has no CHECK block after it" % (path, off))
                want, _ = CHECK_REC.unpack_from(data, c + BLOCK_HEADER.size)
                if crc32c(data[off:payload + size]) != want:
                    raise AssertionError("%s: block at offset %d: checksum does not match" % (path, off))
                self.checked += 1
            self.blocks.append((btype, count, size))
            # packed events exist from version 5 on (3 and 4 were the machine snapshot's and the ring's)
            if btype == BLOCK_EVENTS or (btype == BLOCK_EVENTS_PACKED and self.version >= 5):
                if btype == BLOCK_EVENTS:
                    records = [data[payload + i * self.record_size:payload + (i + 1) * self.record_size]
                               for i in range(count)]
                else:
                    records = unpack_events(data, payload, size, count, self.record_size)
                self.packed_events += len(records) if btype == BLOCK_EVENTS_PACKED else 0
                for rec in records:
                    start, end, kind, func, thread = EVENT_HEAD.unpack_from(rec, 0)
                    api = API_BODY.unpack_from(rec, EVENT_HEAD.size)
                    self.events.append((func, start, end, thread, api))
                    self.kinds.append(kind)
            elif btype == BLOCK_COMM:
                for i in range(count):
                    rec = COMM_REC.unpack_from(data, payload + i * COMM_REC.size)
                    self.comms.append((rec[0], rec[2], rec[4], rec[5]))
            off = payload + size
            if self.version >= 2:
                off += BLOCK_HEADER.size + CHECK_REC.size
        self.trailing = len(data) - off


def log_event_counts(trace_dir, tool_path):
    """(recorded, dropped) of the one log in trace_dir, as `npkit info` reports them."""
    logs = log_files(trace_dir)
    if len(logs) != 1:
        raise AssertionError("expected one log in %s, found %r" % (trace_dir, logs))
    info = subprocess.run([tool_path, "info", logs[0]], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        raise AssertionError("npkit info failed: " + info.stderr[-2000:])
    m = re.search(r"^events\s+(\d+) \(recorded (\d+), dropped (\d+)\)", info.stdout, re.M)
    if m is None:
        raise AssertionError("no events line in npkit info:\n" + info.stdout[-2000:])
    return int(m.group(2)), int(m.group(3))


def log_for_trace(trace_path):
    """npkit_rank3_host_123.json -> npkit_host_123.npkit in the same folder."""
    d, name = os.path.split(trace_path)
    m = re.match(r"npkit_(?:rank\d+_)?(.+)\.json$", name)
    if not m:
        raise AssertionError("unexpected trace name " + name)
    return os.path.join(d, "npkit_%s.npkit" % m.group(1))


# --- comparing a journal with a trace -------------------------------------------------------

def compare_calls(journal_calls, events):
    """Differences between journal lines and trace events, pairwise in order; [] when every call
    appears exactly once, in order, with the same arguments, size and result."""
    problems = []
    if len(journal_calls) != len(events):
        problems.append("journal has %d calls, trace has %d events" % (len(journal_calls),
                                                                       len(events)))
    for n, (c, e) in enumerate(zip(journal_calls, events)):
        a = e.get("args", {})
        where = "call %d (journal line %d, %s)" % (n, c.lineno, c)

        def differ(what, want, got):
            problems.append("%s: %s is %r in the trace, %r in the journal"
                            % (where, what, got, want))

        if e["name"] != c.fn:
            differ("name", c.fn, e["name"])
            break  # everything after a missing or extra call would differ too
        if a.get("class") != api_class(c.fn):
            differ("class", api_class(c.fn), a.get("class"))
        for key in ("count", "datatype", "op", "root", "peer", "size"):
            if a.get(key) != c.get(key):
                differ(key, c.get(key), a.get(key))
        if c.get("tag") is not None:
            want_tag = int(c.get("tag"))
            got_tag = int(a["user_tag"], 16) if "user_tag" in a else 0  # untagged: no user_tag
            if got_tag != want_tag:
                differ("user_tag", hex(want_tag), a.get("user_tag"))
        result = c.get("result")
        if result not in (None, "none") and a.get("result") != result:
            differ("result", result, a.get("result"))
        comm = c.get("comm")
        if comm == "null":
            if "comm_nranks" in a:
                differ("comm_nranks (NULL communicator)", None, a.get("comm_nranks"))
        elif comm is not None and a.get("comm_nranks") != c.get("nranks"):
            differ("comm_nranks", c.get("nranks"), a.get("comm_nranks"))
        if c.fn in DATA_FUNCTIONS:
            want = expected_bytes(c.fn, c.get("count"), c.get("datatype"),
                                  max(c.get("nranks") or 1, 1))
            if a.get("bytes") != want:
                differ("bytes", want, a.get("bytes"))
        elif a.get("bytes", 0) != 0:
            differ("bytes", "absent", a.get("bytes"))
        if result == "ncclSuccess" and api_class(c.fn) in ("coll", "p2p") and "seq" not in a:
            differ("seq", "present", None)
        if result not in (None, "none", "ncclSuccess") and "seq" in a:
            differ("seq of a failed call", "absent", a.get("seq"))
    return problems


def format_problems(problems, limit=15):
    more = len(problems) - limit
    text = "\n".join(problems[:limit])
    return text + ("\n... and %d more" % more if more > 0 else "")
