"""The test's own reader of NPKit dump files: what the preloaded library must make of a dump.

Written from the format alone (docs/npkit-convert.md: 16-byte little-endian records, the clock
files, NPKit's time base rules, pairing per GPU buffer and kind or per CPU channel, slot and kind),
with Python integers, so that every expected time is exact.  It shares no code with the library or
with tests/npkit.
"""
import os
import re
import struct

# The ids of NPKit's patch for NCCL 2.17.1 (docs/npkit-convert.md); ENTRY/EXIT pairs are id, id+1.
_PAIRS = [
    "ALL_REDUCE_RING", "ALL_REDUCE_TREE_UPDOWN", "ALL_REDUCE_TREE_SPLIT", "COPY_SEND",
    "DIRECT_COPY_SEND", "DIRECT_RECV", "DIRECT_RECV_COPY_SEND", "DIRECT_RECV_REDUCE_COPY_SEND",
    "DIRECT_SEND", "DIRECT_SEND_FROM_OUTPUT", "RECV", "RECV_COPY_SEND", "RECV_REDUCE_COPY",
    "RECV_REDUCE_COPY_SEND", "RECV_REDUCE_SEND", "SEND", "SEND_FROM_OUTPUT", "PRIM_SIMPLE_WAIT_PEER",
    "PRIM_SIMPLE_REDUCE_OR_COPY_MULTI", "PRIM_LL_WAIT_SEND", "PRIM_LL_DATA_PROCESS",
    "PRIM_LL128_WAIT_SEND", "PRIM_LL128_DATA_PROCESS", "NET_SEND", "NET_RECV",
]
_PAIRS2 = [
    "ALL_REDUCE_RING_SEND", "ALL_REDUCE_RING_RECV_REDUCE_SEND",
    "ALL_REDUCE_RING_DIRECT_RECV_REDUCE_COPY_SEND", "ALL_REDUCE_RING_DIRECT_RECV_COPY_SEND",
    "ALL_REDUCE_RING_DIRECT_RECV", "ALL_REDUCE_TREE_UPDOWN_REDUCE", "ALL_REDUCE_TREE_UPDOWN_BROADCAST",
    "ALL_REDUCE_TREE_SPLIT_REDUCE_BROADCAST", "ALL_REDUCE_TREE_SPLIT_REDUCE",
    "ALL_REDUCE_TREE_SPLIT_BROADCAST", "SEND_RECV_LOCAL_COPY", "SEND_RECV_SEND", "SEND_RECV_RECV",
]


def builtin_table():
    t = {0: "INVALID", 0x33: "TIME_SYNC_GPU", 0x34: "TIME_SYNC_CPU"}
    for i, kind in enumerate(_PAIRS):
        t[1 + 2 * i] = kind + "_ENTRY"
        t[2 + 2 * i] = kind + "_EXIT"
    for i, kind in enumerate(_PAIRS2):
        t[0x35 + 2 * i] = kind + "_ENTRY"
        t[0x36 + 2 * i] = kind + "_EXIT"
    assert t[0x2F] == "NET_SEND_ENTRY" and t[0x4E] == "SEND_RECV_RECV_EXIT" and len(t) == 79
    return t


def table_from_header(text):
    """{id: name} of the `#define NPKIT_EVENT_<NAME> <id>` lines (the simple forms tests write)."""
    return {int(m.group(2), 0): m.group(1)
            for m in re.finditer(r"^#define\s+NPKIT_EVENT_(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", text, re.M)}


def div_round(n, d):
    """n / d rounded to the nearest integer, halves away from zero."""
    q, r = divmod(abs(n), d)
    if 2 * r >= d:
        q += 1
    return q if n >= 0 else -q


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for off in range(0, len(data) - len(data) % 16, 16):
        lo, ts = struct.unpack_from("<QQ", data, off)
        out.append((lo & 0xFF, (lo >> 8) & 0xFFFFFFFF, lo >> 40, ts))
    return out


def _kind(name):
    for suffix, role in (("_ENTRY", "entry"), ("_EXIT", "exit")):
        if name.endswith(suffix):
            return name[: -len(suffix)], role
    return name, "point"


class RankDump:
    """The files of one rank: which ones, and the clocks."""

    def __init__(self, folder, rank, files):
        self.rank = rank
        self.files = files  # [(source 'gpu'/'cpu', index, path, size)] sorted as the library reads
        read = lambda name: int(open(os.path.join(folder, "%s_rank_%d" % (name, rank))).read())
        self.khz = read("gpu_clock_rate")
        self.num = read("cpu_clock_period_num")
        self.den = read("cpu_clock_period_den")


def list_dump(folder, ranks=None, min_mtime_ns=None):
    """{rank: RankDump} of the non-empty event files in folder (of the given ranks; not older than
    min_mtime_ns), in the library's order: rank, GPU buffers then CPU channels, index."""
    found = {}
    for name in os.listdir(folder):
        m = re.match(r"^(gpu|cpu)_events_rank_(0|[1-9]\d*)_(?:buf|channel)_(0|[1-9]\d*)$", name)
        if not m:
            continue
        rank, index = int(m.group(2)), int(m.group(3))
        path = os.path.join(folder, name)
        st = os.stat(path)
        if ranks is not None and rank not in ranks:
            continue
        if min_mtime_ns is not None and st.st_mtime_ns < min_mtime_ns:
            continue
        if st.st_size >= 16:
            found.setdefault(rank, []).append((m.group(1), index, path, st.st_size))
    return {r: RankDump(folder, r, sorted(f, key=lambda x: (x[0] == "cpu", x[1])))
            for r, f in sorted(found.items())}


