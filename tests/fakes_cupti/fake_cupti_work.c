/* The test hooks (fake_cupti_hooks.h): work "launched" on the fake GPU.
 *
 * A launch takes the next correlation id.  When CUPTI traces the API call that made it (its
 * kind or callback id is enabled), an API activity record is written at once, preceded by an
 * EXTERNAL_CORRELATION record for every external id the calling thread has pushed (written later
 * in ext-late mode: fake_cupti_emit.c); otherwise neither.  cupti_activity.h of CUDA 13
 * (cuptiActivityPushExternalCorrelationId, CUpti_ActivityExternalCorrelation): "When a CUPTI
 * activity API record is created while within an external API region ... the activity API record
 * will be preceded by a CUpti_ActivityExternalCorrelation record for each
 * CUpti_ExternalCorrelationKind" — the correlation exists only for traced API calls.
 * The activity record itself waits until its end time has passed: records are written in the
 * order work completes, not the order it was launched, as on a GPU with several streams. */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti_hooks.h"
#include "fake_cupti_internal.h"

typedef union fc_record {
  CUpti_Activity head;
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityMemcpy6 memcpy;
  CUpti_ActivityMemcpyPtoP4 peer;
  CUpti_ActivityMemset4 memset;
} fc_record;

typedef struct inflight {
  uint64_t end_ns;
  size_t size;
  fc_record rec;
} inflight;

static inflight *flying;  /* sorted by end_ns; equal ends keep launch order */
static size_t nflying, capflying;
/* Kernels launched in two steps whose run has not ended (npkitFakeCuptiLaunch, KernelDone): CUPTI
 * has their record in a buffer already, without times (cupti_activity.h of CUDA 13,
 * cuptiActivityFlushAll: "Activity record is considered as completed if it has all the
 * information filled up including the timestamps"). */
#define MAX_RUNNING 4096
typedef struct running {
  uint32_t corr;
  int flushed; /* a forced flush handed its record back incomplete: the run's end is lost */
} running;
static running runs[MAX_RUNNING];
static size_t nruns;
static uint64_t kernels_launched;
static int64_t grid_ids;

/* ---- names and streams, stable for the life of the process like CUPTI's ---- */

static char **names;
static size_t nnames;

static const char *intern(const char *s) {
  if (s == NULL) return NULL;
  for (size_t i = 0; i < nnames; i++)
    if (strcmp(names[i], s) == 0) return names[i];
  char **n = realloc(names, (nnames + 1) * sizeof *n);
  if (n == NULL) return NULL;
  names = n;
  size_t len = strlen(s) + 1;
  char *copy = malloc(len);
  if (copy == NULL) return NULL;
  memcpy(copy, s, len);
  names[nnames++] = copy;
  return copy;
}

#define MAX_STREAMS 256
static uint64_t stream_handles[MAX_STREAMS];
static size_t nstreams;

/* CUDA numbers the legacy default stream 7 and created streams from 13 on. */
static uint32_t stream_id(uint64_t handle) {
  if (handle == 0) return 7;
  for (size_t i = 0; i < nstreams; i++)
    if (stream_handles[i] == handle) return 13 + (uint32_t)i;
  if (nstreams == MAX_STREAMS) return 13 + MAX_STREAMS;
  stream_handles[nstreams] = handle;
  return 13 + (uint32_t)nstreams++;
}

FC_EXPORT uint32_t npkitFakeCuptiStreamId(uint64_t stream) {
  fc_lock();
  uint32_t id = stream_id(stream);
  fc_unlock();
  return id;
}

/* ---- in-flight work ---- */

static void fly(const fc_record *rec, size_t size, uint64_t end_ns) {
  if (nflying == capflying) {
    size_t cap = capflying ? 2 * capflying : 64;
    inflight *f = realloc(flying, cap * sizeof *f);
    if (f == NULL) {
      fc_count_dropped(1);
      return;
    }
    flying = f;
    capflying = cap;
  }
  size_t i = nflying;
  while (i > 0 && flying[i - 1].end_ns > end_ns) i--;
  memmove(&flying[i + 1], &flying[i], (nflying - i) * sizeof *flying);
  flying[i].end_ns = end_ns;
  flying[i].size = size;
  flying[i].rec = *rec;
  nflying++;
}

