/* plugin_driver: plays NCCL 2.23 (ABI v1) or 2.24 (v2) against a profiler plugin library, and
 * then misbehaves the ways a plugin must survive.
 *
 *   plugin_driver LIBRARY 1|2
 *
 * Like NCCL: dlopen(LIBRARY, RTLD_NOW | RTLD_LOCAL), dlsym("ncclProfiler_v<N>"), init for one
 * communicator, one launch: Group > Coll (AllReduce of 1000 float32, seqNumber 0, RING/LL, 2
 * channels, 8 warps) > a send proxy op on channel 1 to peer 1 with 2 steps, whose op states carry
 * the cumulative size (3000 then 4000 bytes) and whose step states carry no arguments (as v1-v3
 * do); every entry point must return 0.  Then the abuses: a stop of a handle that was never
 * given, a state and a stop after the step's stop, a second stop of the op, a network-plugin
 * event (not recorded), NULL state arguments, NULL handles.  Then finalize and dlclose, as NCCL
 * does after its last communicator; the library must stay usable until the process exits.
 * Prints nothing on stdout; exit status 0, 1 if an entry point returned an error, 2 on misuse. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The descriptors as NCCL 2.23 (v1) and 2.24 (v2) lay them out. */
struct op_part {
  int32_t pid;
  uint8_t channel_id;
  int peer, n_steps, chunk_size, is_send;
};

struct descr_v1 {
  uint8_t type;
  void *parent_obj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t comm_hash, seq_number;
      uint8_t func;
      const void *send_buff;
      void *recv_buff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t traffic_bytes;
      uint8_t n_max_channels, n_warps, algo, proto;
      int is_collnet, is_nvls;
    } coll;
    struct op_part proxy_op;
    struct {
      int step;
    } proxy_step;
  } u;
};

struct descr_v2 {
  uint8_t type;
  void *parent_obj;
  int rank;
  union {
    struct {
      const char *name;
      uint64_t comm_hash, seq_number;
      const char *func;
      const void *send_buff;
      void *recv_buff;
      size_t count;
      int root;
      const char *datatype;
      size_t traffic_bytes;
      uint8_t n_max_channels, n_warps;
      const char *algo, *proto;
    } coll;
    struct op_part proxy_op;
    struct {
      int step;
    } proxy_step;
  } u;
};

union state_args_v1 {
  struct {
    size_t trans_size;
    int steps;
  } proxy_op;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
};

typedef struct table {
  const char *name;
  int (*init)(void **ctx, int *mask);
  int (*start_event)(void *ctx, void **handle, void *descr);
  int (*stop_event)(void *handle);
  int (*record_event_state)(void *handle, int state, union state_args_v1 *args);
  int (*finalize)(void *ctx);
} table;

_Static_assert(offsetof(struct descr_v1, u.coll.algo) == 24 + 82, "v1 layout");
_Static_assert(offsetof(struct descr_v2, u.coll.proto) == 24 + 96, "v2 layout");

enum { GROUP = 1, COLL = 2, PROXY_OP = 8, PROXY_STEP = 16, NET_PLUGIN = 128 };
enum { SEND_TRANSMITTED = 2, SEND_GPU_WAIT = 8, SEND_WAIT = 9 };

static int errors;

