"""An independent reader of the Perfetto traces npkit writes (src/trace/trace_sink_perfetto.c): a
protobuf decoder of its own (the wire format of https://protobuf.dev/programming-guides/encoding/),
the rules Perfetto's trace processor enforces (../shared/reference/perfetto.md), and a comparison
with the Chrome JSON trace of the same logs.  Field numbers are those of google/perfetto
protos/perfetto/trace/perfetto_trace.proto, as perfetto_subset.proto (next to this file) lists
them for `protoc --decode`.

    t = PerfettoTrace(open(path, "rb").read())
    t.problems                      # broken rules, as sentences ([] when none)
    compare_with_json(t, json_obj)  # differences, as sentences ([] when none)
"""

import collections
import decimal
import os
import shutil
import subprocess

# TracePacket
PKT_TIMESTAMP, PKT_SEQ_ID, PKT_TRACK_EVENT, PKT_INTERNED, PKT_FLAGS, PKT_DESCRIPTOR = 8, 10, 11, 12, 13, 60
# TrackDescriptor, ProcessDescriptor, ThreadDescriptor
TD_UUID, TD_NAME, TD_PROCESS, TD_THREAD, TD_PARENT, TD_COUNTER, TD_ORDER_RANK = 1, 2, 3, 4, 5, 8, 12
PD_PID, PD_NAME, PD_LABELS, PD_SORT = 1, 6, 8, 3
THD_PID, THD_TID, THD_NAME = 1, 2, 5
# TrackEvent
TE_CATEGORY_IIDS, TE_ANNOTATIONS, TE_TYPE, TE_NAME_IID, TE_TRACK = 3, 4, 9, 10, 11
TE_COUNTER, TE_DOUBLE_COUNTER, TE_FLOW_IDS, TE_TERMINATING = 30, 44, 47, 48
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
# DebugAnnotation
DA_NAME_IID, DA_BOOL, DA_UINT, DA_INT, DA_DOUBLE, DA_STRING, DA_ARRAY, DA_STRING_IID = 1, 2, 3, 4, 5, 6, 12, 17
# InternedData: kinds
INTERNED_KINDS = {1: "category", 2: "name", 3: "annotation", 29: "string"}
SEQ_CLEARED, SEQ_NEEDS = 1, 2


class DecodeError(Exception):
    pass


def _varint(b, i):
    r = s = 0
    while True:
        if i >= len(b):
            raise DecodeError("a varint runs past its message")
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i
        if s > 63:
            raise DecodeError("a varint longer than 10 bytes")


