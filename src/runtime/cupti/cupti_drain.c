#include "cupti_drain.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cupti_buffers.h"
#include "cupti_clock.h"
#include "cupti_corr.h"
#include "cupti_loader.h"
#include "cupti_records.h"
#include "batch.h"

#define BATCH 512          /* events per EVENTS block */
/* Activity held back for one more drain: its call is still running, or no correlation record
 * has arrived for it yet (CUPTI may return the buffer holding that record later).  More than this
 * is written without waiting. */
#define WAITING_MAX 32768
/* Activity without a correlation record waits for the buffers CUPTI held when its own came back,
 * but no longer than this: a busy job's CUPTI can keep its current buffer for seconds (a default
 * flush returns no buffer with an unfinished record in it), and most activity without a record
 * (the job's own kernels) never gets one. */
#define UNMATCHED_WAIT_NS 2000000000ull

typedef struct held {
  npkit_event ev;
  uint64_t before;   /* buffers requested when its own came back (npkit_cupti_buf.before) */
  uint64_t since_ns; /* when it was first read */
  unsigned waited;   /* WAITED_*: what it has waited for */
} held;
#define WAITED_RECORD 1u
#define WAITED_CALL 2u

static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_log_writer *out;
static npkit_event slots[BATCH];
static npkit_batch batch = NPKIT_BATCH_OF(slots);
static held *waiting;
static size_t nwaiting;
static npkit_cupti_counts counts;
static uint64_t last_recorded = UINT64_MAX, last_dropped = UINT64_MAX;
/* Every buffer requested up to this number has been read (npkit_cupti_bufs_take). */
static uint64_t read_through;
static uint64_t drain_ns; /* when the current drain began */

void npkit_cupti_drain_attach(npkit_log_writer *log) {
  pthread_mutex_lock(&drain_lock);
  out = log;
  batch.log = log;
  pthread_mutex_unlock(&drain_lock);
}

/* Counts of the events in `batch`, added to `counts` once the log has taken them. */
static npkit_cupti_counts pending;

static void flush_batch(void) {
  long moved = npkit_batch_flush(&batch);
  if (moved > 0) {
    counts.kernels += pending.kernels;
    counts.memcpys += pending.memcpys;
    counts.memsets += pending.memsets;
    counts.attributed += pending.attributed;
    counts.untimed += pending.untimed;
    counts.calls_lost += pending.calls_lost;
  } else if (moved < 0) {
    counts.write_failed += (uint64_t)-moved;
  }
  memset(&pending, 0, sizeof pending);
}

/* ev may already be the next slot of the batch (read_buffer builds events there). */
static void emit(const npkit_event *ev) {
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL) pending.kernels++;
  else if (ev->kind == NPKIT_EV_CUPTI_MEMCPY) pending.memcpys++;
  else pending.memsets++;
  pending.attributed += ev->func != 0;
  pending.untimed += (ev->u.gpu.flags & NPKIT_GPU_UNTIMED) != 0;
  pending.calls_lost += (ev->u.gpu.flags & NPKIT_GPU_CALL_LOST) != 0;
  if (npkit_batch_add(&batch, ev)) flush_batch();
}

static void fill(npkit_event *ev, const npkit_cupti_call *c, uint16_t extra) {
  npkit_ev_gpu *g = &ev->u.gpu;
  ev->func = c->func;
  ev->thread = c->thread;
  g->call_bytes = c->bytes;
  g->call_seq = c->seq;
  g->group = c->group;
  g->comm = c->comm;
  g->group_calls = c->group_calls;
  g->call_ns = c->start_ns + (c->end_ns - c->start_ns) / 2;
  g->flags |= (c->flags & (NPKIT_GPU_CALL_RECORDED | NPKIT_GPU_VIA_GROUP)) | extra;
}

/* Ties ev to its NCCL call.  PENDING: the call has not published its description yet, or (with
 * hold_unmatched) no correlation record for the launch has been seen yet. */
static npkit_cupti_lookup attribute(npkit_event *ev, int hold_unmatched) {
  npkit_ev_gpu *g = &ev->u.gpu;
  npkit_cupti_call c;
  if (g->ext_id == 0) g->ext_id = npkit_cupti_corr_get(g->correlation);
  if (g->ext_id != 0) {
    npkit_cupti_lookup k = npkit_cupti_call_find(g->ext_id, &c);
    if (k == NPKIT_CUPTI_PENDING) return k;
    if (k == NPKIT_CUPTI_GONE) g->flags |= NPKIT_GPU_CALL_LOST;
    else fill(ev, &c, 0);
    return k;
  }
  uint64_t ext;
  if (g->graph_node != 0 && npkit_cupti_node_find(g->graph_node, &ext, &c) == NPKIT_CUPTI_FOUND) {
    /* Replayed by cudaGraphLaunch, not by the call: no arrow from it. */
    g->ext_id = ext;
    fill(ev, &c, NPKIT_GPU_GRAPH);
    g->flags &= (uint16_t)~NPKIT_GPU_CALL_RECORDED;
    return NPKIT_CUPTI_FOUND;
  }
  return hold_unmatched ? NPKIT_CUPTI_PENDING : NPKIT_CUPTI_FOUND;
}

static unsigned waiting_for(const npkit_event *ev) {
  return ev->u.gpu.ext_id == 0 ? WAITED_RECORD : WAITED_CALL;
}

