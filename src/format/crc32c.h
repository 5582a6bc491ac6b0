/*
 * CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected: 0x82F63B78), the checksum of the event
 * log's blocks.  The CPU's crc32 instruction (SSE4.2 on x86-64) is used where the CPU has it,
 * chosen at run time; elsewhere a table-driven version (slicing by 8) gives the same values.
 * Conventions as in iSCSI and ext4: initial value 0, the register inverted before and after, so
 * npkit_crc32c(0, "123456789", 9) == 0xE3069283 and a running checksum is continued by passing the
 * previous result.
 */
#ifndef NPKIT_CRC32C_H
#define NPKIT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The checksum of n bytes at p, continuing crc (0 to start).  Thread safe. */
uint32_t npkit_crc32c(uint32_t crc, const void *p, size_t n);

/* The two implementations, for tests and the benchmark: the table one always works; the
 * instruction one returns crc unchanged when the CPU lacks it (see npkit_crc32c_hw_available). */
uint32_t npkit_crc32c_table(uint32_t crc, const void *p, size_t n);
uint32_t npkit_crc32c_hw(uint32_t crc, const void *p, size_t n);
int npkit_crc32c_hw_available(void);

#endif /* NPKIT_CRC32C_H */
