#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "state.h"
#include "diag.h"
#include "inflight_text.h"
#include "signals.h"

#define ITEMS 4096u

static uint64_t timeout;
static npkit_flight_collect_fn collect;
static npkit_event items[ITEMS]; /* the thread's */
static uint64_t named_key;       /* the stuck operation named last, 0 after things moved */
static pthread_t thread;
static sem_t stop_sem;
static _Atomic int running;

/* Of the items of one operation, the one that says most about where it is: network steps, then
 * proxy operations, kernel channels, a kernel not started, a call not returned (the order of the
 * NPKIT_INFL_* numbers). */
static int rank_of(const npkit_event *ev) { return ev->u.inflight.what <= NPKIT_INFL_PROXY_STEP ? ev->u.inflight.what : 0; }

static int stuck(const npkit_event *ev, uint64_t now_ns) {
  uint64_t since = npkit_inflight_since(ev);
  return since != 0 && since <= now_ns && now_ns - since >= timeout;
}

uint64_t npkit_watchdog_check(uint64_t now_ns) {
  npkit_inflight_sink sink = {items, ITEMS, 0, 0, now_ns};
  collect(&sink);
  const npkit_event *oldest = NULL;
  for (size_t i = 0; i < sink.n; i++)
    if (stuck(&items[i], now_ns) && (oldest == NULL || npkit_inflight_since(&items[i]) < npkit_inflight_since(oldest)))
      oldest = &items[i];
  if (oldest == NULL) {
    named_key = 0; /* everything moves: a later stall is named again */
    return 0;
  }
  /* A communicator's collectives complete in order: the stuck one is its earliest stuck collective,
   * even when a later one (launched and queued behind it) has been waiting longer than the channel
   * of the earlier one was reported started. */
  const npkit_event *first = oldest;
  for (size_t i = 0; i < sink.n && oldest->u.inflight.comm_id != 0 && oldest->u.inflight.seq != NPKIT_NO_SEQ; i++) {
    const npkit_ev_inflight *f = &items[i].u.inflight;
    if (stuck(&items[i], now_ns) && f->comm_id == oldest->u.inflight.comm_id && f->seq < first->u.inflight.seq)
      first = &items[i];
  }
  uint64_t key = npkit_inflight_key(first);
  if (key == named_key) return 0;
  named_key = key;
  const npkit_event *where = first;
  uint64_t since = npkit_inflight_since(first);
  for (size_t i = 0; i < sink.n; i++) {
    if (npkit_inflight_key(&items[i]) != key) continue;
    if (rank_of(&items[i]) > rank_of(where)) where = &items[i];
    if (npkit_inflight_since(&items[i]) < since) since = npkit_inflight_since(&items[i]);
  }
  char what[160], at[200], reason[48];
  npkit_inflight_what(where, what, sizeof what);
  npkit_inflight_where(where, at, sizeof at);
  npkit_diag_as(NPKIT_LEVEL_WARN, "hang: %s has not completed for %.1f s: %s", what, (double)(now_ns - since) / 1e9, at);
  npkit_inflight_what(where, reason, sizeof reason);
  npkit_flight_request(NPKIT_FLIGHT_HANG, 0, 0, reason, key);
  return key;
}

static void *watchdog_main(void *arg) {
  (void)arg;
  npkit_own_thread_mark();
  npkit_signals_mask_thread();
  uint64_t period = timeout / 4;
  if (period > 1000000000ull) period = 1000000000ull;
  if (period < 10000000ull) period = 10000000ull;
  for (;;) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* sem_timedwait measures against CLOCK_REALTIME */
    uint64_t ns = (uint64_t)ts.tv_nsec + period;
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    int rc;
    while ((rc = sem_timedwait(&stop_sem, &ts)) != 0 && errno == EINTR) {
    }
    if (rc == 0) break; /* stopped */
    npkit_watchdog_check(npkit_now_ns());
  }
  return NULL;
}

int npkit_watchdog_start(uint64_t timeout_ns, npkit_flight_collect_fn fn) {
  timeout = timeout_ns;
  collect = fn;
  sem_init(&stop_sem, 0, 0);
  int e = pthread_create(&thread, NULL, watchdog_main, NULL);
  if (e != 0) {
    npkit_warn("cannot start the hang watchdog (%s); the job continues without it", strerror(e));
    return -1;
  }
  pthread_setname_np(thread, "npkit-watchdog");
  atomic_store(&running, 1);
  return 0;
}

void npkit_watchdog_stop(void) {
  if (!atomic_exchange(&running, 0)) return;
  sem_post(&stop_sem);
  pthread_join(thread, NULL);
}
