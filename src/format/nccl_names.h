/* Names and sizes of NCCL's API, types and operators, generated from nccl_api.def.  Shared by the
 * preloaded library and the npkit tool; needs no NCCL header. */
#ifndef NPKIT_NCCL_NAMES_H
#define NPKIT_NCCL_NAMES_H

#include <stddef.h>
#include <stdint.h>

typedef enum npkit_fn {
  NPKIT_FN_NONE = 0,
#define NPKIT_NCCL_API(name, cls, since, root, ret, params, args, describe, after) NPKIT_FN_##name,
#define NPKIT_NCCL_API_VOID(name, cls, since, root, params, args) NPKIT_FN_##name,
#include "nccl_api.def"
#undef NPKIT_NCCL_API
#undef NPKIT_NCCL_API_VOID
  NPKIT_FN_COUNT
} npkit_fn;

typedef enum npkit_fn_class {
  NPKIT_CLASS_coll = 0,
  NPKIT_CLASS_p2p,
  NPKIT_CLASS_group,
  NPKIT_CLASS_comm,
  NPKIT_CLASS_mem,
  NPKIT_CLASS_query,
  NPKIT_CLASS_misc,
  NPKIT_CLASS_COUNT
} npkit_fn_class;

/* "ncclAllReduce"; "ncclUnknown" for an id this build does not know. */
const char *npkit_fn_name(unsigned fn);
/* "AllReduce" (no prefix). */
const char *npkit_fn_short_name(unsigned fn);
npkit_fn_class npkit_fn_class_of(unsigned fn);
/* NCCL_VERSION_CODE of the first NCCL that has the function. */
int npkit_fn_since(unsigned fn);
/* 1 when the call takes a root rank (the Root column of nccl_api.def; the event's peer holds it). */
int npkit_fn_has_root(unsigned fn);
/* 1 when the function returns an ncclResult_t (not a string, an int, a team or nothing). */
int npkit_fn_returns_result(unsigned fn);
/* Accepts "AllReduce", "ncclAllReduce", any case; NPKIT_FN_NONE if unknown. */
npkit_fn npkit_fn_from_name(const char *name);
/* "coll", "p2p", ...; and the reverse (-1 if unknown). */
const char *npkit_class_name(int cls);
int npkit_class_from_name(const char *name);

/* ncclDataType_t helpers: "float32", size in bytes (0 if unknown). */
const char *npkit_datatype_name(int datatype);
size_t npkit_datatype_size(int datatype);
/* ncclRedOp_t: "sum", ..., "premulsum" for user-created operators. */
const char *npkit_redop_name(int redop);
/* ncclResult_t: "ncclSuccess", ... */
const char *npkit_result_name(int result);

/* Message size S as nccl-tests defines it (see docs/metrics): count × typesize, times nranks for
 * AllGather, ReduceScatter, AlltoAll, Gather and Scatter.  0 for non-data calls. */
uint64_t npkit_message_bytes(unsigned fn, uint64_t count, int datatype, int nranks);
/* busbw = algbw × factor; 0 for non-data calls. */
double npkit_busbw_factor(unsigned fn, int nranks);
/* The nccl*Config variant (NCCL 2.31+) of a collective, NPKIT_FN_NONE if it has none. */
npkit_fn npkit_fn_config_variant(unsigned fn);
/* NCCL_VERSION_CODE as a release: "2.29.2" (codes before 2.9 have one digit less); "unknown". */
void npkit_nccl_release_string(int code, char *buf, size_t len);
/* 1 for the functions that move data (collectives and send/recv). */
int npkit_fn_moves_data(unsigned fn);

#endif