class Expected:
    """What the library must store for a set of files: pairs and single events with exact ns."""

    def __init__(self, table):
        self.table = table
        self.pairs = []     # dicts: rank source buffer name start end size rsvd entry_size entry_rsvd seq unaligned
        self.singles = []   # dicts: rank source buffer name ns size rsvd what ('entry'/'exit'/'point') unaligned
        self.unknown = 0
        self.time_sync = 0

    def add_rank(self, rd, files=None):
        files = rd.files if files is None else files
        gpu = [f for f in files if f[0] == "gpu"]
        # the anchor of events without a time base: the earliest first ordinary event of a buffer
        firsts = []
        for _, _, path, _ in gpu:
            for rid, _, _, ts in records(path):
                name = self.table.get(rid)
                if name is not None and name != "INVALID" and not name.startswith("TIME_SYNC_"):
                    firsts.append(ts)
                    break
        anchor = min(firsts) if firsts else 0
        for source, index, path, _ in files:
            if source == "gpu":
                self._gpu(rd, index, records(path), anchor)
            else:
                self._cpu(rd, index, records(path))

    def _gpu(self, rd, index, recs, anchor):
        cpu_base = gpu_base = None
        opened = {}  # kind -> [(ns, size, rsvd, unaligned)]
        seq = {}

        def flush():
            for kind, stack in opened.items():
                for ns, size, rsvd, unaligned in stack:
                    self._single(rd, "gpu", index, kind + "_ENTRY", ns, size, rsvd, "entry", unaligned)
            opened.clear()

        for rid, size, rsvd, ts in recs:
            name = self.table.get(rid)
            if name is None:
                self.unknown += 1
                continue
            if name == "TIME_SYNC_CPU":
                self.time_sync += 1
                flush()
                cpu_base, gpu_base = div_round(ts * rd.num * 10**9, rd.den), None
                continue
            if name == "TIME_SYNC_GPU":
                self.time_sync += 1
                if gpu_base is None:
                    gpu_base = ts
                continue
            if gpu_base is None:
                gpu_base = ts
            if cpu_base is not None:
                ns, unaligned = cpu_base + div_round((ts - gpu_base) * 10**6, rd.khz), False
            else:
                ns, unaligned = div_round((ts - anchor) * 10**6, rd.khz), True
            kind, role = _kind(name)
            if role == "entry":
                opened.setdefault(kind, []).append((ns, size, rsvd, unaligned))
            elif role == "exit" and opened.get(kind):
                entry = opened[kind].pop()
                self._close(rd, "gpu", index, seq, name, entry, (ns, size, rsvd, unaligned), entry[2],
                            ns < entry[0] or entry[3] != unaligned)
            else:
                self._single(rd, "gpu", index, name, ns, size, rsvd, role, unaligned)
        flush()

    def _cpu(self, rd, index, recs):
        opened = {}  # (slot, kind) -> (ns, size)
        seq = {}
        for rid, size, slot, ts in recs:
            name = self.table.get(rid)
            if name is None:
                self.unknown += 1
                continue
            if name.startswith("TIME_SYNC_"):
                continue
            ns = div_round(ts * rd.num * 10**9, rd.den)
            kind, role = _kind(name)
            if role == "entry":
                if (slot, kind) in opened:
                    start, esize = opened.pop((slot, kind))
                    self._single(rd, "cpu", index, name, start, esize, slot, "entry", False)
                opened[(slot, kind)] = (ns, size)
            elif role == "exit" and (slot, kind) in opened:
                start, esize = opened.pop((slot, kind))
                self._close(rd, "cpu", index, seq, name, (start, esize, slot, False), (ns, size, slot, False), 0,
                            ns < start)
            else:
                self._single(rd, "cpu", index, name, ns, size, slot, role, False)
        for (slot, kind), (start, esize) in opened.items():
            self._single(rd, "cpu", index, kind + "_ENTRY", start, esize, slot, "entry", False)

    def _close(self, rd, source, index, seq, name, entry, exit_, entry_rsvd, broken):
        """An exit meets its open entry: one pair numbered by kind, or two singles when they cannot pair.
        entry and exit_ are (ns, size, rsvd, unaligned); entry_rsvd is what the pair reports of the entry."""
        kind = _kind(name)[0]
        start, esize, ersvd, eun = entry
        ns, size, rsvd, unaligned = exit_
        if broken:
            self._single(rd, source, index, kind + "_ENTRY", start, esize, ersvd, "entry", eun)
            self._single(rd, source, index, name, ns, size, rsvd, "exit", unaligned)
            return
        n = seq.get(kind, 0)
        seq[kind] = n + 1
        self.pairs.append(dict(rank=rd.rank, source=source, buffer=index, name=kind, start=start, end=ns, size=size,
                               rsvd=rsvd, entry_size=esize, entry_rsvd=entry_rsvd, seq=n, unaligned=unaligned))

    def _single(self, rd, source, index, name, ns, size, rsvd, what, unaligned):
        self.singles.append(dict(rank=rd.rank, source=source, buffer=index, name=name, ns=ns, size=size,
                                 rsvd=rsvd, what=what, unaligned=unaligned))

    def unpaired(self, what):
        return sum(1 for s in self.singles if s["what"] == what)
