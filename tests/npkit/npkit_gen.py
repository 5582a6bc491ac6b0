#!/usr/bin/env python3
"""Writes NPKit dump directories with known events, and what `npkit convert` must make of them.

The expected slices are derived from what the scenario *meant* (this slice starts at tick a and
ends at tick b), not by pairing the written events again, and every time is computed here with
Python integers straight from the formulas of docs/npkit-convert.md.

    npkit_gen.py scenario DIR      the scenario used by test_convert.py (prints nothing)
    npkit_gen.py bench DIR --mb N  about N MB of realistic events for bench/convert_bench.sh
"""
import argparse
import os
import struct
import sys

# Ids of the NPKit patch for NCCL 2.17.1 (the built-in table).
# (event, id of its _ENTRY); its _EXIT is the next id.
_PAIRS = [
    ('ALL_REDUCE_RING', 0x1),
    ('COPY_SEND', 0x7),
    ('DIRECT_RECV', 0xB),
    ('PRIM_SIMPLE_WAIT_PEER', 0x23),
    ('PRIM_SIMPLE_REDUCE_OR_COPY_MULTI', 0x25),
    ('PRIM_LL_DATA_PROCESS', 0x29),
    ('NET_SEND', 0x2F),
    ('NET_RECV', 0x31),
    ('ALL_REDUCE_RING_SEND', 0x35),
    ('ALL_REDUCE_RING_RECV_REDUCE_SEND', 0x37),
    ('SEND_RECV_SEND', 0x4B),
]
IDS = {'TIME_SYNC_GPU': 0x33, 'TIME_SYNC_CPU': 0x34}
for _event, _entry in _PAIRS:
    IDS[_event + '_ENTRY'], IDS[_event + '_EXIT'] = _entry, _entry + 1

NUM_GPU_BUFS = 512
NUM_CPU_CHANNELS = 32


def record(event_id, size, rsvd, ts):
    """One 16-byte event: type 8 bits, size 32, rsvd 24, then a 64-bit timestamp, little endian."""
    assert 0 <= event_id < 256 and 0 <= size < 2**32 and 0 <= rsvd < 2**24 and 0 <= ts < 2**64
    return struct.pack('<QQ', event_id | size << 8 | rsvd << 40, ts)


def div_round_half_away(n, d):
    q, r = divmod(abs(n), d)
    if 2 * r >= d:
        q += 1
    return q if n >= 0 else -q


def gpu_ns(cpu_base_ns, gpu_base, tick, khz):
    return cpu_base_ns + div_round_half_away((tick - gpu_base) * 10**6, khz)


def cpu_ns(ticks, num, den):
    return div_round_half_away(ticks * num * 10**9, den)


def bw_milli(size, dur_ns):
    return div_round_half_away(size * 1000, dur_ns) if dur_ns > 0 else None


class Rank:
    def __init__(self, dump, rank, khz, num, den):
        self.ids = dump.ids
        self.rank, self.khz, self.num, self.den = rank, khz, num, den
        self.gpu = {}
        self.cpu = {}

    def gpu_buf(self, idx):
        return self.gpu.setdefault(idx, GpuBuffer(self, idx))

    def channel(self, idx):
        return self.cpu.setdefault(idx, CpuChannel(self, idx))


