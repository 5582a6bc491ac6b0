#!/usr/bin/env python3
"""Tests of `npkit convert`: dumps with known events (npkit_gen.py) are converted and every event of
the trace is compared with the value computed independently, in exact nanoseconds.

    NPKIT_TOOL=/path/to/npkit test_convert.py TEST...   (TEST: a name below, or 'all')

NPKIT_CONVERT="COMMAND ARGS" replaces "$NPKIT_TOOL convert" (e.g. to run the tests under valgrind).
"""
import decimal
import json
import os
import random
import re
import resource
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import npkit_gen as gen  # noqa: E402
import perfetto_read  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERT = (shlex.split(os.environ['NPKIT_CONVERT']) if os.environ.get('NPKIT_CONVERT')
           else [os.environ['NPKIT_TOOL'], 'convert'] if os.environ.get('NPKIT_TOOL') else [])
TMP = None


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(args, expect_rc=None):
    p = subprocess.run(CONVERT + [str(a) for a in args], capture_output=True, text=True, timeout=600)
    check(p.returncode >= 0, 'killed by signal %d: %s' % (-p.returncode, p.stderr[-2000:]))
    # a sanitizer build reports with exit status 1, which some tests expect for other reasons
    for marker in ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:'):
        check(marker not in p.stderr, 'sanitizer report:\n' + p.stderr[-4000:])
    if expect_rc is not None:
        check(p.returncode == expect_rc, 'exit status %d, expected %d; stderr:\n%s' %
              (p.returncode, expect_rc, p.stderr[-3000:]))
    return p


def load(path):
    with open(path) as f:
        text = f.read()
    return json.loads(text, parse_float=decimal.Decimal)


