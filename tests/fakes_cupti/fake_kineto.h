/* The fake CUPTI client of the tests: what PyTorch's profiler (Kineto, linked into libtorch_cpu.so)
 * does with CUPTI, one step at a time, so that a test job can play each of Kineto's behaviours at
 * the moment it chooses.  Built twice from fake_kineto.c: as tests/fakes/torch/libtorch_cpu.so
 * (a process that has PyTorch) and as tests/fakes/client/libcupti_client.so (another program's
 * own CUPTI code).  Both link the fake libcupti.so.13, so loading one loads CUPTI, as
 * libtorch_cpu.so does.  Test code finds the steps with dlsym in the library it loaded. */
#ifndef NPKIT_FAKE_KINETO_H
#define NPKIT_FAKE_KINETO_H

#include <stdint.h>

/* Each returns the CUptiResult of the CUPTI call that failed, 0 when all succeeded. */
typedef int (*npkit_fake_kineto_step_fn)(void);
/* cuptiSubscribe (Kineto before 2026-08: libkineto_init, when the profiler is first used).  After
 * it failed, the other steps do nothing and return its error (Kineto traces the CPU only). */
#define NPKIT_FAKE_KINETO_SUBSCRIBE "npkitFakeKinetoSubscribe"
/* A timestamp callback returning time-stamp-counter ticks (every trace start). */
#define NPKIT_FAKE_KINETO_CLOCK "npkitFakeKinetoTimestampSource"
/* Its own buffer callbacks and the activity kinds of a trace (every trace start). */
#define NPKIT_FAKE_KINETO_ENABLE "npkitFakeKinetoEnableActivities"

/* The trace stops: kinds disabled, forced flush.  Returns the kernel records its own buffers
 * received over its whole life; *foreign: buffers of another client handed to its completion
 * callback (Kineto drops them). */
typedef uint64_t (*npkit_fake_kineto_stop_fn)(uint64_t *foreign);
#define NPKIT_FAKE_KINETO_STOP "npkitFakeKinetoStop"

#endif
