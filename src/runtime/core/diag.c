#include "diag.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int diag_level = NPKIT_LEVEL_INFO;
static _Atomic int diag_quiet = 0;

void npkit_diag_set_level(npkit_level level, int quiet) {
  atomic_store(&diag_level, (int)level);
  atomic_store(&diag_quiet, quiet != 0);
}

int npkit_diag_enabled(npkit_level level) {
  if (level >= NPKIT_LEVEL_INFO && atomic_load(&diag_quiet)) return 0;
  return (int)level <= atomic_load(&diag_level);
}

/* SIGPIPE's default action ends the process: a message of the library must not end the job, the
 * less so in the middle of its finish (the ranks of `timeout mpirun` outlive mpirun and the pipe
 * their stderr goes to).  The signal is blocked in this thread for the write (it is sent to the
 * writing thread) and, when this write raised it, taken back before it is unblocked. */
void npkit_diag_write(const char *buf, size_t len) {
  int saved_errno = errno;
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  int blocked = pthread_sigmask(SIG_BLOCK, &pipe_only, &old) == 0;
  int was_pending = blocked && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  ssize_t w = write(STDERR_FILENO, buf, len);
  if (blocked) {
    if (w < 0 && errno == EPIPE && !was_pending) {
      struct timespec now = {0, 0};
      while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  errno = saved_errno;
}

static void vdiag(npkit_level level, const char *word, const char *fmt, va_list ap) {
  if (!npkit_diag_enabled(level)) return;
  int saved_errno = errno; /* never disturb the host job's errno */
  char line[1024];
  int n = snprintf(line, sizeof line, "npkit: %s", word);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  npkit_diag_write(line, len);
  errno = saved_errno;
}

void npkit_diag(npkit_level level, const char *fmt, ...) {
  static const char *const prefix[] = {"", "error: ", "warning: ", "", "debug: "};
  va_list ap;
  va_start(ap, fmt);
  vdiag(level, prefix[level], fmt, ap);
  va_end(ap);
}

void npkit_diag_as(npkit_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vdiag(level, "", fmt, ap);
  va_end(ap);
}
