/* Names of NCCL's enums and strings, as the profiler ABI passes them. */
#ifndef NPKIT_PLUGIN_NAMES_H
#define NPKIT_PLUGIN_NAMES_H

/* v1 passes numbers: ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_* of 2.23.  NULL if out of range. */
const char *npkit_plugin_v1_func_name(unsigned func);
const char *npkit_plugin_v1_algo_name(unsigned algo);
const char *npkit_plugin_v1_proto_name(unsigned proto);
/* "ncclFloat32" -> ncclFloat32; -1 for NULL or an unknown name. */
int npkit_plugin_datatype_from_name(const char *name);
/* "AllReduce" -> NPKIT_FN_AllReduce; NPKIT_FN_NONE for NULL or a name without an API function. */
int npkit_plugin_fn_from_name(const char *name);

#endif
