/* A strict checker of the Perfetto traces npkit writes, the oracle of the fuzz targets: the bytes
 * are `Trace { repeated TracePacket packet = 1 }` in the protobuf wire format, every field is one
 * of Perfetto's schema that npkit writes (tests/integration/perfetto_subset.proto: its number, its
 * wire type, its message), and every string is valid UTF-8. */
#ifndef NPKIT_FUZZ_PROTO_CHECK_H
#define NPKIT_FUZZ_PROTO_CHECK_H

#include <stddef.h>

/* 0 if data[0..n) is such a trace; otherwise the offset of the first error + 1. */
size_t npkit_perfetto_check(const unsigned char *data, size_t n);

#endif
