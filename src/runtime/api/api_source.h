/* The NCCL API wrappers as a source of the life cycle (source.h): where the real NCCL is looked
 * for (NPKIT_NCCL_LIBRARY, also when recording is disabled), where communicators are logged, which
 * per-call extras run, and the functions the loaded NCCL lacks. */
#ifndef NPKIT_API_SOURCE_H
#define NPKIT_API_SOURCE_H

#include "source.h"

extern const npkit_source_ops npkit_source_api;

/* A wrapped function the loaded NCCL lacks was called: the first such call is named at once, the
 * others are summed up in one line at the finish, so that a program probing the newest API does
 * not drown its own output. */
void npkit_api_missing(unsigned fn);

#endif