class GpuBuffer:
    """Epochs of events; each epoch is what one kernel launch records."""

    def __init__(self, rank, idx):
        self.rank, self.idx, self.ids = rank, idx, rank.ids
        self.epochs = []
        self.raw_tail = b''

    def epoch(self, cpu_ticks=None, gpu_tick=None):
        """A kernel: TIME_SYNC_CPU with cpu_ticks (host clock), TIME_SYNC_GPU with gpu_tick; None
        leaves the event out as a build without -DENABLE_NPKIT_EVENT_TIME_SYNC_* would."""
        e = {'cpu': cpu_ticks, 'gpu': gpu_tick, 'events': [], 'slices': [], 'singles': []}
        self.epochs.append(e)
        return e

    @staticmethod
    def _add(e, tick, rec, kind=None):
        e['events'].append((tick, len(e['events']), rec))

    def slice(self, e, kind, t0, t1, size=0, entry_size=None, rsvd=0):
        entry_size = size if entry_size is None else entry_size
        self._add(e, t0, record(self.ids[kind + '_ENTRY'], entry_size, 0, t0))
        self._add(e, t1, record(self.ids[kind + '_EXIT'], size, rsvd, t1))
        e['slices'].append((kind, t0, t1, size, entry_size, rsvd))

    def entry_only(self, e, kind, t, size=0):
        self._add(e, t, record(self.ids[kind + '_ENTRY'], size, 0, t))
        e['singles'].append(('entry', kind + '_ENTRY', t, size, 0))

    def exit_only(self, e, kind, t, size=0, rsvd=0):
        self._add(e, t, record(self.ids[kind + '_EXIT'], size, rsvd, t))
        e['singles'].append(('exit', kind + '_EXIT', t, size, rsvd))

    def unknown(self, e, event_id, t):
        self._add(e, t, record(event_id, 1, 2, t))
        e['unknown'] = e.get('unknown', 0) + 1

    def raw(self, e, t, rec, single=None):
        """A record written as is; `single` is what it must become: ('point', name, tick, size, rsvd)."""
        self._add(e, t, rec)
        if single is not None:
            e['singles'].append(single)

    def content(self):
        out = []
        for e in self.epochs:
            if e['cpu'] is not None:
                out.append(record(self.ids['TIME_SYNC_CPU'], 0, 0, e['cpu']))
            if e['gpu'] is not None:
                out.append(record(self.ids['TIME_SYNC_GPU'], 0, 0, e['gpu']))
            out.extend(rec for _, _, rec in sorted(e['events']))
        return b''.join(out) + self.raw_tail

    def counts(self):
        n = sum(len(e['events']) + (e['cpu'] is not None) + (e['gpu'] is not None) for e in self.epochs)
        return {
            'events': n,
            'time_sync_cpu': sum(e['cpu'] is not None for e in self.epochs),
            'time_sync_gpu': sum(e['gpu'] is not None for e in self.epochs),
            'unknown_ids': sum(e.get('unknown', 0) for e in self.epochs),
        }

    def first_tick(self):
        ticks = [t for e in self.epochs for t, _, _ in e['events']]
        return min(ticks) if ticks else None

    def expected(self, anchor):
        """Slices and instants as (kind-or-name, start_ns, end_ns, ...) dicts."""
        r = self.rank
        out = []
        seq = {}
        for e in self.epochs:
            ticks = sorted(t for t, _, _ in e['events'])
            if not ticks:
                continue
            aligned = e['cpu'] is not None
            if aligned:
                base_ns = cpu_ns(e['cpu'], r.num, r.den)
                gbase = e['gpu'] if e['gpu'] is not None else ticks[0]
            else:
                base_ns, gbase = 0, anchor

            def ns(t):
                return gpu_ns(base_ns, gbase, t, r.khz)

            for kind, t0, t1, size, entry_size, rsvd in sorted(e['slices'], key=lambda s: s[2]):
                n = seq.get(kind, 0)
                seq[kind] = n + 1
                out.append({'ph': 'X', 'rank': r.rank, 'gpu': True, 'buffer': self.idx, 'name': kind,
                            'start': ns(t0), 'end': ns(t1), 'size': size, 'rsvd': rsvd,
                            'entry_size': entry_size, 'seq': n, 'unaligned': not aligned})
            for what, name, t, size, rsvd in e['singles']:
                out.append({'ph': 'i', 'rank': r.rank, 'gpu': True, 'buffer': self.idx, 'name': name,
                            'start': ns(t), 'end': ns(t), 'size': size, 'rsvd': rsvd,
                            'unpaired': what if what in ('entry', 'exit') else None, 'unaligned': not aligned})
        return out


