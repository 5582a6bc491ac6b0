#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

static const int handled[] = {SIGTERM, SIGINT};
#define N_HANDLED (sizeof handled / sizeof handled[0])
static struct sigaction previous[N_HANDLED];
static _Atomic int installed[N_HANDLED];
static int (*request_fn)(void);

/* 0: no stop signal yet; 1: one arrived and a finisher will deliver them again; 2: delivered
 * again (or nobody could finish): stop signals take effect at once. */
static _Atomic int phase;
/* Per stop signal: held back (1), and the siginfo of its first arrival (ready once info_state is 2). */
static _Atomic int held[N_HANDLED];
static _Atomic int info_state[N_HANDLED];
static siginfo_t held_info[N_HANDLED];

static int index_of(int sig) {
  for (int i = 0; i < (int)N_HANDLED; i++)
    if (handled[i] == sig) return i;
  return -1;
}

void npkit_signals_call_old(const struct sigaction *old, int sig, siginfo_t *info, void *uc) {
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction != NULL) old->sa_sigaction(sig, info, uc);
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
  }
}

/* The signal's effect, from inside the handler: the application's handler, or the default action
 * (restored, then raised: the signal is blocked inside this handler, so it is delivered with the
 * default action as soon as the handler returns). */
static void chain(int idx, int sig, siginfo_t *info, void *uc) {
  const struct sigaction *old = &previous[idx];
  if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    return;
  }
  npkit_signals_call_old(old, sig, info, uc);
}

int npkit_signals_held(void) {
  for (size_t i = 0; i < N_HANDLED; i++)
    if (atomic_load(&held[i])) return handled[i];
  return 0;
}

/* Takes back a held signal to deliver it here; 1 when this caller owns it. */
static int take_back(int idx) { return atomic_exchange(&held[idx], 0) != 0; }

static void on_signal(int sig, siginfo_t *info, void *uc) {
  int saved_errno = errno;
  int idx = index_of(sig);
  if (idx < 0) return;
  int expected = 0;
  if (info != NULL && atomic_compare_exchange_strong(&info_state[idx], &expected, 1)) {
    held_info[idx] = *info;
    atomic_store(&info_state[idx], 2);
  }
  atomic_store(&held[idx], 1);
  expected = 0;
  if (atomic_compare_exchange_strong(&phase, &expected, 1)) {
    if (request_fn == NULL || request_fn() != 0) {
      atomic_store(&phase, 2); /* nobody can finish the trace: no signal is held back */
      if (take_back(idx)) chain(idx, sig, info, uc);
    }
  } else if (expected == 2 && take_back(idx)) {
    /* delivered again already (or while we got here): this one takes effect now */
    chain(idx, sig, info, uc);
  }
  errno = saved_errno;
}

void npkit_signals_install(int (*request)(void)) {
  request_fn = request;
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
    if (sigaction(handled[i], &sa, NULL) == 0) atomic_store(&installed[i], 1);
  }
}

void npkit_signals_mask_thread(void) {
  sigset_t set;
  sigfillset(&set);
  /* Only where the handler is ours (not ignored by the job, NPKIT_SIGNALS on): the job's own
   * handlers never run on our threads. */
  for (size_t i = 0; i < N_HANDLED; i++)
    if (atomic_load(&installed[i])) sigdelset(&set, handled[i]);
  pthread_sigmask(SIG_SETMASK, &set, NULL);
}

/* Sends the held signal to the process again, with the siginfo it came with where the kernel lets
 * a process queue it to itself (only its main thread may claim SI_USER), else marked SI_QUEUE with
 * the sender's pid and uid kept, else as a plain kill(). */
static void send_again(int idx) {
  int sig = handled[idx];
  if (atomic_load(&info_state[idx]) == 2) {
    siginfo_t info = held_info[idx];
    if (syscall(SYS_rt_sigqueueinfo, getpid(), sig, &info) == 0) return;
    info.si_code = SI_QUEUE;
    if (syscall(SYS_rt_sigqueueinfo, getpid(), sig, &info) == 0) return;
  }
  kill(getpid(), sig);
}

static sem_t deadline_sem;
static unsigned deadline_ms;
static _Atomic int deadline_started;

void npkit_signals_redeliver(void) {
  if (atomic_exchange(&phase, 2) == 2) return;
  if (atomic_load(&deadline_started)) sem_post(&deadline_sem); /* the watchdog can go */
  for (size_t i = 0; i < N_HANDLED; i++) {
    if (!atomic_load(&installed[i])) continue;
    struct sigaction cur;
    /* the application's own handler, or the default action, takes over again, unless the
     * application replaced ours meanwhile */
    if (sigaction(handled[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)
      sigaction(handled[i], &previous[i], NULL);
  }
  for (size_t i = 0; i < N_HANDLED; i++)
    if (take_back((int)i)) send_again((int)i);
}

/* ---- the watchdog ---- */

static void *deadline_main(void *arg) {
  (void)arg;
  npkit_own_thread_mark();
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long ns = (unsigned long long)ts.tv_nsec + (unsigned long long)deadline_ms * 1000000ull;
  ts.tv_sec += (time_t)(ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  while (sem_timedwait(&deadline_sem, &ts) != 0 && errno == EINTR) {
  }
  npkit_signals_redeliver(); /* at the deadline: whatever the finish is doing */
  return NULL;
}

void npkit_signals_deadline(unsigned timeout_ms) {
  if (atomic_load(&deadline_started)) return;
  deadline_ms = timeout_ms;
  sem_init(&deadline_sem, 0, 0);
  atomic_store(&deadline_started, 1);
  pthread_attr_t a;
  pthread_t t;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 << 10);
  if (pthread_create(&t, &a, deadline_main, NULL) == 0) pthread_setname_np(t, "npkit-deadline");
  pthread_attr_destroy(&a);
}
