/* Other CUPTI clients the process holds that npkit gives way to.
 *
 * CUPTI has one subscriber at a time (cupti_result.h of CUDA 13, lines 277-282:
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), and its activity buffers, kinds and clock are
 * process-wide.  PyTorch's profiler (Kineto) is linked into libtorch_cpu.so (statically:
 * pytorch/pytorch#49897; libkineto.so where built shared) and takes CUPTI when torch.profiler
 * starts: with npkit subscribed, Kineto's own cuptiSubscribe fails and torch.profiler silently
 * has no CUDA activity (pytorch/kineto libkineto/src/init.cpp libkineto_init, before commit
 * 7a3ba363), or it replaces npkit's buffer callbacks and disables its kinds when the trace stops
 * (CuptiActivityApi.cpp enableCuptiActivities / disableCuptiActivities).  A process that uses
 * PyTorch has libtorch_cpu.so loaded before it initialises CUDA or NCCL (`import torch`). */
#ifndef NPKIT_CUPTI_PEERS_H
#define NPKIT_CUPTI_PEERS_H

#include <stddef.h>

/* The file name of a loaded library that carries PyTorch's profiler (libtorch_cpu.so,
 * libkineto.so) into `name`; 0 when there is none. */
int npkit_cupti_peer_loaded(char *name, size_t len);

#endif