class CpuChannel:
    """Proxy events: (kind, slot) pairs, the host clock in ticks of num/den s."""

    def __init__(self, rank, idx):
        self.rank, self.idx, self.ids = rank, idx, rank.ids
        self.events = []
        self.slices = []
        self.singles = []

    def slice(self, kind, slot, t0, t1, size=0, entry_size=None):
        entry_size = size if entry_size is None else entry_size
        self.events.append((t0, len(self.events), record(self.ids[kind + '_ENTRY'], entry_size, slot, t0)))
        self.events.append((t1, len(self.events), record(self.ids[kind + '_EXIT'], size, slot, t1)))
        self.slices.append((kind, slot, t0, t1, size, entry_size))

    def entry_only(self, kind, slot, t, size=0):
        self.events.append((t, len(self.events), record(self.ids[kind + '_ENTRY'], size, slot, t)))
        self.singles.append(('entry', kind + '_ENTRY', slot, t, size))

    def exit_only(self, kind, slot, t, size=0):
        self.events.append((t, len(self.events), record(self.ids[kind + '_EXIT'], size, slot, t)))
        self.singles.append(('exit', kind + '_EXIT', slot, t, size))

    def content(self):
        return b''.join(rec for _, _, rec in sorted(self.events))

    def counts(self):
        return {'events': len(self.events), 'time_sync_cpu': 0, 'time_sync_gpu': 0, 'unknown_ids': 0}

    def expected(self):
        r = self.rank
        out = []
        # lanes: the lowest lane free when the ENTRY comes, in time order (the documented rule)
        marks = []
        for i, (kind, slot, t0, t1, size, entry_size) in enumerate(self.slices):
            marks.append((t0, 1, i))
            marks.append((t1, 0, i))
        lane_of, busy = {}, set()
        for t, is_entry, i in sorted(marks, key=lambda m: (m[0], m[1])):
            if is_entry:
                lane = 0
                while lane in busy:
                    lane += 1
                busy.add(lane)
                lane_of[i] = lane
            else:
                busy.discard(lane_of[i])
        seq = {}
        for i, (kind, slot, t0, t1, size, entry_size) in sorted(enumerate(self.slices), key=lambda s: s[1][3]):
            n = seq.get(kind, 0)
            seq[kind] = n + 1
            out.append({'ph': 'X', 'rank': r.rank, 'gpu': False, 'buffer': self.idx, 'name': kind,
                        'start': cpu_ns(t0, r.num, r.den), 'end': cpu_ns(t1, r.num, r.den), 'size': size,
                        'rsvd': slot, 'entry_size': entry_size, 'seq': n, 'lane': lane_of[i], 'unaligned': False})
        for what, name, slot, t, size in self.singles:
            out.append({'ph': 'i', 'rank': r.rank, 'gpu': False, 'buffer': self.idx, 'name': name,
                        'start': cpu_ns(t, r.num, r.den), 'end': cpu_ns(t, r.num, r.den), 'size': size,
                        'rsvd': slot, 'unpaired': what, 'unaligned': False})
        return out