def tmpdir(name):
    path = os.path.join(TMP, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


TRACK_GPU = re.compile(r'^GPU buf (\d+)(?: \u00b7 lane (\d+))?( \u00b7 unaligned)?$')
TRACK_CPU = re.compile(r'^net channel (\d+) \u00b7 lane (\d+)$')


def ns_of(ts):
    v = ts * 1000
    check(v == v.to_integral_value(), 'time %s has more than 3 decimals' % ts)
    check(re.fullmatch(r'-?\d+\.\d{3}', str(ts)) is not None, 'time %s not written with exactly 3 decimals' % ts)
    return int(v)


def trace_events(trace):
    """The X and i events of a trace as dicts shaped like npkit_gen's expectations."""
    check(trace.get('displayTimeUnit') == 'ns', 'displayTimeUnit is not ns')
    other = trace['otherData']
    base = int(other['base_ns'])
    procs, threads, tids = {}, {}, {}
    for e in trace['traceEvents']:
        if e['ph'] != 'M':
            continue
        if e['name'] == 'process_name':
            procs[e['pid']] = e['args']['name']
        elif e['name'] == 'thread_name':
            check(e['tid'] not in tids, 'tid %d named twice' % e['tid'])
            tids[e['tid']] = e['pid']
            threads[(e['pid'], e['tid'])] = e['args']['name']
    out = []
    for e in trace['traceEvents']:
        if e['ph'] == 'M':
            continue
        check(e['ph'] in ('X', 'i'), 'unexpected phase %r' % e['ph'])
        pid, tid = e['pid'], e['tid']
        m = re.fullmatch(r'rank (\d+) \(NPKit\)', procs.get(pid, ''))
        check(m is not None and int(m.group(1)) + 1 == pid, 'pid %d has process name %r' % (pid, procs.get(pid)))
        rank = int(m.group(1))
        name = threads.get((pid, tid))
        check(name is not None, 'event on unnamed track %d/%d' % (pid, tid))
        mg, mc = TRACK_GPU.match(name), TRACK_CPU.match(name)
        check(mg or mc, 'bad track name %r' % name)
        gpu = mg is not None
        args = e['args']
        unaligned = args.get('unaligned', False)
        check(unaligned == (gpu and mg.group(3) is not None), 'unaligned flag and track name %r disagree' % name)
        start = ns_of(e['ts']) + (0 if unaligned else base)
        d = {'ph': e['ph'], 'rank': rank, 'gpu': gpu, 'buffer': int((mg or mc).group(1)), 'name': e['name'],
             'start': start, 'size': args['size'], 'rsvd': args['rsvd' if gpu else 'slot'], 'unaligned': unaligned,
             'lane': int((mg.group(2) or 0) if gpu else mc.group(2)), 'tid': tid, 'cat': e['cat']}
        if e['ph'] == 'X':
            dur = ns_of(e['dur'])
            check('entry_size' not in args or args['entry_size'] != args['size'], 'entry_size written though equal')
            d.update(end=start + dur, entry_size=args.get('entry_size', args['size']), seq=args['seq'],
                     bw=args.get('bw_GBps'))
            check(e['cat'] == ('npkit_gpu' if gpu else 'npkit_cpu'), 'slice category %r' % e['cat'])
        else:
            check(e.get('s') == 't', 'instant without thread scope')
            d.update(end=start, unpaired=args.get('unpaired'))
            check(e['cat'] == ('npkit_unpaired' if d['unpaired'] else 'npkit_gpu' if gpu else 'npkit_cpu'),
                  'instant category %r' % e['cat'])
        out.append(d)
    return out


def key(d):
    return (d['rank'], d['gpu'], d['buffer'], d['start'], d['name'], d['ph'], d['end'], d['size'], d['rsvd'])


def compare(expected, actual):
    """Every expected event is in the trace with exactly these values, and nothing else is."""
    exp = sorted(expected, key=key)
    act = sorted(actual, key=key)
    check(len(exp) == len(act), '%d events expected, %d in the trace' % (len(exp), len(act)))
    for x, a in zip(exp, act):
        for k in ('ph', 'rank', 'gpu', 'buffer', 'name', 'start', 'end', 'size', 'rsvd', 'unaligned'):
            check(x[k] == a[k], '%s: expected %r, trace has %r\n  expected %s\n  trace    %s' % (k, x[k], a[k], x, a))
        if x['ph'] == 'X':
            for k in ('entry_size', 'seq'):
                check(x[k] == a[k], '%s: expected %r, trace has %r in %s' % (k, x[k], a[k], a))
            bw = gen.bw_milli(x['size'], x['end'] - x['start'])
            want = None if bw is None else decimal.Decimal(bw) / 1000
            check(a['bw'] == want, 'bandwidth %r, expected %r in %s' % (a['bw'], want, a))
            if 'lane' in x:
                check(x['lane'] == a['lane'], 'lane %d, expected %d in %s' % (a['lane'], x['lane'], a))
        else:
            check(x['unpaired'] == a['unpaired'], 'unpaired %r, expected %r' % (a['unpaired'], x['unpaired']))


def check_nesting(events):
    """Slices of one track nest properly: none starts inside another and ends after it."""
    by_tid = {}
    for e in events:
        if e['ph'] == 'X':
            by_tid.setdefault(e['tid'], []).append((e['start'], -e['end'], e['name']))
    for tid, sl in by_tid.items():
        sl.sort()
        stack = []
        for s, neg_e, name in sl:
            e = -neg_e
            while stack and stack[-1][0] <= s:
                stack.pop()
            check(not stack or e <= stack[-1][0], 'track %d: %s [%d, %d] overlaps %s without nesting' %
                  (tid, name, s, e, stack[-1][1] if stack else ''))
            stack.append((e, name))


def check_counters(other, dump, expected):
    c = dump.counts()
    x = [e for e in expected if e['ph'] == 'X']
    check(other['events'] == c['events'], 'events %d, expected %d' % (other['events'], c['events']))
    check(other['slices'] == len(x), 'slices %d, expected %d' % (other['slices'], len(x)))
    for k, what in (('unpaired_entries', 'entry'), ('unpaired_exits', 'exit')):
        n = sum(1 for e in expected if e['ph'] == 'i' and e['unpaired'] == what)
        check(other[k] == n, '%s %d, expected %d' % (k, other[k], n))
    for k in ('time_sync_cpu', 'time_sync_gpu', 'unknown_ids'):
        check(other[k] == c[k], '%s %d, expected %d' % (k, other[k], c[k]))
    aligned = [e['start'] for e in expected if not e['unaligned']]
    if aligned:
        check(int(other['base_ns']) == min(aligned), 'base_ns %s, expected %d' % (other['base_ns'], min(aligned)))


def convert_and_check(dump, path, extra=(), expect_rc=0, expected=None):
    out = os.path.join(path, 'trace.json')
    p = run([path, '-o', out] + list(extra), expect_rc=expect_rc)
    check(not os.path.exists(out + '.partial'), 'partial file left behind')
    trace = load(out)
    events = trace_events(trace)
    expected = dump.expected() if expected is None else expected
    compare(expected, events)
    check_nesting(events)
    check_counters(trace['otherData'], dump, expected)
    return p, trace, events


# ---------------------------------------------------------------- tests

def test_known():
    path = tmpdir('known')
    d = gen.scenario()
    d.write(path)
    p, trace, events = convert_and_check(d, path)
    other = trace['otherData']
    check(other['aligned'] is True and other['errors'] == [], 'unexpected errors: %s' % other['errors'])
    check('ids 0x60' in p.stderr and 'give its npkit_event.h' in p.stderr, 'no unknown-id warning:\n' + p.stderr)
    check('6 ENTRY events without their EXIT and 6 EXIT events' in p.stderr, 'no unpaired warning:\n' + p.stderr)
    check(any('ids 0x60' in w for w in other['warnings']), 'warning missing from otherData')
    # the overlapping kind went to a lane of its own, everything else nests on lane 0
    for e in events:
        if e['gpu'] and e['ph'] == 'X':
            want = 1 if e['name'] == 'PRIM_LL_DATA_PROCESS' else 0
            check(e['lane'] == want, '%s on GPU lane %d' % (e['name'], e['lane']))
    # every tid is unique in the file and never equals a pid
    pids = {e['pid'] for e in trace['traceEvents']}
    check(not pids & {e['tid'] for e in trace['traceEvents'] if 'tid' in e}, 'a tid equals a pid')
    # default output location
    run([path, '-q'], expect_rc=0)
    again = load(os.path.join(path, 'npkit_event_trace.json'))
    check(again['traceEvents'] == trace['traceEvents'], 'default output differs from -o output')


FORK_HEADER = """\
#ifndef NPKIT_EVENT_H_
#define NPKIT_EVENT_H_
/* A fork that renumbers everything.
#define NPKIT_EVENT_COMMENTED_OUT 0x99
*/
#define NPKIT_EVENT_INVALID                 0x0
#define NPKIT_EVENT_TIME_SYNC_CPU           0x10   // moved
#define NPKIT_EVENT_TIME_SYNC_GPU           (0x11)
#define NPKIT_EVENT_MY_KERNEL_ENTRY         200
#define NPKIT_EVENT_MY_KERNEL_EXIT          0xC9u
#  define NPKIT_EVENT_MY_STEP_ENTRY         0x20
#define NPKIT_EVENT_MY_STEP_EXIT            07     /* exit id below the entry id */
#define NPKIT_EVENT_MY_MARK \\
        0x21
#define NPKIT_PRIM_COLLECT_DATA_PROCESS_TIME 0x4F
#define NPKIT_EVENT_NET_SEND_ENTRY          0x30
#define NPKIT_EVENT_NET_SEND_EXIT           0x2F
#endif
"""
FORK_IDS = {'TIME_SYNC_CPU': 0x10, 'TIME_SYNC_GPU': 0x11, 'MY_KERNEL_ENTRY': 200, 'MY_KERNEL_EXIT': 0xC9,
            'MY_STEP_ENTRY': 0x20, 'MY_STEP_EXIT': 7, 'MY_MARK': 0x21, 'NET_SEND_ENTRY': 0x30, 'NET_SEND_EXIT': 0x2F}


def fork_dump():
    d = gen.Dump(FORK_IDS)
    r = d.rank(4, 1500000)
    b = r.gpu_buf(3)
    e = b.epoch(gen.T0_NS, 5 * 10**11)
    b.slice(e, 'MY_KERNEL', 5 * 10**11 + 10, 5 * 10**11 + 90000, size=1 << 20)
    b.slice(e, 'MY_STEP', 5 * 10**11 + 100, 5 * 10**11 + 40000, size=4096, rsvd=3)
    b.slice(e, 'MY_STEP', 5 * 10**11 + 40001, 5 * 10**11 + 80000, size=4096, rsvd=4)
    t = 5 * 10**11 + 45000
    b.raw(e, t, gen.record(0x21, 5, 6, t), single=('point', 'MY_MARK', t, 5, 6))
    c = r.channel(1)
    c.slice('NET_SEND', 77, gen.T0_NS + 1000, gen.T0_NS + 5000, size=8192)
    return d


def test_fork_header():
    path = tmpdir('fork')
    d = fork_dump()
    d.write(path, all_files=False)
    hdr = os.path.join(TMP, 'fork_npkit_event.h')
    with open(hdr, 'w') as f:
        f.write(FORK_HEADER)
    p, trace, _ = convert_and_check(d, path, ['--header', hdr])
    check(trace['otherData']['event_table'] == 'header ' + hdr, 'event_table %r' % trace['otherData']['event_table'])
    check(trace['otherData']['point_events'] == 1, 'point events %r' % trace['otherData']['point_events'])
    # with the built-in table the fork's ids are unknown (or mean something else): warned, not fatal
    p = run([path, '-o', os.path.join(path, 'builtin.json')], expect_rc=0)
    check('does not define' in p.stderr and '0xc8' in p.stderr, 'no unknown-id warning:\n' + p.stderr)
    # a header that extends the built-in table keeps the other built-in ids
    ext = os.path.join(TMP, 'extend.h')
    with open(ext, 'w') as f:
        f.write('#define NPKIT_EVENT_MY_KERNEL_ENTRY 200\n#define NPKIT_EVENT_MY_KERNEL_EXIT 201\n')
    p = run([path, '-o', os.path.join(path, 'ext.json'), '--extend-header', ext], expect_rc=0)
    names = {e['name'] for e in load(os.path.join(path, 'ext.json'))['traceEvents'] if e['ph'] == 'X'}
    check('MY_KERNEL' in names, 'extended table not used: %s' % names)


def test_header_errors():
    path = tmpdir('hdrerr')
    gen.scenario().write(path, all_files=False)
    cases = [
        ('#define NPKIT_EVENT_A_ENTRY 0x100\n', ':1: NPKIT_EVENT_A_ENTRY = 0x100 does not fit the 8-bit'),
        ('#define NPKIT_EVENT_A 1\n#define NPKIT_EVENT_A 2\n', ':2: NPKIT_EVENT_A defined twice'),
        ('#define NPKIT_EVENT_A 1\n#define NPKIT_EVENT_B 0x1\n', ':2: id 1 given to both NPKIT_EVENT_A'),
        ('\n\n#define NPKIT_EVENT_A (1 + 2)\n', ":3: the value of NPKIT_EVENT_A is not an integer: '(1 + 2)'"),
        ('#define NPKIT_EVENT_A -1\n', ':1: NPKIT_EVENT_A has a negative id'),
        ('#define NPKIT_EVENT_A 09\n', "not an integer: '09'"),
        ('int x;\n#define OTHER 1\n', "no '#define NPKIT_EVENT_<NAME> <id>' line found"),
        ('#define NPKIT_EVENT_A 1\n\0\n', 'contains NUL bytes'),
    ]
    for i, (text, msg) in enumerate(cases):
        hdr = os.path.join(TMP, 'bad%d.h' % i)
        with open(hdr, 'w') as f:
            f.write(text)
        p = run([path, '-o', os.path.join(path, 'x.json'), '--header', hdr], expect_rc=1)
        check(msg in p.stderr and hdr in p.stderr, 'header %r: message %r not in:\n%s' % (text, msg, p.stderr))
        check(not os.path.exists(os.path.join(path, 'x.json')), 'a trace was written despite a bad header')
    p = run([path, '--header', os.path.join(TMP, 'no_such.h')], expect_rc=1)
    check('no_such.h: No such file' in p.stderr, p.stderr)


def no_sync_dump(rank_with_sync=None, cpu_only=False):
    d = gen.Dump()
    for rank in (0, 1):
        r = d.rank(rank, 1980000)
        for buf in (0, 2, 9):
            b = r.gpu_buf(buf)
            g = 3 * 10**12 + 1000 * buf + 7 * rank
            for k in range(2):
                gk = g + k * 10**7
                sync = rank == rank_with_sync
                e = b.epoch(gen.T0_NS + k * 10**7 if (sync or cpu_only) else None,
                            gk if sync and not cpu_only else None)
                b.slice(e, 'ALL_REDUCE_RING', gk + 501, gk + 80003, size=1 << 22)
                b.slice(e, 'ALL_REDUCE_RING_SEND', gk + 1001, gk + 20001, size=1 << 20, rsvd=11)
    return d


def test_no_time_sync():
    path = tmpdir('nosync')
    d = no_sync_dump()
    d.write(path)
    p, trace, events = convert_and_check(d, path)
    other = trace['otherData']
    check(other['aligned'] is False and other['base_ns'] == '0', 'aligned %r base %r' % (other['aligned'],
                                                                                         other['base_ns']))
    msg = '-DENABLE_NPKIT_EVENT_TIME_SYNC_CPU and -DENABLE_NPKIT_EVENT_TIME_SYNC_GPU'
    check(msg in p.stderr and 'marked unaligned' in p.stderr and '6 GPU buffer(s) (ranks 0-1)' in p.stderr,
          'no clear TIME_SYNC message:\n' + p.stderr)
    check(any(msg in w for w in other['warnings']), 'TIME_SYNC warning missing from otherData')
    check(other['unaligned_events'] == 2 * 3 * 2 * 4, 'unaligned_events %r' % other['unaligned_events'])
    check(all(e['unaligned'] for e in events) and events, 'events not flagged unaligned')
    # rank 0 aligned, rank 1 not: only rank 1 is flagged, and rank 0 keeps exact real times
    path = tmpdir('halfsync')
    d = no_sync_dump(rank_with_sync=0)
    d.write(path)
    p, trace, events = convert_and_check(d, path)
    check(trace['otherData']['aligned'] is True, 'aligned ranks not aligned')
    check({e['rank'] for e in events if e['unaligned']} == {1}, 'wrong ranks flagged unaligned')
    check('3 GPU buffer(s) (ranks 1)' in p.stderr, p.stderr)


def test_sync_cpu_only():
    path = tmpdir('cpuonly')
    d = no_sync_dump(cpu_only=True)
    d.write(path)
    p, trace, events = convert_and_check(d, path)
    check(not any(e['unaligned'] for e in events), 'events flagged unaligned')
    check('no TIME_SYNC_GPU events' in p.stderr and '-DENABLE_NPKIT_EVENT_TIME_SYNC_GPU' in p.stderr, p.stderr)


def test_corrupt():
    # a file cut short: the partial event is ignored, the rest converted, exit status 1
    path = tmpdir('trunc')
    d = gen.scenario()
    d.write(path)
    with open(os.path.join(path, 'gpu_events_rank_1_buf_5'), 'ab') as f:
        f.write(b'\x01\x02\x03\x04\x05\x06\x07')
    p, trace, _ = convert_and_check(d, path, expect_rc=1)
    check('1 event file(s) are cut short' in p.stderr and 'rank 1 GPU buf 5' in p.stderr, p.stderr)
    check(trace['otherData']['truncated_files'] == 1 and trace['otherData']['errors'], 'truncation not recorded')

    # missing and absurd clock files: that rank is skipped with a clear reason, the others converted
    cases = [
        ('gpu_clock_rate_rank_1', None, 'gpu_clock_rate_rank_1: missing'),
        ('gpu_clock_rate_rank_1', '0', 'GPU clock rate 0 kHz is not plausible'),
        ('gpu_clock_rate_rank_1', '-1410000\n', "negative value '-1410000'"),
        ('gpu_clock_rate_rank_1', '1.41e6', "not an integer: '1.41e6'"),
        ('gpu_clock_rate_rank_1', '99999999999', 'GPU clock rate 99999999999 kHz is not plausible'),
        ('gpu_clock_rate_rank_1', '', 'empty'),
        ('gpu_clock_rate_rank_1', '9' * 30, 'too large'),
        ('gpu_clock_rate_rank_1', '1' * 100, 'longer than 64 bytes'),
        ('cpu_clock_period_den_rank_1', '0', 'host clock period 1/0 s has a zero term'),
        ('cpu_clock_period_num_rank_1', 'abc', "cpu_clock_period_num_rank_1: not an integer: 'abc'"),
        ('cpu_clock_period_num_rank_1', '2000000000', 'host clock period 2000000000/1000000000 s is not plausible'),
    ]
    d = gen.scenario()
    keep = [e for e in d.expected() if e['rank'] != 1]
    for name, content, msg in cases:
        path = tmpdir('clock')
        d.write(path, all_files=False)
        if content is None:
            os.unlink(os.path.join(path, name))
        else:
            with open(os.path.join(path, name), 'w') as f:
                f.write(content)
        out = os.path.join(path, 'trace.json')
        p = run([path, '-o', out], expect_rc=1)
        check('rank 1 skipped' in p.stderr and msg in p.stderr, '%s=%r: %r not in:\n%s' % (name, content, msg, p.stderr))
        events = trace_events(load(out))
        compare(keep, events)

    # not a dump at all
    path = tmpdir('empty')
    p = run([path], expect_rc=1)
    check('no NPKit dump files' in p.stderr and 'NPKIT_DUMP_DIR' in p.stderr, p.stderr)
    check(not os.path.exists(os.path.join(path, 'npkit_event_trace.json')), 'trace written for an empty dir')
    p = run([os.path.join(TMP, 'does_not_exist')], expect_rc=1)
    check('No such file or directory' in p.stderr, p.stderr)

    # every file empty: a valid empty trace and a warning
    path = tmpdir('allempty')
    d = gen.Dump()
    d.rank(0)
    d.write(path)
    p = run([path], expect_rc=0)
    check('holds no events' in p.stderr, p.stderr)
    check(load(os.path.join(path, 'npkit_event_trace.json'))['otherData']['events'] == 0, 'events in empty dump')

    # things named like dump files that are not regular files are skipped, never opened
    path = tmpdir('odd')
    d = gen.scenario()
    d.write(path, all_files=False)
    os.mkdir(os.path.join(path, 'gpu_events_rank_0_buf_100'))
    os.symlink('/dev/zero', os.path.join(path, 'gpu_events_rank_0_buf_101'))
    os.mkfifo(os.path.join(path, 'cpu_events_rank_0_channel_9'))
    with open(os.path.join(path, 'gpu_events_rank_00_buf_1'), 'wb') as f:
        f.write(b'\0' * 16)
    p, _, _ = convert_and_check(d, path)
    check('3 entries named like event files are not regular files' in p.stderr, p.stderr)
    check('1 files named like dump files carry numbers this reader refuses' in p.stderr, p.stderr)


def test_hostile():
    # random bytes, ids unknown or not, absurd timestamps: no crash, a valid trace, a clear status
    rnd = random.Random(1234)
    for i in range(4):
        path = tmpdir('random%d' % i)
        d = gen.Dump()
        d.rank(0)
        d.write(path, all_files=False)
        for name in ('gpu_events_rank_0_buf_0', 'cpu_events_rank_0_channel_0'):
            with open(os.path.join(path, name), 'wb') as f:
                f.write(bytes(rnd.getrandbits(8) for _ in range(16 * 4096 + i * 5)))
        p = run([path, '-o', os.path.join(path, 't.json')])
        check(p.returncode in (0, 1), 'status %d:\n%s' % (p.returncode, p.stderr))
        t = load(os.path.join(path, 't.json'))
        check(t['otherData']['events'] == 2 * 4096, 'events %r' % t['otherData']['events'])
        trace_events(t)
    # timestamps that overflow 64-bit nanoseconds are skipped and reported as an error
    path = tmpdir('overflow')
    d = gen.Dump()
    r = d.rank(0, 1000)
    b = r.gpu_buf(0)
    e = b.epoch(2**63, 0)
    b.raw(e, 1, gen.record(0x1, 1, 0, 1))
    b.raw(e, 2**64 - 1, gen.record(0x2, 1, 0, 2**64 - 1))
    d.write(path, all_files=False)
    p = run([path], expect_rc=1)
    check('do not convert to 64-bit nanoseconds' in p.stderr, p.stderr)
    # the buffer has its TIME_SYNC_CPU: the message names its value, not missing build flags
    check('have TIME_SYNC_CPU events whose host clock value does not convert' in p.stderr
          and 'ENABLE_NPKIT_EVENT_TIME_SYNC' not in p.stderr, 'cause of the unaligned events:\n' + p.stderr)


def test_memory_bound():
    """Peak memory does not depend on the size of a file: 1 MiB and 1 GiB of records."""
    peaks = []
    for mb in (1, 1024):
        path = tmpdir('big%d' % mb)
        d = gen.Dump()
        d.rank(0)
        d.write(path, all_files=False)
        with open(os.path.join(path, 'gpu_events_rank_0_buf_0'), 'wb') as f:
            f.truncate(mb << 20)  # sparse: INVALID records, read but never emitted
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        p = run([path, '-o', os.path.join(path, 't.json')], expect_rc=0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        check('INVALID (id 0) records were skipped' in p.stderr, p.stderr)
        peaks.append(after if after > before else before)
        other = load(os.path.join(path, 't.json'))['otherData']
        check(other['events'] == (mb << 20) // 16 and other['invalid_events'] == other['events'], 'counts %r' % other)
        shutil.rmtree(path)
    check(peaks[1] - peaks[0] < 16 * 1024, 'peak RSS grew from %d KiB to %d KiB' % tuple(peaks))


def test_ranks():
    path = tmpdir('ranks')
    d = gen.scenario()
    d.write(path)
    for sel, want in (('0,2', {0, 2}), ('1-1', {1}), ('2,0-1,0', {0, 1, 2})):
        out = os.path.join(path, 't.json')
        run([path, '-o', out, '--ranks', sel], expect_rc=0)
        compare([e for e in d.expected() if e['rank'] in want], trace_events(load(out)))
    p = run([path, '--ranks', '9'], expect_rc=1)
    check('none of the selected ranks is in the dump' in p.stderr, p.stderr)
    p = run([path, '-o', os.path.join(path, 't.json'), '--ranks', '0,9-10'], expect_rc=0)
    check('2 selected rank(s) are not in the dump: 9-10' in p.stderr, p.stderr)


def test_usage():
    path = tmpdir('usage')
    gen.scenario().write(path, all_files=False)
    for args, msg in (([], 'missing DUMP_DIR'), ([path, '--bogus'], "unknown option '--bogus'"),
                      ([path, '--ranks', 'x'], 'bad rank list'), ([path, '--ranks', '5-3'], 'bad rank list'),
                      ([path, '--ranks', '0-99999999'], 'bad rank list'), ([path, path], 'one dump directory'),
                      ([path, '-o', ''], 'empty output name'), ([path, '--header'], "needs a value")):
        p = run(args, expect_rc=2)
        check(msg in p.stderr, '%s: %r not in:\n%s' % (args, msg, p.stderr))
    p = run(['--help'], expect_rc=0)
    check('Usage: npkit convert DUMP_DIR' in p.stdout, p.stdout)
    p = run([path, '-o', '-', '-q'], expect_rc=0)
    t = json.loads(p.stdout, parse_float=decimal.Decimal)
    check(len(trace_events(t)) == len(gen.scenario().expected()), 'stdout trace incomplete')
    check(not os.path.exists(os.path.join(path, 'npkit_event_trace.json')), 'file written with -o -')
    # a FIFO or a symbolic link as output is written through, never replaced by a renamed file
    fifo = os.path.join(path, 'fifo')
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    run([path, '-o', fifo, '-q'], expect_rc=0)
    reader.join(60)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), 'the FIFO was replaced')
    check(got and len(trace_events(json.loads(got[0], parse_float=decimal.Decimal))) == len(gen.scenario().expected()),
          'trace through the FIFO incomplete')
    target = os.path.join(path, 'target.json')
    with open(target, 'w') as f:
        f.write('x' * 10**7)
    link = os.path.join(path, 'link.json')
    os.symlink(target, link)
    run([path, '-o', link, '-q'], expect_rc=0)
    check(os.path.islink(link), 'the symbolic link was replaced')
    check(len(trace_events(load(target))) == len(gen.scenario().expected()), 'trace through the link incomplete')


def fixture_dump():
    """The committed fixture: two ranks, a few buffers (see fixture/README.md)."""
    d = gen.Dump()
    r = d.rank(0, 1410000)
    b = r.gpu_buf(0)
    e = b.epoch(gen.T0_NS, 10**12)
    b.slice(e, 'ALL_REDUCE_RING', 10**12 + 141, 10**12 + 14241, size=1 << 20)
    b.slice(e, 'ALL_REDUCE_RING_SEND', 10**12 + 300, 10**12 + 4000, size=1 << 18, rsvd=1234)
    b.slice(e, 'PRIM_SIMPLE_REDUCE_OR_COPY_MULTI', 10**12 + 500, 10**12 + 2500, size=1 << 17)
    b.slice(e, 'PRIM_SIMPLE_WAIT_PEER', 10**12 + 2000, 10**12 + 3000)
    b.slice(e, 'ALL_REDUCE_RING_RECV_REDUCE_SEND', 10**12 + 5000, 10**12 + 14000, size=1 << 19, rsvd=99)
    e = b.epoch(gen.T0_NS + 50000, 10**12 + 100000)
    b.slice(e, 'ALL_REDUCE_RING', 10**12 + 100141, 10**12 + 110000, size=1 << 20)
    b.entry_only(e, 'ALL_REDUCE_RING_SEND', 10**12 + 100300, size=1 << 18)
    b = r.gpu_buf(1)
    e = b.epoch(gen.T0_NS + 7, 2 * 10**12)
    b.slice(e, 'ALL_REDUCE_RING', 2 * 10**12 + 10, 2 * 10**12 + 14010, size=1 << 20)
    c = r.channel(0)
    c.slice('NET_SEND', 11, gen.T0_NS + 1000, gen.T0_NS + 9000, size=1 << 18)
    c.slice('NET_SEND', 12, gen.T0_NS + 2000, gen.T0_NS + 5000, size=1 << 18)
    c.slice('NET_RECV', 11, gen.T0_NS + 2500, gen.T0_NS + 3500, size=1 << 16)
    c.exit_only('NET_RECV', 13, gen.T0_NS + 9500, size=1)
    r = d.rank(1, 1755000)
    b = r.gpu_buf(2)
    e = b.epoch(gen.T0_NS + 3, 5 * 10**11)
    b.slice(e, 'ALL_REDUCE_RING', 5 * 10**11 + 99, 5 * 10**11 + 17654, size=1 << 20)
    b.slice(e, 'ALL_REDUCE_RING_SEND', 5 * 10**11 + 1001, 5 * 10**11 + 9999, size=1 << 18, rsvd=4321)
    return d


def test_fixture():
    src = os.path.join(HERE, 'fixture', 'dump')
    path = tmpdir('fixture')
    for name in os.listdir(src):
        shutil.copy(os.path.join(src, name), path)
    d = fixture_dump()
    out = os.path.join(path, 'trace.json')
    convert_and_check(d, path)
    got, want = load(out), load(os.path.join(HERE, 'fixture', 'expected_trace.json'))
    for t in (got, want):
        for k in ('dump_dir', 'version'):
            t['otherData'].pop(k)
    check(got['traceEvents'] == want['traceEvents'], 'traceEvents differ from fixture/expected_trace.json')
    check(got == want, 'otherData differs from fixture/expected_trace.json: %s' % got['otherData'])
    # byte for byte too (member order, number spelling, lines), but for the two values that depend on
    # the build and the folder: a change of the renderer that changes a trace is seen
    def masked(file):
        with open(file, 'rb') as f:
            text = f.read()
        return re.sub(rb'"(version|dump_dir)":"[^"]*"', rb'"\1":"-"', text)
    check(masked(out) == masked(os.path.join(HERE, 'fixture', 'expected_trace.json')),
          'the trace differs byte for byte from fixture/expected_trace.json')
    # the committed dump is what fixture_dump() writes
    regen = tmpdir('fixture_regen')
    d.write(regen, all_files=False)
    for name in sorted(os.listdir(regen)):
        with open(os.path.join(regen, name), 'rb') as a, open(os.path.join(src, name), 'rb') as b:
            check(a.read() == b.read(), 'fixture file %s differs from fixture_dump()' % name)


def test_perfetto():
    """--format perfetto (and a .pftrace name): the same slices, instants and arguments as the JSON,
    read by this suite's own decoder and by protoc; lanes where kinds overlap."""
    for name, d, least in (('known', gen.scenario(), 20), ('fork', None, 4)):
        path = tmpdir('perfetto_' + name)
        args = []
        if d is None:
            d = fork_dump()
            hdr = os.path.join(path, 'npkit_event.h')
            d.write(path)
            with open(hdr, 'w') as f:
                f.write(FORK_HEADER)
            args = ['--header', hdr]
        else:
            d.write(path)
        js, pf = os.path.join(path, 't.json'), os.path.join(path, 't.pftrace')
        run([path, '-o', js, '-q'] + args, expect_rc=0)
        run([path, '-o', pf, '-q'] + args, expect_rc=0)
        with open(pf, 'rb') as f:
            t = perfetto_read.PerfettoTrace(f.read())
        check(t.problems == [], '%s: %s' % (name, t.problems))
        trace = load(js)
        base = int(trace['otherData']['base_ns']) if trace['otherData'].get('aligned') else 0
        diffs = perfetto_read.compare_with_json(t, trace, base)
        check(diffs == [], '%s: %s' % (name, '\n'.join(diffs)))
        check(perfetto_read.compare_with_json.slices_compared >= least, '%s: %d slices compared' %
              (name, perfetto_read.compare_with_json.slices_compared))
        p = perfetto_read.protoc_problems(pf)
        check(p is None or p == [], '%s: %s' % (name, p))
    # the default name follows the format
    run([path, '-q', '--format', 'perfetto'] + args, expect_rc=0)
    check(os.path.exists(os.path.join(path, 'npkit_event_trace.pftrace')), 'no default .pftrace')
    p = run([path, '--format', 'json', '-o', os.path.join(path, 'x.perfetto-trace')], expect_rc=2)
    check("is Perfetto's" in p.stderr, p.stderr)


TESTS = {name[5:]: f for name, f in sorted(globals().items()) if name.startswith('test_')}


def main(argv):
    global TMP
    if not CONVERT:
        print('set NPKIT_TOOL to the npkit command (or NPKIT_CONVERT to a command line)', file=sys.stderr)
        return 2
    names = list(TESTS) if argv == ['all'] or not argv else argv
    failed = 0
    TMP = tempfile.mkdtemp(prefix='npkit_convert_test_')
    try:
        for name in names:
            try:
                TESTS[name]()
                print('ok   %s' % name)
            except Failure as e:
                failed += 1
                print('FAIL %s: %s' % (name, e))
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
