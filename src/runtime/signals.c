#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "recorder.h"

/* Long enough to render a large trace, short enough to stay inside mpirun's grace period before
 * it escalates to SIGKILL (the binary log is safe on disk in any case). */
#define FINISH_TIMEOUT_MS 20000u

static const int handled[] = {SIGTERM, SIGINT};
#define N_HANDLED (sizeof handled / sizeof handled[0])
static struct sigaction previous[N_HANDLED];
static void (*finish_fn)(void);
static _Atomic int finishing;

static void chain(int idx, int sig, siginfo_t *info, void *uc) {
  const struct sigaction *old = &previous[idx];
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction != NULL) old->sa_sigaction(sig, info, uc);
    return;
  }
  if (old->sa_handler == SIG_IGN) return;
  if (old->sa_handler == SIG_DFL) {
    /* Default action (terminate): restore it and re-raise; the signal is blocked inside this
     * handler, so it is delivered with the default action as soon as the handler returns. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    return;
  }
  old->sa_handler(sig);
}

static void on_signal(int sig, siginfo_t *info, void *uc) {
  int saved_errno = errno;
  int idx = 0;
  while (idx < (int)N_HANDLED - 1 && handled[idx] != sig) idx++;
  if (!atomic_exchange(&finishing, 1) && !npkit_recorder_on_writer())
    npkit_recorder_request(finish_fn, FINISH_TIMEOUT_MS);
  errno = saved_errno;
  chain(idx, sig, info, uc);
}

void npkit_signals_install(void (*finish)(void)) {
  finish_fn = finish;
  for (size_t i = 0; i < N_HANDLED; i++) {
    struct sigaction old;
    if (sigaction(handled[i], NULL, &old) != 0) continue;
    /* A job that ignores the signal keeps ignoring it. */
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    previous[i] = old;
    sigaction(handled[i], &sa, NULL);
  }
}