void fc_retire(int all) {
  if (nflying == 0) return;
  uint64_t now = fc_now_ns();
  size_t i = 0;
  while (i < nflying && (all || flying[i].end_ns <= now)) {
    fc_emit(&flying[i].rec, flying[i].size);
    i++;
  }
  memmove(flying, flying + i, (nflying - i) * sizeof *flying);
  nflying -= i;
}

int fc_work_in_flight(void) {
  if (nruns > 0) return 1;
  uint64_t now = fc_now_ns();
  for (size_t i = 0; i < nflying; i++)
    if (flying[i].end_ns > now) return 1;
  return 0;
}

/* A forced flush hands back the buffers with the records of unfinished work in them as they are:
 * without times (cupti_activity.h of CUDA 13, cuptiActivityFlushAll: a forced flush "returns all
 * the activity buffers including the ones which have one or more incomplete activity records").
 * On an H200 the library's periodic forced flush left 25 of 48 NCCL kernels untimed this way
 * (device check of 2026-12-04). */
void fc_flush_incomplete(void) {
  uint64_t now = fc_now_ns();
  size_t kept = 0;
  for (size_t i = 0; i < nflying; i++) {
    if (flying[i].end_ns <= now) {
      flying[kept++] = flying[i];
      continue;
    }
    fc_record r = flying[i].rec;
    if (r.head.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      r.kernel.start = r.kernel.end = r.kernel.completed = 0;
    } else if (r.head.kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      r.memcpy.start = r.memcpy.end = 0;
    } else if (r.head.kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
      r.peer.start = r.peer.end = 0;
    } else if (r.head.kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      r.memset.start = r.memset.end = 0;
    }
    fc_emit(&r, flying[i].size);
  }
  nflying = kept;
  for (size_t i = 0; i < nruns; i++) {
    if (runs[i].flushed) continue;
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = runs[i].corr;
    k.contextId = 1;
    fc_emit(&k, fc_record_size((const CUpti_Activity *)(const void *)&k));
    runs[i].flushed = 1;
  }
}

static void correlate(uint32_t corr) {
  if (!fc_kind_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) return;
  CUpti_ExternalCorrelationKind kinds[8];
  uint64_t ids[8];
  int n = fc_pushed_ids(kinds, ids);
  for (int i = 0; i < n; i++) {
    CUpti_ActivityExternalCorrelation x;
    memset(&x, 0, sizeof x);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = kinds[i];
    x.externalId = ids[i];
    x.correlationId = corr;
    if (fc_cfg()->ext_late)
      fc_emit_late(&x);
    else
      fc_emit(&x, sizeof x);
  }
}

/* The API record of the call that launched work with correlation id corr, if CUPTI traces it,
 * with the correlation records in front of it.  Returns 1 when it was traced. */
static int api_call(npkit_fake_api api, uint32_t corr) {
  if (!fc_api_traced(api.domain, api.cbid)) return 0;
  correlate(corr);
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = api.domain == NPKIT_FAKE_API_DRIVER ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = api.cbid;
  a.start = fc_now_ns();
  a.end = a.start + 2000; /* a launch call takes a few microseconds */
  a.processId = (uint32_t)getpid();
  a.threadId = (uint32_t)syscall(SYS_gettid);
  a.correlationId = corr;
  fc_emit(&a, sizeof a);
  return 1;
}

static void kernel_record(CUpti_ActivityKernel10 *r, const npkit_fake_kernel *k, uint32_t corr) {
  *r = (CUpti_ActivityKernel10){
      .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
      .registersPerThread = k->registers,
      .start = k->start_ns, .end = k->end_ns, .completed = k->end_ns,
      .queued = k->start_ns, .submitted = k->start_ns,
      .deviceId = k->device, .contextId = 1, .streamId = stream_id(k->stream),
      .gridX = k->grid[0], .gridY = k->grid[1], .gridZ = k->grid[2],
      .blockX = k->block[0], .blockY = k->block[1], .blockZ = k->block[2],
      .staticSharedMemory = k->static_shared, .dynamicSharedMemory = k->dynamic_shared,
      .correlationId = corr,
      .gridId = ++grid_ids,
      .name = intern(k->name),
  };
}

