/* Self-registration: when they are unset, the library points CUDA_INJECTION64_PATH
 * (cupti/cupti_injection.c) and NCCL_PROFILER_PLUGIN (plugin/plugin_register.c) at itself, in
 * constructors, through the checks of self_register.c,
 * so that LD_PRELOAD alone enables every source.
 *
 * A value in NCCL's own configuration files (nccl_conf.h) counts as set: NCCL applies those files
 * when it starts, but only to variables that are still unset, so a value the library set first
 * would silently replace the site's choice.  Such a value is left alone and said once recording
 * has started (constructors run in every process, launchers and shells too, and say nothing). */
#ifndef NPKIT_SELF_REGISTER_H
#define NPKIT_SELF_REGISTER_H

#include <stddef.h>

/* 1 when the setting `name` is a boolean (npkit_config_parse_bool) equal to `value`. */
int npkit_self_register_setting_is(const char *name, int value);

/* 1 when `var` (NCCL_PROFILER_PLUGIN or CUDA_INJECTION64_PATH) is neither in the environment nor
 * set by NCCL's configuration files, so the library may set it.  NCCL's files are read once, at
 * the first call. */
int npkit_self_register_may_set(const char *var);

/* 1 when the library set `var` (npkit_self_register_may_set allowed it here, or the value names
 * this library: set by the library in a parent process, such as a wrapper script). */
int npkit_self_register_did_set(const char *var);

/* The note about the i-th variable (from 0) when it was left alone because NCCL's files set it:
 * its npkit_level with the text in buf; 0 when there is none for i, -1 past the last variable. */
int npkit_self_register_note(int i, char *buf, size_t len);

#endif
