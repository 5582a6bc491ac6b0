/* Kernel names as people read them: demangled, parameter list and return type cut
 * ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "at::native::vectorized_elementwise_kernel<...>"),
 * stored once each in the log's string table. */
#ifndef NPKIT_CUPTI_NAMES_H
#define NPKIT_CUPTI_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "log_writer.h"

/* Longest name stored; longer ones (deep C++ templates) are cut and end in "...". */
#define NPKIT_KERNEL_NAME_MAX 1024

/* Writes the readable form of a CUPTI kernel name (mangled or not) into out (NUL terminated) and
 * returns its length.  Uses the C++ runtime's demangler when the process has one loaded, and a
 * small built-in one otherwise (names and templates, as "<...>"). */
size_t npkit_kernel_readable(const char *raw, char *out, size_t outlen);

/* The built-in demangler alone: the entity's name of an Itanium-mangled name, template
 * arguments shown as "<...>".  Returns its length, or -1 (out holds "") when raw is not mangled or
 * not understood. */
int npkit_kernel_demangle_builtin(const char *raw, char *out, size_t outlen);

/* The string id of a kernel name; a new name is written to `log` as a STRING block first.  CUPTI's
 * name pointers live as long as the process, so they key the cache.  One thread at a time.  0 when
 * raw is NULL or memory is short. */
uint32_t npkit_kernel_name_id(const char *raw, npkit_log_writer *log);

/* Distinct names stored so far. */
uint32_t npkit_kernel_names_count(void);

#endif