static void hold_or_emit(const npkit_event *ev, uint64_t before) {
  if (waiting == NULL) waiting = malloc(WAITING_MAX * sizeof *waiting);
  if (waiting != NULL && nwaiting < WAITING_MAX) {
    waiting[nwaiting].ev = *ev;
    waiting[nwaiting].before = before;
    waiting[nwaiting].since_ns = drain_ns;
    waiting[nwaiting].waited = waiting_for(ev);
    nwaiting++;
    return;
  }
  emit(ev); /* without its call: better than holding memory for a call that never returns */
}

/* Held activity gets another chance: written once tied to its call, or once it is settled that
 * it has no correlation record; activity of a running call waits until the call returns.
 * Settled: CUPTI writes the correlation record in front of the launch's API record, at the launch
 * (cupti_activity.h of CUDA 13, cuptiActivityPushExternalCorrelationId: "the activity API record
 * will be preceded by a CUpti_ActivityExternalCorrelation record"), so before the activity ended
 * and its buffer came back: in a buffer requested by then.  Once all of those have been read, no
 * record is coming. */
static void retry_waiting(npkit_drain_mode mode) {
  size_t kept = 0;
  for (size_t i = 0; i < nwaiting; i++) {
    held *h = &waiting[i];
    int hold_unmatched = h->before > read_through && drain_ns - h->since_ns < UNMATCHED_WAIT_NS;
    if (attribute(&h->ev, hold_unmatched) == NPKIT_CUPTI_PENDING && mode != NPKIT_DRAIN_FINAL) {
      h->waited |= waiting_for(&h->ev);
      waiting[kept++] = *h;
      continue;
    }
    if (h->ev.func != 0) { /* tied to its call after all: say what it had to wait for */
      counts.held_record += (h->waited & WAITED_RECORD) != 0;
      counts.held_call += (h->waited & WAITED_CALL) != 0;
    }
    emit(&h->ev);
  }
  nwaiting = kept;
}

/* One pass over a buffer: correlation records feed the map; activity is written when its call is
 * known or it has none, else it waits until the end of the drain (its correlation record may be
 * further on, in this buffer or a later one) or longer. */
static void read_buffer(npkit_cupti_buf *b) {
  CUpti_Activity *rec = NULL;
  while (npkit_cupti.ActivityGetNextRecord(b->data, b->valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const CUpti_ActivityExternalCorrelation *x =
          (const CUpti_ActivityExternalCorrelation *)(const void *)rec;
      if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2)
        npkit_cupti_corr_put(x->correlationId, x->externalId);
      continue;
    }
    if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER || rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      counts.api_records++; /* only there for the correlation records in front of them */
      continue;
    }
    npkit_event *ev = npkit_batch_slot(&batch); /* built in place: most events go straight out */
    if (!npkit_cupti_record_event(rec, ev, out)) continue;
    if (!npkit_cupti_clock_fix(&ev->start_ns, &ev->end_ns)) ev->u.gpu.flags |= NPKIT_GPU_UNTIMED;
    if (attribute(ev, 1) == NPKIT_CUPTI_PENDING)
      hold_or_emit(ev, b->before);
    else
      emit(ev);
  }
}

static uint64_t count_records(npkit_cupti_buf *b) {
  uint64_t n = 0;
  CUpti_Activity *rec = NULL;
  while (npkit_cupti.ActivityGetNextRecord(b->data, b->valid, &rec) == CUPTI_SUCCESS)
    if (rec->kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION && rec->kind != CUPTI_ACTIVITY_KIND_DRIVER &&
        rec->kind != CUPTI_ACTIVITY_KIND_RUNTIME)
      n++;
  return n;
}

static void write_counters(void) {
  npkit_cupti_buf_stats bs;
  npkit_cupti_bufs_stats(&bs);
  counts.cupti_dropped = bs.cupti_dropped;
  npkit_counter_rec c;
  memset(&c, 0, sizeof c);
  c.thread = 0;
  c.source = NPKIT_SRC_CUPTI;
  c.recorded = counts.kernels + counts.memcpys + counts.memsets;
  c.dropped = counts.cupti_dropped + counts.write_failed;
  if (c.recorded == last_recorded && c.dropped == last_dropped) return;
  if (out != NULL && npkit_logw_append(out, NPKIT_BLOCK_COUNTERS, 1, &c, sizeof c) == 0) {
    last_recorded = c.recorded;
    last_dropped = c.dropped;
  }
}

void npkit_cupti_drain(npkit_drain_mode mode) {
  pthread_mutex_lock(&drain_lock);
  npkit_cupti_buf *bufs = npkit_cupti_bufs_take(&read_through);
  drain_ns = npkit_now_ns();
  if (out == NULL) {
    for (npkit_cupti_buf *b = bufs; b != NULL; b = b->next) counts.discarded += count_records(b);
    npkit_cupti_bufs_release(bufs);
    pthread_mutex_unlock(&drain_lock);
    return;
  }
  /* Every record of the buffers taken was stamped before this reading: each stamp in another
   * clock lies between two readings (cupti_clock.h). */
  npkit_cupti_clock_read();
  npkit_cupti_nodes_resolve();
  for (npkit_cupti_buf *b = bufs; b != NULL; b = b->next) read_buffer(b);
  retry_waiting(mode);
  flush_batch();
  write_counters();
  npkit_cupti_bufs_release(bufs);
  pthread_mutex_unlock(&drain_lock);
}

void npkit_cupti_drain_counts(npkit_cupti_counts *c) {
  npkit_cupti_buf_stats bs;
  npkit_cupti_bufs_stats(&bs);
  pthread_mutex_lock(&drain_lock);
  counts.cupti_dropped = bs.cupti_dropped;
  *c = counts;
  pthread_mutex_unlock(&drain_lock);
}
