/* Call stacks of wrapped NCCL calls (NPKIT_STACK_DEPTH).
 *
 * Per recorded call: libunwind's unw_backtrace (its fast path walks cached frame descriptions)
 * into a small array on the stack, the frames of this library dropped, a hash of the remaining
 * instruction pointers, and a lock-free lookup in a global table of distinct stacks whose entry
 * number becomes the event's stack_id.  Only the first call from a new call site takes a mutex to
 * add it.  Nothing is symbolised while the job runs: at exit every distinct address is resolved
 * once (stack_symbols.h) and the table is written as STRING and STACK blocks.
 *
 * libunwind (libunwind.so.8) is loaded with dlopen, so the library has no link dependency on it;
 * where it is missing, stacks stay off after one warning. */
#ifndef NPKIT_STACK_CAPTURE_H
#define NPKIT_STACK_CAPTURE_H

#include <stdint.h>

#include "source.h"

/* Distinct call sites kept; calls from further sites get stack_id 0 (one warning says so). */
#define NPKIT_STACK_MAX_SITES 4096

/* Frames kept per stack, 0 when stacks are off (the setting, or libunwind is missing). */
extern uint32_t npkit_stack_depth;

/* The source's entry in the life cycle's table: attaching loads libunwind and sets up the table
 * for NPKIT_STACK_DEPTH frames (a warning when it cannot); detaching, at exit, symbolises the stacks
 * seen and appends them to the log (STRING blocks for the frames, one STACK block; file:line
 * through addr2line with NPKIT_STACK_LINES). */
extern const npkit_source_ops npkit_source_stacks;

/* The caller's call site: the id of its stack in the table, 0 if it cannot be recorded.  Must be
 * called from code of this library that a wrapped NCCL function runs: frames up to and including
 * the last one inside this library are not part of the stack. */
uint64_t npkit_stack_capture(void);

#endif