def fields(b):
    """(number, wire type, value) of each field of a message: an int for varints and fixed64,
    bytes for length-delimited fields."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 1:
            if i + 8 > len(b):
                raise DecodeError("a fixed64 runs past its message")
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wire == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise DecodeError("a length runs past its message")
            v = b[i:i + n]
            i += n
        elif wire == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise DecodeError("wire type %d" % wire)
        yield num, wire, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _double(v):
    import struct
    return struct.unpack("<d", v.to_bytes(8, "little"))[0]


class PerfettoTrace:
    """The trace decoded: tracks (uuid -> dict), events in file order, problems found."""

    def __init__(self, data):
        self.problems = []
        self.tracks = {}
        self.events = []
        self.interned = {k: {} for k in INTERNED_KINDS.values()}
        self.packets = 0
        self.sequence = None
        self._seen_interned = False
        try:
            for num, wire, pkt in fields(data):
                if num != 1 or wire != 2:
                    self.problem("a Trace field other than packet (1): %d" % num)
                    continue
                self._packet(pkt)
        except DecodeError as e:
            self.problem("undecodable: %s" % e)
        self._slices()

    def problem(self, text):
        if len(self.problems) < 50:
            self.problems.append(text)

    def _text(self, b, what):
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            self.problem("%s is not valid UTF-8: %r" % (what, b[:60]))
            return b.decode("utf-8", "replace")

    def _packet(self, pkt):
        self.packets += 1
        f = collections.defaultdict(list)
        for num, wire, v in fields(pkt):
            f[num].append(v)
        seq = f[PKT_SEQ_ID][0] if f[PKT_SEQ_ID] else 0
        if seq == 0:
            self.problem("packet %d has no trusted_packet_sequence_id" % self.packets)
        flags = f[PKT_FLAGS][0] if f[PKT_FLAGS] else 0
        if f[PKT_INTERNED]:
            if not self._seen_interned and flags != SEQ_CLEARED | SEQ_NEEDS:
                self.problem("the first packet with interned data has sequence_flags %d, not 3" % flags)
            self._seen_interned = True
            for b in f[PKT_INTERNED]:
                self._interned(b)
        if f[PKT_DESCRIPTOR]:
            self._descriptor(f[PKT_DESCRIPTOR][0])
        if f[PKT_TRACK_EVENT]:
            if not f[PKT_TIMESTAMP]:
                self.problem("a track event without a timestamp")
            self._event(f[PKT_TRACK_EVENT][0], f[PKT_TIMESTAMP][0] if f[PKT_TIMESTAMP] else 0, flags)

    def _interned(self, b):
        for num, wire, entry in fields(b):
            kind = INTERNED_KINDS.get(num)
            if kind is None:
                self.problem("interned data of an unexpected kind %d" % num)
                continue
            e = dict((n, v) for n, _, v in fields(entry))
            iid, text = e.get(1, 0), self._text(e.get(2, b""), "an interned %s" % kind)
            if iid == 0:
                self.problem("an interned %s with iid 0" % kind)
            old = self.interned[kind].get(iid)
            if old is not None and old != text:
                self.problem("%s iid %d defined twice: %r, %r" % (kind, iid, old, text))
            self.interned[kind][iid] = text

    def _iid(self, kind, iid, flags):
        if not flags & SEQ_NEEDS:
            self.problem("a packet uses a %s iid without SEQ_NEEDS_INCREMENTAL_STATE" % kind)
        if iid not in self.interned[kind]:
            self.problem("%s iid %d used before it was defined" % (kind, iid))
            return "?"
        return self.interned[kind][iid]

    def _descriptor(self, b):
        d = {}
        for num, wire, v in fields(b):
            if num == TD_UUID:
                d["uuid"] = v
            elif num == TD_PARENT:
                d["parent"] = v
            elif num == TD_NAME:
                d["name"] = self._text(v, "a track name")
            elif num == TD_ORDER_RANK:
                d["rank"] = _signed(v)
            elif num == TD_PROCESS:
                d["kind"] = "process"
                for n, _, x in fields(v):
                    if n == PD_PID:
                        d["pid"] = _signed(x)
                    elif n == PD_NAME:
                        d["name"] = self._text(x, "a process name")
                    elif n == PD_LABELS:
                        d.setdefault("labels", []).append(self._text(x, "a process label"))
            elif num == TD_THREAD:
                d["kind"] = "thread"
                for n, _, x in fields(v):
                    if n == THD_PID:
                        d["pid"] = _signed(x)
                    elif n == THD_TID:
                        d["tid"] = _signed(x)
                    elif n == THD_NAME:
                        d["name"] = self._text(x, "a thread name")
            elif num == TD_COUNTER:
                d["kind"] = "counter"
        d.setdefault("kind", "custom")
        uuid = d.get("uuid", 0)
        if uuid == 0:
            self.problem("a track descriptor without uuid")
            return
        old = self.tracks.get(uuid)
        if old is not None and old["kind"] != d["kind"]:
            self.problem("track %d described as %s, then as %s" % (uuid, old["kind"], d["kind"]))
        if d["kind"] != "process":
            parent = self.tracks.get(d.get("parent"))
            if parent is None or parent["kind"] != "process":
                self.problem("track %d (%s) is not below a process track described before it" % (uuid, d.get("name")))
            else:
                if d["kind"] == "thread" and d.get("pid") != parent.get("pid"):
                    self.problem("thread track %d has pid %s below process %s" % (uuid, d.get("pid"), parent.get("pid")))
                d.setdefault("pid", parent.get("pid"))
        self.tracks[uuid] = d

    def _annotation(self, b, flags):
        name, value = "?", None
        for num, wire, v in fields(b):
            if num == DA_NAME_IID:
                name = self._iid("annotation", v, flags)
            elif num == DA_BOOL:
                value = bool(v)
            elif num == DA_UINT:
                value = v
            elif num == DA_INT:
                value = _signed(v)
            elif num == DA_DOUBLE:
                value = _double(v)
            elif num == DA_STRING:
                value = self._text(v, "a string value")
            elif num == DA_STRING_IID:
                value = self._iid("string", v, flags)
            elif num == DA_ARRAY:
                value = (value or []) + [self._annotation(v, flags)[1]]
            else:
                self.problem("an annotation field %d this reader does not know" % num)
        return name, value

    def _event(self, b, ts, flags):
        e = {"ts": ts, "type": None, "track": None, "name": None, "cat": None, "args": {}, "flow_ids": [],
             "terminating": [], "counter": None, "index": len(self.events)}
        for num, wire, v in fields(b):
            if num == TE_TYPE:
                e["type"] = v
            elif num == TE_TRACK:
                e["track"] = v
            elif num == TE_NAME_IID:
                e["name"] = self._iid("name", v, flags)
            elif num == TE_CATEGORY_IIDS:
                e["cat"] = self._iid("category", v, flags)
            elif num == TE_ANNOTATIONS:
                k, x = self._annotation(v, flags)
                if k in e["args"]:
                    self.problem("annotation %s twice on one event" % k)
                e["args"][k] = x
            elif num == TE_FLOW_IDS:
                if wire != 1:
                    self.problem("flow_ids not fixed64")
                e["flow_ids"].append(v)
            elif num == TE_TERMINATING:
                if wire != 1:
                    self.problem("terminating_flow_ids not fixed64")
                e["terminating"].append(v)
            elif num == TE_DOUBLE_COUNTER:
                e["counter"] = _double(v)
            elif num == TE_COUNTER:
                e["counter"] = _signed(v)
            else:
                self.problem("a track event field %d this reader does not know" % num)
        if e["track"] not in self.tracks:
            self.problem("an event on track %s, not described before" % e["track"])
        if e["type"] in (SLICE_BEGIN, INSTANT) and e["name"] is None:
            self.problem("a slice or instant without a name")
        if e["type"] == COUNTER and self.tracks.get(e["track"], {}).get("kind") != "counter":
            self.problem("a counter value on a track that is not a counter track")
        self.events.append(e)

    def _slices(self):
        """Slices from BEGIN/END pairs as the trace processor pairs them: events sorted by time
        (file order among equal times), an END closes the innermost open slice of its track."""
        self.slices = []
        by_track = collections.defaultdict(list)
        for e in self.events:
            if e["type"] in (SLICE_BEGIN, SLICE_END, INSTANT):
                by_track[e["track"]].append(e)
        for track, evs in by_track.items():
            evs.sort(key=lambda e: (e["ts"], e["index"]))
            stack = []
            for e in evs:
                if e["type"] == INSTANT:
                    self.slices.append(dict(e, dur=0, depth=len(stack), instant=True))
                elif e["type"] == SLICE_BEGIN:
                    stack.append(e)
                elif not stack:
                    self.problem("an END with no slice open on track %s at %d" % (track, e["ts"]))
                else:
                    b = stack.pop()
                    self.slices.append(dict(b, dur=e["ts"] - b["ts"], depth=len(stack), instant=False))
            if stack:
                self.problem("%d slices never end on track %s" % (len(stack), track))
        ids_out = collections.Counter(i for e in self.events for i in e["flow_ids"])
        ids_in = collections.Counter(i for e in self.events for i in e["terminating"])
        for i in set(ids_out) | set(ids_in):
            if ids_out[i] != 1 or ids_in[i] != 1:
                self.problem("flow %d starts on %d slices and ends on %d" % (i, ids_out[i], ids_in[i]))

    def track_of(self, e):
        """(pid, track name) of an event's track: the process's own track has name None."""
        t = self.tracks.get(e["track"], {})
        return t.get("pid"), (None if t.get("kind") == "process" else t.get("name"))


# ---- the same trace as Chrome JSON ----

def _json_tracks(trace):
    names = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


def _ns(us):
    return int(round(float(us) * 1000)) if not isinstance(us, decimal.Decimal) else int(us * 1000)


def _same_value(j, p):
    if isinstance(j, decimal.Decimal):  # a reader that keeps the JSON's decimals
        j = int(j) if j == j.to_integral_value() and "." not in str(j) else float(j)
    if isinstance(j, bool) or isinstance(p, bool):
        return j == p
    if isinstance(j, float) or isinstance(p, float):
        return isinstance(p, (int, float)) and abs(j - p) <= 0.0006 + 1e-9 * abs(j)
    if isinstance(j, list):
        return isinstance(p, list) and len(j) == len(p) and all(_same_value(a, b) for a, b in zip(j, p))
    return j == p


def _order(x):
    """Slices of one track in time order; those with the same times (the tasks of a group on one
    channel) by their names and exact arguments."""
    exact = tuple(sorted((k, str(v)) for k, v in x[4].items() if isinstance(v, (int, str))))
    return (x[0], -x[1], x[2], exact)


def compare_with_json(t, trace, base_ns=None, limit=20):
    """Differences between a decoded Perfetto trace and the JSON trace of the same logs: slices
    per process and track name (each with its name, category, times and every argument),
    instants, counter values, flows from slice to slice.  base_ns: what JSON ts 0 is (the merged
    trace's otherData.base_ns); None: found from the first slice."""
    out = []

    def diff(text):
        if len(out) < limit:
            out.append(text)

    tnames = _json_tracks(trace)
    jx = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            key = (e["pid"], tnames.get((e["pid"], e["tid"])))
            jx[key].append((_ns(e["ts"]), _ns(e.get("dur", 0)), e["name"], e.get("cat"), e.get("args", {})))
    px = collections.defaultdict(list)
    for s in t.slices:
        if not s["instant"]:
            px[t.track_of(s)].append(s)
    if base_ns is None:
        for key in sorted(jx, key=str):
            if px.get(key):
                base_ns = min(s["ts"] for s in px[key]) - min(x[0] for x in jx[key])
                break
    if base_ns is None:
        base_ns = 0
    if set(jx) != set(px):
        diff("tracks with slices: JSON only %s, Perfetto only %s" % (sorted(set(jx) - set(px), key=str)[:5],
                                                                       sorted(set(px) - set(jx), key=str)[:5]))
    n_compared = 0
    for key in set(jx) & set(px):
        js = sorted(jx[key], key=_order)
        ps = sorted(((s["ts"] - base_ns, s["dur"], s["name"], s["cat"], s["args"]) for s in px[key]), key=_order)
        if len(js) != len(ps):
            diff("%s: %d slices in the JSON, %d in Perfetto" % (key, len(js), len(ps)))
            continue
        for a, b in zip(js, ps):
            n_compared += 1
            if a[:4] != b[:4]:
                diff("%s: slice %s in the JSON, %s in Perfetto" % (key, a[:4], b[:4]))
                continue
            for k, v in a[4].items():
                if k not in b[4]:
                    diff("%s %s at %d: argument %s missing" % (key, a[2], a[0], k))
                elif not _same_value(v, b[4][k]):
                    diff("%s %s at %d: %s = %r in the JSON, %r in Perfetto" % (key, a[2], a[0], k, v, b[4][k]))
            for k in b[4]:
                if k not in a[4]:
                    diff("%s %s at %d: argument %s only in Perfetto" % (key, a[2], a[0], k))
    # instants, per process and track
    ji = collections.Counter()
    for e in trace["traceEvents"]:
        if e["ph"] in ("i", "I"):
            ji[(e["pid"], None if e.get("s") in ("p", "g") else tnames.get((e["pid"], e["tid"])), e["name"])] += 1
    pi = collections.Counter(t.track_of(s) + (s["name"],) for s in t.slices if s["instant"])
    if ji != pi:
        diff("instants differ: JSON %s, Perfetto %s" % (sorted((ji - pi).items(), key=str)[:5],
                                                         sorted((pi - ji).items(), key=str)[:5]))
    # counters: each JSON value is a value on the counter track "<name> <key>"
    jc = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "C":
            for k, v in e.get("args", {}).items():
                jc[(e["pid"], "%s %s" % (e["name"], k))].append((_ns(e["ts"]), float(v)))
    pc = collections.defaultdict(list)
    for e in t.events:
        if e["type"] == COUNTER:
            tr = t.tracks[e["track"]]
            pc[(tr.get("pid"), tr.get("name"))].append((e["ts"] - base_ns, float(e["counter"])))
    if set(jc) != set(pc):
        diff("counter tracks: JSON only %s, Perfetto only %s" % (sorted(set(jc) - set(pc), key=str)[:5],
                                                                 sorted(set(pc) - set(jc), key=str)[:5]))
    for key in set(jc) & set(pc):
        if sorted(jc[key]) != sorted(pc[key]):
            diff("counter %s: JSON %s..., Perfetto %s..." % (key, sorted(jc[key])[:3], sorted(pc[key])[:3]))
    # flows: slice to slice
    jf = _json_flows(trace, tnames, jx)
    pf = {}
    for s in t.slices:
        k = t.track_of(s) + (s["ts"] - base_ns, s["name"])
        for i in s["flow_ids"]:
            pf.setdefault(i, [None, None])[0] = k
        for i in s["terminating"]:
            pf.setdefault(i, [None, None])[1] = k
    pflows = collections.Counter(tuple(v) for v in pf.values())
    if jf != pflows:
        diff("flows differ: JSON only %s, Perfetto only %s" % (sorted((jf - pflows).items(), key=str)[:3],
                                                               sorted((pflows - jf).items(), key=str)[:3]))
    compare_with_json.slices_compared = n_compared
    compare_with_json.flows_compared = sum(jf.values())
    return out


def _json_flows(trace, tnames, jx):
    """(source slice, destination slice) of each JSON flow: the innermost slice of the flow event's
    track that encloses its time (Chrome's binding of 's', and of 'f' with "bp": "e"); for the end,
    a slice that starts at that time first (the kernel the arrow points at, where a copy on the
    same stream still runs)."""
    def enclosing(pid, tid, ts, starting):
        key = (pid, tnames.get((pid, tid)))
        best = None
        for x in jx.get(key, ()):
            if x[0] <= ts <= x[0] + x[1]:
                rank = (not (starting and x[0] == ts), x[1])
                if best is None or rank < best[0]:
                    best = (rank, x)
        return None if best is None else key + (best[1][0], best[1][2])

    ends = collections.defaultdict(lambda: [None, None])
    for e in trace["traceEvents"]:
        if e["ph"] == "s":
            ends[e["id"]][0] = enclosing(e["pid"], e["tid"], _ns(e["ts"]), False)
        elif e["ph"] == "f":
            ends[e["id"]][1] = enclosing(e["pid"], e["tid"], _ns(e["ts"]), True)
    return collections.Counter(tuple(v) for v in ends.values())


# ---- protoc, the other reader ----

def protoc_problems(path):
    """What `protoc --decode_raw` (structure) and `protoc --decode` with perfetto_subset.proto (field
    types: every field of the trace is one the schema names, with its wire type) say of the file;
    None when protoc is not installed."""
    protoc = shutil.which("protoc")
    if protoc is None:
        return None
    out = []
    with open(path, "rb") as f:
        raw = subprocess.run([protoc, "--decode_raw"], stdin=f, capture_output=True)
    if raw.returncode != 0:
        out.append("protoc --decode_raw: %s" % raw.stderr.decode(errors="replace")[:300])
    here = os.path.dirname(os.path.abspath(__file__))
    with open(path, "rb") as f:
        typed = subprocess.run([protoc, "-I", here, "--decode=perfetto.protos.Trace", "perfetto_subset.proto"],
                               stdin=f, capture_output=True)
    if typed.returncode != 0:
        out.append("protoc --decode: %s" % typed.stderr.decode(errors="replace")[:300])
    else:
        # a field protoc cannot name (unknown, or of another wire type than the schema's) prints as its number
        unknown = [l.strip() for l in typed.stdout.decode(errors="replace").splitlines() if l.strip()[:1].isdigit()]
        if unknown:
            out.append("fields the schema does not name: %s" % unknown[:5])
    return out


# ---- where the bytes go ----

def bytes_by_part(data):
    """The file's bytes counted by what they encode: 'annotations' (a slice's debug annotations,
    tags and lengths included), 'timestamps', 'framing' (the packets' and track events' tags and
    lengths), 'descriptors', 'interned', and 'other' (sequence ids and flags, types, track and name
    ids, categories, counters, flows).  The parts add up to len(data)."""
    parts = collections.Counter()

    def walk(b, nested):
        i = 0
        while i < len(b):
            start = i
            key, i = _varint(b, i)
            num, wire = key >> 3, key & 7
            if wire == 0:
                _, i = _varint(b, i)
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            else:
                n, j = _varint(b, i)
                i = j + n
                if nested.get(num) is not None:
                    part, inner = nested[num]
                    if inner is None:
                        parts[part] += i - start
                    else:
                        parts["framing"] += j - start
                        walk(b[j:i], inner)
                    continue
            parts[nested.get(("scalar", num), "other")] += i - start

    event = {TE_ANNOTATIONS: ("annotations", None)}
    packet = {PKT_TRACK_EVENT: ("framing", event), PKT_DESCRIPTOR: ("descriptors", None),
              PKT_INTERNED: ("interned", None), ("scalar", PKT_TIMESTAMP): "timestamps"}
    walk(data, {1: ("framing", packet)})
    return parts


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "--bytes":
        sys.exit("usage: perfetto_read.py --bytes TRACE.pftrace")
    with open(sys.argv[2], "rb") as f:
        data = f.read()
    for part, n in sorted(bytes_by_part(data).items(), key=lambda x: -x[1]):
        print("%-12s %12d bytes  %5.1f %%" % (part, n, 100.0 * n / max(len(data), 1)))
