/* A strict JSON validator (RFC 8259 plus UTF-8 validity) used as the oracle of the fuzz targets:
 * whatever the log holds, the rendered trace must parse. */
#ifndef NPKIT_FUZZ_JSON_CHECK_H
#define NPKIT_FUZZ_JSON_CHECK_H

#include <stddef.h>

/* 0 if text[0..n) is exactly one JSON value (with optional surrounding whitespace); otherwise the
 * offset of the first error + 1. */
size_t npkit_json_check(const char *text, size_t n);

#endif