class Dump:
    def __init__(self, ids=None):
        self.ids = IDS if ids is None else ids
        self.ranks = {}

    def rank(self, rank, khz=1410000, num=1, den=1000000000):
        return self.ranks.setdefault(rank, Rank(self, rank, khz, num, den))

    def write(self, path, all_files=True, clocks=True):
        os.makedirs(path, exist_ok=True)
        for r in self.ranks.values():
            bufs = range(NUM_GPU_BUFS) if all_files else sorted(r.gpu)
            chans = range(NUM_CPU_CHANNELS) if all_files else sorted(r.cpu)
            for i in bufs:
                with open(os.path.join(path, 'gpu_events_rank_%d_buf_%d' % (r.rank, i)), 'wb') as f:
                    f.write(r.gpu[i].content() if i in r.gpu else b'')
            for c in chans:
                with open(os.path.join(path, 'cpu_events_rank_%d_channel_%d' % (r.rank, c)), 'wb') as f:
                    f.write(r.cpu[c].content() if c in r.cpu else b'')
            if clocks:
                for name, value in (('gpu_clock_rate', r.khz), ('cpu_clock_period_num', r.num),
                                    ('cpu_clock_period_den', r.den)):
                    with open(os.path.join(path, '%s_rank_%d' % (name, r.rank)), 'w') as f:
                        f.write(str(value))

    def anchor(self, r):
        ticks = [b.first_tick() for b in r.gpu.values() if b.first_tick() is not None]
        return min(ticks) if ticks else 0

    def expected(self):
        out = []
        for r in self.ranks.values():
            a = self.anchor(r)
            for b in r.gpu.values():
                out.extend(b.expected(a))
            for c in r.cpu.values():
                out.extend(c.expected())
        return out

    def counts(self):
        total = {'events': 0, 'time_sync_cpu': 0, 'time_sync_gpu': 0, 'unknown_ids': 0}
        for r in self.ranks.values():
            for x in list(r.gpu.values()) + list(r.cpu.values()):
                for k, v in x.counts().items():
                    total[k] += v
        return total


T0_NS = 1764671234567890123  # a CLOCK_REALTIME time in 2025


def scenario():
    """Three ranks with different clocks; nested and overlapping GPU slices, two kernels per buffer,
    CPU slots opened concurrently, missing partners and an unknown id."""
    d = Dump()
    # rank 1: a clock rate where halves occur (1 tick = 0.5 ns); rank 2: a 2.4 GHz host clock
    specs = [(0, 1410000, 1, 1000000000), (1, 2000000, 1, 1000000000), (2, 1755000, 5, 12000000000)]
    for rank, khz, num, den in specs:
        r = d.rank(rank, khz, num, den)
        host = lambda ns: ns * den // (num * 10**9)  # host ticks of a time in ns (exact here)
        for buf in (0, 1, 5, 511):
            b = r.gpu_buf(buf)
            g = 10**12 + 7919 * rank + 31 * buf  # clock64() of the first kernel
            for k in range(2):
                cpu_t = host(T0_NS + rank * 1000 + buf * 3 + k * 5_000_000 + 123)
                gk = g + k * 9_000_000 + 17
                e = b.epoch(cpu_t, gk)
                s = gk + 1001 + buf  # odd offsets: sub-ns parts and halves
                b.slice(e, 'ALL_REDUCE_RING', s, s + 100003, size=1 << 20, rsvd=0)
                b.slice(e, 'ALL_REDUCE_RING_SEND', s + 5001, s + 20011, size=65536, rsvd=777)
                b.slice(e, 'PRIM_SIMPLE_WAIT_PEER', s + 6001, s + 10003, size=0)
                # overlapping, not nested: must go to different lanes
                b.slice(e, 'PRIM_SIMPLE_REDUCE_OR_COPY_MULTI', s + 25001, s + 45001, size=131072, rsvd=5)
                b.slice(e, 'PRIM_LL_DATA_PROCESS', s + 30001, s + 50001, size=4096, rsvd=6)
                b.slice(e, 'ALL_REDUCE_RING_RECV_REDUCE_SEND', s + 55001, s + 90001, size=262144,
                        entry_size=262143, rsvd=0xABCDE)
                # the same kind back to back, and nested in itself
                b.slice(e, 'SEND_RECV_SEND', s + 91001, s + 92001, size=100)
                b.slice(e, 'SEND_RECV_SEND', s + 92001, s + 99001, size=200)
                b.slice(e, 'SEND_RECV_SEND', s + 93001, s + 94001, size=300)
                if buf == 1 and k == 1:
                    b.entry_only(e, 'DIRECT_RECV', s + 99501, size=42)   # EXIT lost
                    b.exit_only(e, 'COPY_SEND', s + 99601, size=43, rsvd=9)  # ENTRY lost
                if buf == 5 and k == 0:
                    b.unknown(e, 0x60, s + 99701)
        for ch in (0, 3):
            c = r.channel(ch)
            t = T0_NS + rank * 2000 + ch * 7 + 5
            for i in range(3):
                base = t + i * 1_000_000
                # three sends in flight at once, closing out of order; receives with the same slots
                c.slice('NET_SEND', 100 + i, host(base + 11), host(base + 5000), size=524288)
                c.slice('NET_SEND', 101 + i * 7, host(base + 20), host(base + 3000), size=524288)
                c.slice('NET_SEND', 102 + i * 7, host(base + 30), host(base + 9000), size=262144, entry_size=1)
                c.slice('NET_RECV', 100 + i, host(base + 40), host(base + 4000), size=1000)
            if ch == 3:
                c.exit_only('NET_RECV', 4242, host(t + 5_000_000), size=7)
                c.entry_only('NET_SEND', 4343, host(t + 5_000_100), size=8)
    return d