/* Applies the drop and untimed modes, then lets the kernel run. */
static void run_kernel(CUpti_ActivityKernel10 *r, uint64_t end_ns) {
  const fc_settings *s = fc_cfg();
  kernels_launched++;
  if (s->drop_every && kernels_launched % s->drop_every == 0) {
    fc_count_dropped(1);
    return;
  }
  if (s->untimed_every && kernels_launched % s->untimed_every == 0) r->start = 0;
  fly((const fc_record *)(const void *)r, fc_record_size(&((fc_record *)(void *)r)->head), end_ns);
}

/* ---- graphs ---- */

#define MAX_GRAPHS 64
#define MAX_NODES 64

typedef struct fc_node {
  uint64_t id;
  npkit_fake_kernel k;
} fc_node;

typedef struct fc_graph {
  uint32_t id;
  uint64_t stream;   /* capturing stream while open */
  int open;
  fc_node nodes[MAX_NODES];
  int n;
} fc_graph;

typedef struct fc_exec {
  uint32_t graph;    /* index into graphs */
  uint64_t node_ids[MAX_NODES];
} fc_exec;

static fc_graph graphs[MAX_GRAPHS];
static int ngraphs;
static fc_exec execs[MAX_GRAPHS];
static int nexecs;
static uint64_t next_node = 1;

static fc_graph *capturing(uint64_t stream) {
  for (int i = 0; i < ngraphs; i++)
    if (graphs[i].open && graphs[i].stream == stream) return &graphs[i];
  return NULL;
}

static CUgraphNode node_handle(uint64_t id) { return (CUgraphNode)(uintptr_t)(FC_NODE_HANDLE_BASE + id); }
static CUgraph graph_handle(uint32_t id) { return (CUgraph)(uintptr_t)(FC_NODE_HANDLE_BASE + id); }

/* The resource callback of a kernel node of graph, a clone of node `original` when not 0. */
static void node_callback(CUpti_CallbackId cbid, uint32_t graph, uint64_t node,
                          uint64_t original) {
  CUpti_GraphData gd;
  memset(&gd, 0, sizeof gd);
  gd.graph = graph_handle(graph);
  gd.node = node_handle(node);
  if (original != 0) {
    gd.originalGraph = graph_handle(graph);
    gd.originalNode = node_handle(original);
  }
  gd.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  fc_resource_callback(cbid, &gd);
}

static void capture(fc_graph *g, const npkit_fake_kernel *k) {
  if (g->n == MAX_NODES) return;
  fc_node *n = &g->nodes[g->n++];
  n->id = next_node++;
  n->k = *k;
  n->k.name = intern(k->name);
  node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, g->id, n->id, 0);
}

FC_EXPORT uint32_t npkitFakeCuptiCaptureBegin(uint64_t stream) {
  fc_lock();
  uint32_t id = 0;
  if (ngraphs < MAX_GRAPHS && capturing(stream) == NULL) {
    fc_graph *g = &graphs[ngraphs++];
    memset(g, 0, sizeof *g);
    g->id = (uint32_t)ngraphs;
    g->stream = stream;
    g->open = 1;
    id = g->id;
  }
  fc_unlock();
  return id;
}

FC_EXPORT uint32_t npkitFakeCuptiCaptureEnd(uint64_t stream) {
  fc_lock();
  fc_graph *g = capturing(stream);
  if (g != NULL) g->open = 0;
  uint32_t id = g != NULL ? g->id : 0;
  fc_unlock();
  return id;
}

