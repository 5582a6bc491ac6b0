#include "nccl_names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct fn_info {
  const char *name;       /* with the "nccl" prefix */
  npkit_fn_class cls;
  int since;
  char ret; /* the Ret column of nccl_api.def; 'V' for void */
  char root; /* the Root column */
} fn_info;

static const fn_info fn_table[NPKIT_FN_COUNT] = {
  [NPKIT_FN_NONE] = {"ncclUnknown", NPKIT_CLASS_misc, 0, 'R', 0},
#define NPKIT_NCCL_API(name, cls, since, root, ret, params, args, describe, after) \
  [NPKIT_FN_##name] = {"nccl" #name, NPKIT_CLASS_##cls, since, #ret[0], root},
#define NPKIT_NCCL_API_VOID(name, cls, since, root, params, args) \
  [NPKIT_FN_##name] = {"nccl" #name, NPKIT_CLASS_##cls, since, 'V', root},
#include "nccl_api.def"
#undef NPKIT_NCCL_API
#undef NPKIT_NCCL_API_VOID
};

static const char *const class_names[NPKIT_CLASS_COUNT] = {"coll", "p2p", "group", "comm",
                                                           "mem", "query", "misc"};

const char *npkit_fn_name(unsigned fn) {
  return fn < NPKIT_FN_COUNT ? fn_table[fn].name : fn_table[0].name;
}

const char *npkit_fn_short_name(unsigned fn) { return npkit_fn_name(fn) + 4; }

npkit_fn_class npkit_fn_class_of(unsigned fn) {
  return fn < NPKIT_FN_COUNT ? fn_table[fn].cls : NPKIT_CLASS_misc;
}

int npkit_fn_since(unsigned fn) { return fn < NPKIT_FN_COUNT ? fn_table[fn].since : 0; }

int npkit_fn_has_root(unsigned fn) { return fn < NPKIT_FN_COUNT && fn_table[fn].root; }

int npkit_fn_returns_result(unsigned fn) { return fn >= NPKIT_FN_COUNT || fn_table[fn].ret == 'R'; }

npkit_fn npkit_fn_from_name(const char *name) {
  if (name == NULL) return NPKIT_FN_NONE;
  if (strncasecmp(name, "nccl", 4) == 0 && name[4] != '\0') name += 4;
  for (unsigned i = 1; i < NPKIT_FN_COUNT; i++)
    if (strcasecmp(name, fn_table[i].name + 4) == 0) return (npkit_fn)i;
  return NPKIT_FN_NONE;
}

const char *npkit_class_name(int cls) {
  return cls >= 0 && cls < NPKIT_CLASS_COUNT ? class_names[cls] : "unknown";
}

int npkit_class_from_name(const char *name) {
  for (int i = 0; i < NPKIT_CLASS_COUNT; i++)
    if (name != NULL && strcasecmp(name, class_names[i]) == 0) return i;
  return -1;
}

/* ncclDataType_t values are fixed by NCCL's ABI (nccl.h). */
static const struct {
  const char *name;
  size_t size;
} datatypes[] = {
  {"int8", 1},     {"uint8", 1},   {"int32", 4},   {"uint32", 4},
  {"int64", 8},    {"uint64", 8},  {"float16", 2}, {"float32", 4},
  {"float64", 8},  {"bfloat16", 2}, {"float8e4m3", 1}, {"float8e5m2", 1},
};
#define N_DATATYPES ((int)(sizeof(datatypes) / sizeof(datatypes[0])))

const char *npkit_datatype_name(int datatype) {
  if (datatype < 0) return "none";
  return datatype < N_DATATYPES ? datatypes[datatype].name : "unknown";
}

size_t npkit_datatype_size(int datatype) {
  return datatype >= 0 && datatype < N_DATATYPES ? datatypes[datatype].size : 0;
}

const char *npkit_redop_name(int redop) {
  static const char *const ops[] = {"sum", "prod", "max", "min", "avg"};
  if (redop < 0) return "none";
  return redop < 5 ? ops[redop] : "premulsum";
}

const char *npkit_result_name(int result) {
  static const char *const names[] = {"ncclSuccess",       "ncclUnhandledCudaError",
                                      "ncclSystemError",   "ncclInternalError",
                                      "ncclInvalidArgument", "ncclInvalidUsage",
                                      "ncclRemoteError",   "ncclInProgress",
                                      "ncclTimeout" /* 2.30.3 */};
  return result >= 0 && result < 9 ? names[result] : "ncclUnknownResult";
}

static int scales_with_nranks(unsigned fn) {
  return fn == NPKIT_FN_AllGather || fn == NPKIT_FN_ReduceScatter || fn == NPKIT_FN_AlltoAll ||
         fn == NPKIT_FN_Gather || fn == NPKIT_FN_Scatter;
}

npkit_fn npkit_fn_config_variant(unsigned fn) {
  switch (fn) {
  case NPKIT_FN_AllReduce: return NPKIT_FN_AllReduceConfig;
  case NPKIT_FN_Broadcast: return NPKIT_FN_BroadcastConfig;
  case NPKIT_FN_Reduce: return NPKIT_FN_ReduceConfig;
  case NPKIT_FN_AllGather: return NPKIT_FN_AllGatherConfig;
  case NPKIT_FN_ReduceScatter: return NPKIT_FN_ReduceScatterConfig;
  case NPKIT_FN_AlltoAll: return NPKIT_FN_AlltoAllConfig;
  case NPKIT_FN_Gather: return NPKIT_FN_GatherConfig;
  case NPKIT_FN_Scatter: return NPKIT_FN_ScatterConfig;
  default: return NPKIT_FN_NONE;
  }
}

void npkit_nccl_release_string(int code, char *buf, size_t len) {
  if (code <= 0)
    snprintf(buf, len, "unknown");
  else if (code >= 10000)
    snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
  else
    snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
}

int npkit_fn_moves_data(unsigned fn) {
  npkit_fn_class c = npkit_fn_class_of(fn);
  return fn != NPKIT_FN_NONE && (c == NPKIT_CLASS_coll || c == NPKIT_CLASS_p2p);
}

uint64_t npkit_message_bytes(unsigned fn, uint64_t count, int datatype, int nranks) {
  if (!npkit_fn_moves_data(fn)) return 0;
  uint64_t s = count * (uint64_t)npkit_datatype_size(datatype);
  if (scales_with_nranks(fn)) s *= (uint64_t)(nranks > 0 ? nranks : 0);
  return s;
}

double npkit_busbw_factor(unsigned fn, int nranks) {
  if (!npkit_fn_moves_data(fn) || nranks <= 0) return 0.0;
  double n = (double)nranks;
  if (fn == NPKIT_FN_AllReduce) return 2.0 * (n - 1.0) / n;
  if (scales_with_nranks(fn)) return (n - 1.0) / n;
  return 1.0;
}
