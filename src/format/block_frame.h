/* How a block of the event log is framed on disk (include/npkit/event_log.h): its header, its
 * payload padded to 8 bytes with zeros, and from version 2 on the CHECK block that follows it with
 * the CRC32C of header and payload.  One definition for every writer of blocks: the log writer,
 * the flight recorder's dumps (also from a signal handler: nothing here locks or allocates), the
 * tests' log builder. */
#ifndef NPKIT_BLOCK_FRAME_H
#define NPKIT_BLOCK_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "crc32c.h"
#include "npkit/event_log.h"

/* The CHECK block that follows a block. */
typedef struct npkit_block_check {
  npkit_block_header bh;
  npkit_check_rec rec;
} npkit_block_check;

/* Zero bytes to pad a payload of `size` to 8. */
static inline size_t npkit_block_pad(size_t size) { return (8 - (size & 7)) & 7; }

/* The header of a block of `size` payload bytes and the CHECK block that follows it. */
static inline void npkit_block_frame(uint16_t type, uint32_t count, const void *payload, size_t size,
                                     npkit_block_header *bh, npkit_block_check *check) {
  static const uint8_t zeros[8];
  size_t pad = npkit_block_pad(size);
  *bh = (npkit_block_header){NPKIT_BLOCK_MAGIC, type, 0, count, (uint32_t)(size + pad)};
  *check = (npkit_block_check){{NPKIT_BLOCK_MAGIC, NPKIT_BLOCK_CHECK, 0, 1, sizeof(npkit_check_rec)}, {0, 0}};
  uint32_t crc = npkit_crc32c(0, bh, sizeof *bh);
  crc = npkit_crc32c(crc, payload, size);
  check->rec.crc32c = npkit_crc32c(crc, zeros, pad);
}

#endif /* NPKIT_BLOCK_FRAME_H */
