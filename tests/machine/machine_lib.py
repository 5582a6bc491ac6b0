"""Helpers of the machine tests: generated /sys trees and fake NVML configurations per rank, jobs
under real mpirun in which every rank gets its own tree, NVML, host name and settings, and readers
of what the library wrote (the MACHINE blocks and the sampled events of the binary log), written
here independently of the C code, from include/npkit/event_log.h.

Builds on the integration tests' helpers (tests/integration/npkit_testlib.py)."""

import os
import re
import shlex
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("NPKIT_SOURCE_DIR", ""), "tests", "integration"))
import npkit_testlib as lib  # noqa: E402

SETTINGS = lib.LIBRARY_SETTINGS + ("NPKIT_MACHINE", "NPKIT_GPU_SAMPLE_RATE", "NPKIT_CPU_SAMPLE_INTERVAL",
                                   "NPKIT_SYSFS_ROOT", "NPKIT_NVML_LIBRARY", "FAKE_NVML_CONFIG",
                                   "FAKE_CUDA_BUS_IDS", "FAKE_HOSTNAME", "FAKE_RESOLVABLE",
                                   "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


def test_dir():
    return lib.need_env("NPKIT_MACHINE_TEST_DIR")


def host_shim():
    return lib.need_file(os.path.join(test_dir(), "libnpkit_host_shim.so"), "the host name shim")


def perf(name="all_reduce_perf"):
    return lib.need_file(os.path.join(lib.need_env("NPKIT_BUILD_DIR"), "tests", "callsites", "perf", name),
                         "the nccl-tests stand-in " + name)


def fake_nvml_dir():
    d = os.path.join(lib.need_env("NPKIT_FAKES_DIR"), "nvml")
    lib.need_file(os.path.join(d, "libnvidia-ml.so.1"), "the fake NVML")
    return d


def fake_driver():
    return lib.need_file(os.path.join(lib.need_env("NPKIT_FAKES_DIR"), "driver", "libcuda.so.1"),
                         "the fake CUDA driver")


# --- /sys trees ---------------------------------------------------------------------------------

def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # a reader sees the old or the new value, never a part


def ib_port(dev, port, rate, state="4: ACTIVE", phys_state="5: LinkUp", link_layer="InfiniBand"):
    return {"type": "ib", "dev": dev, "port": str(port), "rate": rate, "state": state,
            "phys_state": phys_state, "link_layer": link_layer}


def eth_port(dev, speed="100000", duplex="full", operstate="up", mtu="9000", physical=True,
             speed_unreadable=False, arp_type="1"):
    return {"type": "eth", "dev": dev, "speed": speed, "duplex": duplex, "operstate": operstate,
            "mtu": mtu, "physical": physical, "speed_unreadable": speed_unreadable, "arp_type": arp_type}


def counter_paths(root, p):
    """The two byte-counter files of a port: (tx, rx)."""
    if p["type"] == "ib":
        base = os.path.join(root, "sys/class/infiniband", p["dev"], "ports", p["port"], "counters")
        return os.path.join(base, "port_xmit_data"), os.path.join(base, "port_rcv_data")
    base = os.path.join(root, "sys/class/net", p["dev"], "statistics")
    return os.path.join(base, "tx_bytes"), os.path.join(base, "rx_bytes")


def set_counters(root, p, tx, rx):
    """Byte counts as the port's files hold them (InfiniBand: 4-byte words)."""
    t, r = counter_paths(root, p)
    div = 4 if p["type"] == "ib" else 1
    _write(t, "%d\n" % (tx // div))
    _write(r, "%d\n" % (rx // div))


def make_sysfs(root, ports):
    """A /sys tree under root with these ports (and a loopback interface and a bonding_masters
    file, which the library must leave out)."""
    for p in ports:
        if p["type"] == "ib":
            base = os.path.join(root, "sys/class/infiniband", p["dev"], "ports", p["port"])
            for k in ("rate", "state", "phys_state", "link_layer"):
                _write(os.path.join(base, k), p[k] + "\n")
        else:
            base = os.path.join(root, "sys/class/net", p["dev"])
            for k in ("duplex", "operstate", "mtu"):
                _write(os.path.join(base, k), p[k] + "\n")
            _write(os.path.join(base, "type"), p["arp_type"] + "\n")
            if p["speed_unreadable"]:
                os.makedirs(os.path.join(base, "speed"), exist_ok=True)  # read() fails: EISDIR
            else:
                _write(os.path.join(base, "speed"), p["speed"] + "\n")
            if p["physical"]:
                os.makedirs(os.path.join(base, "device"), exist_ok=True)
        set_counters(root, p, 0, 0)
    lo = os.path.join(root, "sys/class/net/lo")
    for k, v in (("type", "772"), ("operstate", "unknown"), ("mtu", "65536"), ("speed", "-1")):
        _write(os.path.join(lo, k), v + "\n")
    _write(os.path.join(root, "sys/class/net/bonding_masters"), "\n")


class CounterFeeder(threading.Thread):
    """Makes the ports' byte counters grow at given rates (bytes/s) while a job runs."""

    def __init__(self, root, ports_rates, step=0.005):
        super().__init__(daemon=True)
        self.root, self.ports_rates, self.step = root, ports_rates, step
        self.stop_event = threading.Event()

    def run(self):
        t0 = time.monotonic()
        while not self.stop_event.is_set():
            dt = time.monotonic() - t0
            for p, (tx, rx) in self.ports_rates:
                set_counters(self.root, p, int(tx * dt), int(rx * dt))
            time.sleep(self.step)

    def stop(self):
        self.stop_event.set()
        self.join()


# --- fake NVML ------------------------------------------------------------------------------------

def gpu(index, name="NVIDIA H100 80GB HBM3", bus=None, nvlinks=18, version=6, down=(), **values):
    g = {"name": name, "uuid": "GPU-%08x-1111-2222-3333-44445555%04x" % (0xfeed0000 + index, index),
         "bus_id": bus or "00000000:%02X:00.0" % (0x18 + 0x10 * index), "nvlinks": nvlinks,
         "nvlink_version": version, "down": ",".join(str(d) for d in down)}
    g.update({"sm_mhz": 1980, "mem_mhz": 2619, "util_gpu": 87, "util_mem": 45, "power_mw": 350123,
              "temp_c": 61})
    g.update(values)
    return g


def write_nvml_config(path, gpus, driver="550.54.15"):
    lines = ["driver=" + driver]
    for g in gpus:
        lines.append("gpu")
        lines += ["%s=%s" % kv for kv in g.items() if kv[1] != ""]
    _write(path, "\n".join(lines) + "\n")


# --- jobs -----------------------------------------------------------------------------------------

WRAPPER = """#!/bin/sh
# the variables (and the open-file limit) of this rank, then the program
f="%s/rank$OMPI_COMM_WORLD_RANK.env"
if [ -f "$f" ]; then set -a; . "$f"; set +a; fi
exec "$@"
"""


def run_job(tmp, np, args, settings=None, per_rank=None, preload_first=(), timeout=150):
    """Runs args on np ranks under mpirun with the library preloaded (after the host shim and
    preload_first), `settings` for every rank and per_rank[r] (a dict) for rank r, whose key
    "ulimit_n" sets the rank's soft open-file limit."""
    env_dir = os.path.join(tmp, "rank_env")
    os.makedirs(env_dir, exist_ok=True)
    for r in range(np):
        with open(os.path.join(env_dir, "rank%d.env" % r), "w") as f:
            for k, v in sorted(((per_rank or {}).get(r) or {}).items()):
                if k == "ulimit_n":  # not a variable: the rank's soft open-file limit
                    f.write("ulimit -S -n %d\n" % int(v))
                else:
                    f.write("%s=%s\n" % (k, shlex.quote(str(v))))
    wrapper = os.path.join(tmp, "rank_env.sh")
    with open(wrapper, "w") as f:
        f.write(WRAPPER % env_dir)
    os.chmod(wrapper, 0o755)
    job = lib.job_env("fake", True, settings)
    libs = job["LD_PRELOAD"].split(":")
    npkit_lib = libs.pop()  # the library itself comes last
    job["LD_PRELOAD"] = ":".join(libs + [host_shim()] + list(preload_first) + [npkit_lib])
    job["LD_LIBRARY_PATH"] = job["LD_LIBRARY_PATH"]
    env = {k: v for k, v in lib._base_env().items() if k not in SETTINGS}
    cmd = [lib.mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    for k, v in sorted(job.items()):
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd += [wrapper] + list(args)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tmp)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("timed out after %ss: %s\n%s" % (timeout, " ".join(cmd), e.stderr))
    return lib.Run(cmd, proc)


# --- the binary log -------------------------------------------------------------------------------

BLOCK_MACHINE = 9
KIND_GPU, KIND_PORT, KIND_CPU = 64, 65, 66
GPU_BODY = struct.Struct("<QQIIIIIIIIII")
PORT_BODY = struct.Struct("<QQII32s")
CPU_BODY = struct.Struct("<QQ")
COUNTER_REC = struct.Struct("<IIQQ")
MGPU = {"clocks": 1, "util": 2, "power": 4, "temp": 8, "pcie": 16, "nvlink": 32}


def blocks(path):
    """(type, count, payload bytes) of every complete block of a log, CHECK blocks left out."""
    with open(path, "rb") as f:
        data = f.read()
    h = lib.LOG_HEADER.unpack_from(data, 0)
    version, header_size = h[1], h[2]
    out, off = [], header_size
    while off + lib.BLOCK_HEADER.size <= len(data):
        magic, btype, _f, count, size = lib.BLOCK_HEADER.unpack_from(data, off)
        payload = off + lib.BLOCK_HEADER.size
        if magic != lib.BLOCK_MAGIC or payload + size > len(data):
            break
        if not (btype == lib.BLOCK_CHECK and version >= 2):
            out.append((btype, count, data[payload:payload + size]))
        off = payload + size
    return out


def machine_records(path):
    """The records of the log's MACHINE blocks: [(kind, {key: value})], values %XX-decoded."""
    recs = []
    for btype, _c, payload in blocks(path):
        if btype != BLOCK_MACHINE:
            continue
        text = payload.split(b"\0", 1)[0].decode("utf-8", "replace")
        for line in text.split("\n"):
            parts = line.split(" ")
            if not parts[0]:
                continue
            fields = {}
            for p in parts[1:]:
                k, _, v = p.partition("=")
                fields[k] = _decode(v)
            recs.append((parts[0], fields))
    return recs


def _decode(v):
    raw = re.sub(rb"%([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), v.encode())
    return raw.decode("utf-8", "replace")


def records_of(recs, kind):
    return [f for k, f in recs if k == kind]


def machine_events(path, record_size=128):
    """The sampled events: [{'kind', 'start', 'end', ...fields}] in file order."""
    evs = []
    with open(path, "rb") as f:
        version = lib.LOG_HEADER.unpack_from(f.read(lib.LOG_HEADER.size), 0)[1]
    for btype, count, payload in blocks(path):
        if btype == lib.BLOCK_EVENTS:
            records = [payload[i * record_size:(i + 1) * record_size] for i in range(count)]
        elif btype == lib.BLOCK_EVENTS_PACKED and version >= 5:  # the library's events from version 5
            records = lib.unpack_events(payload, 0, len(payload), count, record_size)
        else:
            continue
        for rec in records:
            payload, o = rec, 0
            start, end, kind, _func, thread = lib.EVENT_HEAD.unpack_from(payload, o)
            body = o + lib.EVENT_HEAD.size
            if kind == KIND_GPU:
                v = GPU_BODY.unpack_from(payload, body)
                evs.append(dict(kind="gpu", start=start, end=end, thread=thread, nvlink_tx_kib=v[0], nvlink_rx_kib=v[1],
                                gpu=v[2], valid=v[3], sm_mhz=v[4], mem_mhz=v[5], util_gpu=v[6], util_mem=v[7],
                                power_mw=v[8], temp_c=v[9], pcie_tx_kbs=v[10], pcie_rx_kbs=v[11]))
            elif kind == KIND_PORT:
                v = PORT_BODY.unpack_from(payload, body)
                evs.append(dict(kind="port", start=start, end=end, thread=thread, tx=v[0], rx=v[1], port=v[2],
                                flags=v[3], name=v[4].split(b"\0")[0].decode()))
            elif kind == KIND_CPU:
                v = CPU_BODY.unpack_from(payload, body)
                evs.append(dict(kind="cpu", start=start, end=end, thread=thread, user=v[0], system=v[1]))
    return evs


def counters(path, source=4):
    """(recorded, dropped) of the latest COUNTERS record of a source, None if none."""
    found = None
    for btype, count, payload in blocks(path):
        if btype != 5:
            continue
        for i in range(count):
            thread, src, rec, drop = COUNTER_REC.unpack_from(payload, i * COUNTER_REC.size)
            if src == source:
                found = (rec, drop)
    return found


def logs_by_rank(trace_dir):
    out = {}
    for p in lib.log_files(trace_dir):
        out[lib.LogFile(p).rank] = p
    return out
