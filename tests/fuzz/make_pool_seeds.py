"""Writes the seed pool files of fuzz_pool (include/npkit/pool_file.h, version 1) into OUT_DIR: a
small valid pool with events the log lacks (two threads, three chunks, a write that was under way
when the process died: once not in the log, once in it), the same cut short, with a bad magic, and
marked closed.  fuzz_pool ties each to a log of its own (pid, clock base, path).

Usage: make_pool_seeds.py OUT_DIR"""
import os
import struct
import sys

HEADER = 3072          # sizeof(npkit_pool_header)
CHUNK_REC = 64         # sizeof(npkit_pool_chunk)
RECORD = 128           # sizeof(npkit_event)
SLOT = 64              # a thread slot: index @0, tid @4, recorded @8, dropped @16
NO_OFFSET = 2**64 - 1


def pool(chunks, threads, chunk_events=8, state=0, magic=b"NPKPOOL1"):
    n, t = len(chunks), len(threads)
    chunks_off = HEADER
    threads_off = chunks_off + n * CHUNK_REC
    data_off = threads_off + t * SLOT
    size = data_off + n * chunk_events * RECORD
    head = struct.pack("<8s12I4Q4I2Q64s1024s", magic, 1, HEADER, RECORD, chunk_events, n, CHUNK_REC, t, SLOT,
                       0, 4, 8, 16, chunks_off, threads_off, data_off, size, state, 4242, os.geteuid(), 0,
                       1764671234567890123, 1764671234567890123, b"node1", b"")
    head += bytes(HEADER - len(head))
    recs = b"".join(struct.pack("<6I2Q24x", c["used"], 0xFFFFFFFF, c.get("finished", 0), c["written"], c["owner"],
                                c.get("write_to", 0), c.get("write_off", NO_OFFSET), c["serial"]) for c in chunks)
    slots = b"".join(struct.pack("<Ii2Q40x", i + 1, 5000 + i, rec, 0) for i, rec in enumerate(threads))
    data = bytearray()
    for ci in range(n):
        for k in range(chunk_events):
            start = 1764671234567890123 + 1000 * (ci * chunk_events + k)
            # start, end, then kind (NPKIT_EV_API), func, thread; the rest zero
            ev = struct.pack("<QQHHI", start, start + 500, 1, 1, chunks[ci]["owner"])
            data += ev + bytes(RECORD - len(ev))
    return head + recs + slots + bytes(data)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    chunks = [dict(owner=1, serial=0, used=8, written=3, finished=1),
              dict(owner=1, serial=1, used=5, written=0),
              dict(owner=2, serial=0, used=4, written=0, write_to=2, write_off=NO_OFFSET)]
    written_block = [dict(c) for c in chunks]
    written_block[2]["write_off"] = 256  # a block that starts inside the log: complete, not recovered again
    valid = pool(chunks, [16, 4])
    seeds = {"valid.pool": valid, "written_block.pool": pool(written_block, [16, 4]),
             "cut.pool": valid[:len(valid) // 2], "bad_magic.pool": pool(chunks, [16, 4], magic=b"NPKPOOLX"),
             "closed.pool": pool(chunks, [16, 4], state=1)}
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