FC_EXPORT uint32_t npkitFakeCuptiGraphInstantiate(uint32_t graph) {
  fc_lock();
  uint32_t id = 0;
  if (graph >= 1 && (int)graph <= ngraphs && !graphs[graph - 1].open && nexecs < MAX_GRAPHS) {
    fc_graph *g = &graphs[graph - 1];
    fc_exec *e = &execs[nexecs++];
    e->graph = graph - 1;
    for (int i = 0; i < g->n; i++) {
      e->node_ids[i] = next_node++;
      node_callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, g->id, e->node_ids[i], g->nodes[i].id);
    }
    id = (uint32_t)nexecs;
  }
  fc_unlock();
  return id;
}

FC_EXPORT uint32_t npkitFakeCuptiGraphLaunch(uint32_t exec, uint64_t stream) {
  fc_lock();
  uint32_t corr = 0;
  if (exec >= 1 && (int)exec <= nexecs && fc_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    fc_exec *e = &execs[exec - 1];
    fc_graph *g = &graphs[e->graph];
    corr = fc_next_correlation();
    api_call((npkit_fake_api){NPKIT_FAKE_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
             corr);
    uint64_t t = fc_now_ns();
    for (int i = 0; i < g->n; i++) {
      npkit_fake_kernel k = g->nodes[i].k;
      uint64_t dur = k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 1000;
      k.stream = stream;
      k.start_ns = t;
      k.end_ns = t + dur;
      t += dur;
      CUpti_ActivityKernel10 r;
      kernel_record(&r, &k, corr);
      r.graphId = g->id;
      r.graphNodeId = e->node_ids[i];
      run_kernel(&r, k.end_ns);
    }
    fc_retire(0);
  }
  fc_unlock();
  return corr;
}

/* ---- kernels, copies, memsets ---- */

/* The kernel of correlation id corr: a node of the graph its stream captures, else it runs. */
static void kernel_done(uint32_t corr, const npkit_fake_kernel *k) {
  fc_graph *g = capturing(k->stream);
  if (g != NULL) {
    capture(g, k);
  } else {
    CUpti_ActivityKernel10 r;
    kernel_record(&r, k, corr);
    run_kernel(&r, k->end_ns);
  }
  fc_retire(0);
}

/* A launch when kernels are traced: its correlation id (0, "none", otherwise). */
static uint32_t launch(npkit_fake_api api) {
  if (!fc_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return 0;
  uint32_t corr = fc_next_correlation();
  api_call(api, corr);
  return corr;
}

FC_EXPORT uint32_t npkitFakeCuptiKernel(const npkit_fake_kernel *k) {
  if (k == NULL) return 0;
  fc_lock();
  uint32_t corr = launch(k->api);
  if (corr != 0) kernel_done(corr, k);
  fc_unlock();
  return corr;
}

FC_EXPORT uint32_t npkitFakeCuptiLaunch(const npkit_fake_api *api) {
  if (api == NULL) return 0;
  fc_lock();
  uint32_t corr = launch(*api);
  if (corr != 0 && nruns < MAX_RUNNING) runs[nruns++] = (running){corr, 0};
  fc_unlock();
  return corr;
}

FC_EXPORT void npkitFakeCuptiKernelDone(uint32_t corr, const npkit_fake_kernel *k) {
  if (k == NULL || corr == 0) return;
  fc_lock();
  int flushed = 0;
  for (size_t i = 0; i < nruns; i++) {
    if (runs[i].corr != corr) continue;
    flushed = runs[i].flushed;
    runs[i] = runs[--nruns];
    break;
  }
  if (!flushed && fc_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) kernel_done(corr, k);
  fc_unlock();
}

/* Memcpy, peer memcpy and memset records name these fields alike at different offsets, so macros
 * rather than functions: each expansion writes its own record type. */
#define COPY_RECORD(rec, kind_, c, corr)                                                           \
  do {                                                                                             \
    (rec).kind = (kind_);                                                                          \
    (rec).bytes = (c)->bytes;                                                                      \
    (rec).start = (c)->start_ns;                                                                   \
    (rec).end = (c)->end_ns;                                                                       \
    (rec).deviceId = (c)->device;                                                                  \
    (rec).contextId = 1;                                                                           \
    (rec).streamId = stream_id((c)->stream);                                                       \
    (rec).correlationId = (corr);                                                                  \
  } while (0)

/* What memcpy and peer memcpy records say about the copy's memory. */
#define COPY_KINDS(rec, c)                                                                         \
  do {                                                                                             \
    (rec).copyKind = (c)->copy_kind;                                                               \
    (rec).srcKind = (c)->src_kind;                                                                 \
    (rec).dstKind = (c)->dst_kind;                                                                 \
  } while (0)

static uint32_t copy(const npkit_fake_copy *c, int memset_op) {
  if (c == NULL) return 0;
  int peer = !memset_op && c->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  CUpti_ActivityKind kind = memset_op ? CUPTI_ACTIVITY_KIND_MEMSET
                                      : peer ? CUPTI_ACTIVITY_KIND_MEMCPY2 : CUPTI_ACTIVITY_KIND_MEMCPY;
  fc_lock();
  uint32_t corr = 0;
  if (fc_kind_enabled(kind)) {
    corr = fc_next_correlation();
    api_call(c->api, corr);
    fc_record r;
    memset(&r, 0, sizeof r);
    if (memset_op) {
      COPY_RECORD(r.memset, kind, c, corr);
      r.memset.value = c->value;
      r.memset.memoryKind = c->dst_kind;
    } else if (peer) {
      COPY_RECORD(r.peer, kind, c, corr);
      COPY_KINDS(r.peer, c);
      r.peer.srcDeviceId = c->src_device;
      r.peer.dstDeviceId = c->dst_device;
      r.peer.srcContextId = 1;
      r.peer.dstContextId = 2;
    } else {
      COPY_RECORD(r.memcpy, kind, c, corr);
      COPY_KINDS(r.memcpy, c);
    }
    fly(&r, fc_record_size(&r.head), c->end_ns);
    fc_retire(0);
  }
  fc_unlock();
  return corr;
}

FC_EXPORT uint32_t npkitFakeCuptiMemcpy(const npkit_fake_copy *c) { return copy(c, 0); }
FC_EXPORT uint32_t npkitFakeCuptiMemset(const npkit_fake_copy *c) { return copy(c, 1); }

FC_EXPORT void npkitFakeCuptiSynchronize(void) {
  fc_lock();
  uint64_t last = nflying > 0 ? flying[nflying - 1].end_ns : 0;
  fc_unlock();
  uint64_t now = fc_now_ns();
  if (last > now) {
    uint64_t ns = last - now;
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  fc_lock();
  fc_retire(0);
  fc_unlock();
}

FC_EXPORT uint64_t npkitFakeCuptiBurst(uint64_t n, const npkit_fake_kernel *k, uint64_t first_ext_id) {
  if (k == NULL) return 0;
  fc_lock();
  uint64_t done = 0;
  if (fc_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    CUpti_ActivityKernel10 r;
    kernel_record(&r, k, 0);
    size_t size = fc_record_size((const CUpti_Activity *)(const void *)&r);
    uint64_t dur = k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 1000;
    CUpti_ActivityExternalCorrelation x;
    memset(&x, 0, sizeof x);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    int traced = fc_api_traced(k->api.domain, k->api.cbid);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = k->api.domain == NPKIT_FAKE_API_DRIVER ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = k->api.cbid;
    a.processId = (uint32_t)getpid();
    a.threadId = (uint32_t)syscall(SYS_gettid);
    for (; done < n; done++) {
      r.correlationId = fc_next_correlation();
      if (traced && first_ext_id != 0) {
        x.externalId = first_ext_id + done;
        x.correlationId = r.correlationId;
        fc_emit(&x, sizeof x);
      }
      if (traced) {
        a.start = k->start_ns + done * dur;
        a.end = a.start + 2000;
        a.correlationId = r.correlationId;
        fc_emit(&a, sizeof a);
      }
      r.start = k->start_ns + done * dur;
      r.end = r.start + dur;
      fc_emit(&r, size);
    }
  }
  fc_unlock();
  return done;
}