static void ok(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "plugin_driver: %s returned %d\n", what, rc);
    errors++;
  }
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[2], "1") != 0 && strcmp(argv[2], "2") != 0)) {
    fprintf(stderr, "usage: plugin_driver LIBRARY 1|2\n");
    return 2;
  }
  int abi = argv[2][0] - '0';
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "plugin_driver: %s\n", dlerror());
    return 2;
  }
  const table *t = dlsym(lib, abi == 1 ? "ncclProfiler_v1" : "ncclProfiler_v2");
  if (t == NULL) {
    fprintf(stderr, "plugin_driver: no ncclProfiler_v%d in %s\n", abi, argv[1]);
    return 2;
  }

  void *ctx = NULL;
  int mask = 0;
  ok(t->init(&ctx, &mask), "init");
  if (!(mask & COLL) || !(mask & PROXY_OP) || !(mask & PROXY_STEP)) {
    fprintf(stderr, "plugin_driver: mask 0x%x lacks Coll, ProxyOp or ProxyStep\n", mask);
    errors++;
  }

  union {
    struct descr_v1 v1;
    struct descr_v2 v2;
  } d;
  void *group = NULL, *coll = NULL, *op = NULL, *step[2] = {NULL, NULL}, *net = NULL;
  memset(&d, 0, sizeof d);
  d.v1.type = GROUP;
  ok(t->start_event(ctx, &group, &d), "start Group");
  memset(&d, 0, sizeof d);
  if (abi == 1) {
    d.v1.type = COLL;
    d.v1.parent_obj = group;
    d.v1.u.coll.name = "";
    d.v1.u.coll.comm_hash = 0x1234;
    d.v1.u.coll.seq_number = 0;
    d.v1.u.coll.func = 4;     /* ncclFuncAllReduce */
    d.v1.u.coll.count = 1000;
    d.v1.u.coll.datatype = 7; /* ncclFloat32 */
    d.v1.u.coll.n_max_channels = 2;
    d.v1.u.coll.n_warps = 8;
    d.v1.u.coll.algo = 1;     /* NCCL_ALGO_RING */
    d.v1.u.coll.proto = 0;    /* NCCL_PROTO_LL */
  } else {
    d.v2.type = COLL;
    d.v2.parent_obj = group;
    d.v2.u.coll.name = "";
    d.v2.u.coll.comm_hash = 0x1234;
    d.v2.u.coll.func = "AllReduce";
    d.v2.u.coll.count = 1000;
    d.v2.u.coll.datatype = "ncclFloat32";
    d.v2.u.coll.n_max_channels = 2;
    d.v2.u.coll.n_warps = 8;
    d.v2.u.coll.algo = "RING";
    d.v2.u.coll.proto = "LL";
  }
  ok(t->start_event(ctx, &coll, &d), "start Coll");
  ok(t->stop_event(coll), "stop Coll");
  ok(t->stop_event(group), "stop Group");

  /* the proxy thread, later: parentObj is the Coll's handle even though it was stopped */
  memset(&d, 0, sizeof d);
  d.v1.type = PROXY_OP;
  d.v1.parent_obj = coll;
  d.v1.u.proxy_op = (struct op_part){(int32_t)getpid(), 1, 1, 2, 2048, 1};
  ok(t->start_event(ctx, &op, &d), "start ProxyOp");
  size_t total = 0;
  for (int s = 0; s < 2; s++) {
    memset(&d, 0, sizeof d);
    d.v1.type = PROXY_STEP;
    d.v1.parent_obj = op;
    d.v1.u.proxy_step.step = s;
    ok(t->start_event(ctx, &step[s], &d), "start ProxyStep");
    ok(t->record_event_state(step[s], SEND_GPU_WAIT, NULL), "step state");
    ok(t->record_event_state(step[s], SEND_WAIT, NULL), "step state");
    union state_args_v1 a;
    memset(&a, 0, sizeof a);
    total += s == 0 ? 3000 : 1000;
    a.proxy_op.trans_size = total;
    a.proxy_op.steps = s + 1;
    ok(t->record_event_state(op, SEND_TRANSMITTED, &a), "op state");
    ok(t->stop_event(step[s]), "stop ProxyStep");
  }
  ok(t->stop_event(op), "stop ProxyOp");

  /* abuses: each must be accepted (and counted, not recorded) */
  /* counted as late: */
  ok(t->stop_event((void *)(uintptr_t)0x1234560), "stop of a made-up handle");
  ok(t->record_event_state(step[0], SEND_WAIT, NULL), "state after stop");
  ok(t->stop_event(step[1]), "stop after stop");
  ok(t->stop_event(op), "second stop of the op");
  /* counted as ignored: */
  memset(&d, 0, sizeof d);
  d.v1.type = NET_PLUGIN;
  ok(t->start_event(ctx, &net, &d), "start of an event type not asked for");
  /* not counted: */
  ok(t->stop_event(net), "stop of its handle");
  ok(t->stop_event(NULL), "stop of NULL");
  ok(t->record_event_state(NULL, SEND_WAIT, NULL), "state of NULL");
  ok(t->start_event(ctx, &net, NULL) , "start without a descriptor");

  ok(t->finalize(ctx), "finalize");
  dlclose(lib); /* NCCL's unload after its last communicator */
  return errors ? 1 : 0;
}
