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

#include "log_writer.h"

/* Distinct call sites kept; calls from further sites get stack_id 0 (one warning says so). */
#define NPKIT_STACK_MAX_SITES 4096

/* Frames kept per stack, 0 when stacks are off (the setting, or libunwind is missing). */
extern uint32_t npkit_stack_depth;

/* Loads libunwind and sets up the table for `depth` frames (0: stays off).  Returns 0, or -1 after
 * a warning when stacks cannot be recorded. */
int npkit_stacks_start(uint32_t depth);

/* The caller's call site: the id of its stack in the table, 0 if it cannot be recorded.  Must be
 * called from code of this library that a wrapped NCCL function runs: frames up to and including
 * the last one inside this library are not part of the stack. */
uint64_t npkit_stack_capture(void);

/* Symbolises the stacks seen so far and appends them to the log (STRING blocks for the frames,
 * one STACK block).  `lines`: file:line through addr2line as well.  Called once at exit. */
void npkit_stacks_finish(npkit_log_writer *log, int lines);

#endif
