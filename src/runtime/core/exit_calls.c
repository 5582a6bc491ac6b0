/* _exit and _Exit, interposed: a process that ends through them runs no exit handler, so without
 * these the log would be left open with what the writer's last pass had appended.  They are how
 * many processes end for good: Open MPI's runtime (libopen-pal) ends every rank with _exit when
 * mpirun is gone, a child of fork ends with _exit, and applications call it from their signal
 * handlers.  Here the writer thread first finishes the log and the trace, as for a stop signal
 * (lifecycle.h, npkit_finish_before_exit_call: bounded in time, only in the log's owner), then the
 * real function ends the process with the caller's status.
 *
 * exit() reaches the real _exit inside libc without the dynamic linker, so it does not come here
 * after its exit handlers ran (and if it did, the finish would be over already). */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lifecycle.h"

typedef void (*exit_fn)(int);
static exit_fn real_exit_, real_Exit_;

/* Resolved at load time: looking a symbol up in a child of fork, or in a signal handler, could
 * wait for a lock of the dynamic linker that another thread held. */
__attribute__((constructor)) static void npkit_exit_calls_resolve(void) {
  real_exit_ = (exit_fn)dlsym(RTLD_NEXT, "_exit");
  real_Exit_ = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
}

static _Noreturn void end_process(exit_fn real, int status) {
  if (real != NULL) real(status);
  for (;;) syscall(SYS_exit_group, status); /* what the real one does, if it could not be found */
}

__attribute__((visibility("default"))) void _exit(int status) {
  npkit_finish_before_exit_call();
  end_process(real_exit_, status);
}

__attribute__((visibility("default"))) void _Exit(int status) {
  npkit_finish_before_exit_call();
  end_process(real_Exit_ != NULL ? real_Exit_ : real_exit_, status);
}
