/*
 * Packed events: the payload of NPKIT_BLOCK_EVENTS_PACKED (event-log version 5), the same events
 * as an EVENTS block in a tenth of the bytes or less.
 *
 * Why: the writer thread's cost per event was the bytes it moved (the kernel's copy into the page
 * cache, the block's CRC32C, ext4's allocation of the pages), and the events of one thread are
 * nearly alike: the same communicator, size and stream call after call, a time a little later, a
 * sequence number one higher.  So each event is stored as its difference from the previous event
 * of the same kind in the block.
 *
 * The encoding (docs/trace-format.md has the same with an example).  An event of record_size
 * bytes is W = record_size / 8 little-endian 64-bit words w[0..W-1]; w[0] is start_ns, w[1]
 * end_ns, the low 16 bits of w[2] the kind.  Before the differences, w[1] becomes w[1] - w[0]
 * (the duration: it changes less from call to call than the end does).  Each event is then
 *   kind          LEB128 varint (at most 0xffff), which must equal the low 16 bits of w[2];
 *   mask          ceil(W / 8) bytes, bit i (byte i / 8, bit i % 8) set when word i differs from
 *                 word i of the previous event of the same lane; bits past W are 0;
 *   differences   for each set bit, in order: zigzag(word - previous word) (modulo 2^64, then
 *                 (d << 1) ^ (d >> 63) arithmetically) as a LEB128 varint of at most 10 bytes.
 * The lane of an event is kind % 64 (NPKIT_PACK_LANES).  At the start of every block each lane's
 * previous event is all zeros, so that a block decodes on its own (a reader that skips a corrupt
 * block goes on with the next).  The count of the block header is the number of events; after
 * the last one, fewer than 8 zero bytes pad the payload to a multiple of 8.
 */
#ifndef NPKIT_EVENT_PACK_H
#define NPKIT_EVENT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

#define NPKIT_PACK_LANES 64u
#define NPKIT_PACK_WORDS (sizeof(npkit_event) / 8)
/* The most bytes one npkit_event takes packed: a 3-byte kind, the mask, 10 bytes per word. */
#define NPKIT_PACK_EVENT_MAX (3 + (NPKIT_PACK_WORDS + 7) / 8 + 10 * NPKIT_PACK_WORDS)

/* The encoder's state: the previous event of every lane (8 KiB). */
typedef struct npkit_packer {
  uint64_t seen; /* lanes used in the current block */
  uint64_t prev[NPKIT_PACK_LANES][NPKIT_PACK_WORDS];
} npkit_packer;

/* Packs n events as the whole payload of one block into out, which has room for
 * n * NPKIT_PACK_EVENT_MAX bytes.  Returns the bytes written, the padding not included. */
size_t npkit_pack_events(npkit_packer *p, const npkit_event *ev, size_t n, unsigned char *out);

/* The decoder: one block's payload, events of `words` words (the log's record_size / 8). */
typedef struct npkit_unpacker {
  const unsigned char *p, *end;
  uint32_t left;    /* events not yet decoded */
  uint32_t words;
  uint64_t seen;
  uint64_t *lanes;  /* NPKIT_PACK_LANES * words, the caller's */
} npkit_unpacker;

void npkit_unpack_begin(npkit_unpacker *u, const void *payload, size_t size, uint32_t count, uint32_t words,
                        uint64_t *lanes);
/* The next event into out (`words` words): 1, 0 after the last, -1 when the payload is corrupt. */
int npkit_unpack_next(npkit_unpacker *u, uint64_t *out);
/* Whether a payload decodes into exactly `count` events followed by its padding: NULL, or why
 * not.  `lanes` and `out` are scratch (NPKIT_PACK_LANES * words, and words). */
const char *npkit_unpack_check(const void *payload, size_t size, uint32_t count, uint32_t words, uint64_t *lanes,
                               uint64_t *out);
/* The same, and the span of the block's events: the earliest start and the latest end (or start)
 * of them (UINT64_MAX and 0 for none). */
const char *npkit_unpack_check_span(const void *payload, size_t size, uint32_t count, uint32_t words, uint64_t *lanes,
                                    uint64_t *out, uint64_t *first_ns, uint64_t *last_ns);
/* The fewest bytes an event of `words` words takes packed (a reader's plausibility check). */
static inline uint64_t npkit_pack_min_bytes(uint32_t words) { return 1 + (words + 7) / 8; }

#endif /* NPKIT_EVENT_PACK_H */