def bench(path, mb):
    """About `mb` MB: 1 MiB GPU buffers (kernels of nested slices), a few CPU channels per rank."""
    ev = []
    g = 10**12
    cpu = T0_NS
    while len(ev) * 16 < (1 << 20) - 16 * 16:
        ev.append(record(IDS['TIME_SYNC_CPU'], 0, 0, cpu))
        ev.append(record(IDS['TIME_SYNC_GPU'], 0, 0, g))
        ev.append(record(IDS['ALL_REDUCE_RING_ENTRY'], 1 << 24, 0, g + 100))
        t = g + 200
        for i in range(6):
            ev.append(record(IDS['ALL_REDUCE_RING_SEND_ENTRY'], 1 << 20, 0, t))
            ev.append(record(IDS['PRIM_SIMPLE_WAIT_PEER_ENTRY'], 0, 0, t + 10))
            ev.append(record(IDS['PRIM_SIMPLE_WAIT_PEER_EXIT'], 0, 0, t + 400))
            ev.append(record(IDS['ALL_REDUCE_RING_SEND_EXIT'], 1 << 20, 123, t + 1500))
            t += 1600
        ev.append(record(IDS['ALL_REDUCE_RING_EXIT'], 1 << 24, 0, t + 50))
        g += 50000
        cpu += 40000
    gpu_buf = b''.join(ev)
    ev = []
    cpu = T0_NS
    while len(ev) * 16 < (1 << 20) - 16 * 8:
        for s in range(4):
            ev.append(record(IDS['NET_SEND_ENTRY'], 524288, 1000 + s, cpu + s * 10))
        for s in range(4):
            ev.append(record(IDS['NET_SEND_EXIT'], 524288, 1000 + s, cpu + 2000 + s * 100))
        cpu += 3000
    cpu_buf = b''.join(ev)
    os.makedirs(path, exist_ok=True)
    written, rank = 0, 0
    while written < mb * 10**6:
        for i in range(NUM_GPU_BUFS):
            name = 'gpu_events_rank_%d_buf_%d' % (rank, i)
            with open(os.path.join(path, name), 'wb') as f:
                if i < 480 and written < mb * 10**6:
                    f.write(gpu_buf)
                    written += len(gpu_buf)
        for c in range(NUM_CPU_CHANNELS):
            with open(os.path.join(path, 'cpu_events_rank_%d_channel_%d' % (rank, c)), 'wb') as f:
                if c < 8 and written < mb * 10**6:
                    f.write(cpu_buf)
                    written += len(cpu_buf)
        for name, value in (('gpu_clock_rate', 1410000), ('cpu_clock_period_num', 1),
                            ('cpu_clock_period_den', 1000000000)):
            with open(os.path.join(path, '%s_rank_%d' % (name, rank)), 'w') as f:
                f.write(str(value))
        rank += 1
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('scenario')
    p.add_argument('dir')
    p = sub.add_parser('bench')
    p.add_argument('dir')
    p.add_argument('--mb', type=int, default=1000)
    a = ap.parse_args()
    if a.cmd == 'scenario':
        scenario().write(a.dir)
    else:
        print(bench(a.dir, a.mb))
    return 0


if __name__ == '__main__':
    sys.exit(main())
