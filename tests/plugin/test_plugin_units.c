/* Unit tests of the plugin's parts that need no NCCL: the handle slots (growth beyond a block,
 * stale and forged handles, concurrent use), NCCL's names of ABI v1 numbers and datatype strings,
 * and NPKIT_PLUGIN_EVENTS parsing. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "nccl_names.h"
#include "plugin_names.h"
#include "plugin_slots.h"

static int failures;
#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)

static void test_slots_basic(void) {
  void *h = NULL;
  npkit_plugin_slot *s = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_PROXY_STEP, &h);
  CHECK(s != NULL && h != NULL);
  CHECK(npkit_plugin_handle_tag(h) == NPKIT_PLUGIN_H_PROXY_STEP);
  CHECK(npkit_plugin_slot_get(h, NPKIT_PLUGIN_H_PROXY_STEP) == s);
  CHECK(npkit_plugin_slot_get(h, NPKIT_PLUGIN_H_PROXY_OP) == NULL); /* another kind's handle */
  s->u.step.size = 1234;
  npkit_plugin_slot_free(s);
  CHECK(npkit_plugin_slot_get(h, NPKIT_PLUGIN_H_PROXY_STEP) == NULL); /* stale: after its stop */
  void *h2 = NULL;
  npkit_plugin_slot *s2 = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_PROXY_STEP, &h2);
  CHECK(s2 == s);          /* the same slot, reused ... */
  CHECK(h2 != h);          /* ... under another generation */
  CHECK(s2->u.step.size == 0);
  CHECK(npkit_plugin_slot_get(h, NPKIT_PLUGIN_H_PROXY_STEP) == NULL);
  CHECK(npkit_plugin_slot_get(h2, NPKIT_PLUGIN_H_PROXY_STEP) == s2);
  npkit_plugin_slot_free(s2);

  /* forged handles never resolve */
  static const uintptr_t forged[] = {0, 1, 5, 0x12345, 0xfffffff5u, UINTPTR_MAX, 0x7f0000000005ull,
                                     ((uintptr_t)3 << 32) | (5000u << 4) | NPKIT_PLUGIN_H_PROXY_OP};
  for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++)
    for (uint32_t tag = 0; tag < 16; tag++)
      CHECK(npkit_plugin_slot_get((void *)forged[i], tag) == NULL);

  /* task and context handles carry their id */
  void *t = npkit_plugin_handle_make(NPKIT_PLUGIN_H_COLL, 77);
  CHECK(npkit_plugin_handle_tag(t) == NPKIT_PLUGIN_H_COLL && npkit_plugin_handle_payload(t) == 77);
  CHECK(npkit_plugin_slot_get(t, NPKIT_PLUGIN_H_COLL) == NULL);
}

/* More slots in flight than a block holds: the pool grows, every handle stays distinct. */
static void test_slots_grow(void) {
  enum { N = 10000 };
  static npkit_plugin_slot *s[N];
  static void *h[N];
  for (int i = 0; i < N; i++) {
    s[i] = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_KERNEL_CH, &h[i]);
    CHECK(s[i] != NULL);
    if (s[i] != NULL) s[i]->u.kch.gpu_start = (uint64_t)i;
  }
  for (int i = 0; i < N; i++) {
    CHECK(npkit_plugin_slot_get(h[i], NPKIT_PLUGIN_H_KERNEL_CH) == s[i]);
    CHECK(s[i]->u.kch.gpu_start == (uint64_t)i);
  }
  for (int i = 0; i < N; i++) npkit_plugin_slot_free(s[i]);
  for (int i = 0; i < N; i++) CHECK(npkit_plugin_slot_get(h[i], NPKIT_PLUGIN_H_KERNEL_CH) == NULL);
}

/* Threads allocating and freeing at once (NCCL's proxy threads): no slot is handed out twice. */
static void *churn(void *arg) {
  uintptr_t me = (uintptr_t)arg;
  enum { HELD = 64 };
  npkit_plugin_slot *held[HELD];
  void *handle[HELD];
  int bad = 0;
  for (int round = 0; round < 2000; round++) {
    for (int i = 0; i < HELD; i++) {
      held[i] = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_PROXY_OP, &handle[i]);
      if (held[i] == NULL) return (void *)1;
      held[i]->task = (me << 32) | (uint64_t)i;
    }
    for (int i = 0; i < HELD; i++) {
      if (npkit_plugin_slot_get(handle[i], NPKIT_PLUGIN_H_PROXY_OP) != held[i] ||
          held[i]->task != ((me << 32) | (uint64_t)i))
        bad = 1;
      npkit_plugin_slot_free(held[i]);
    }
  }
  return (void *)(uintptr_t)bad;
}

static void test_slots_threads(void) {
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0);
  for (int i = 0; i < 4; i++) {
    void *bad = NULL;
    pthread_join(t[i], &bad);
    CHECK(bad == NULL);
  }
}

/* A thread keeps the slots it freed for itself, up to a bound, and gives them back when it ends:
 * threads that come and go (each holding more than the bound at once) do not make the pool grow. */
static void *hold_and_free(void *arg) {
  enum { HELD = 768 }; /* more than a thread keeps (256): its list moves to the shared one twice, and
                          it ends keeping 254 */
  static __thread npkit_plugin_slot *held[HELD];
  void *h;
  int bad = 0;
  for (int i = 0; i < HELD; i++)
    if ((held[i] = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_PROXY_STEP, &h)) == NULL) bad = 1;
  for (int i = 0; i < HELD; i++)
    if (held[i] != NULL) npkit_plugin_slot_free(held[i]);
  for (int i = 0; i < 100; i++) { /* the thread's next events take the slots it kept */
    npkit_plugin_slot *s = npkit_plugin_slot_alloc(NPKIT_PLUGIN_H_PROXY_STEP, &h);
    if (s == NULL || npkit_plugin_slot_get(h, NPKIT_PLUGIN_H_PROXY_STEP) != s) bad = 1;
    else npkit_plugin_slot_free(s);
  }
  (void)arg;
  return (void *)(uintptr_t)bad;
}

static void test_slots_thread_exit(void) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, hold_and_free, NULL) == 0);
  void *bad = (void *)1;
  pthread_join(t, &bad);
  CHECK(bad == NULL);
  uint32_t cap = npkit_plugin_slots_capacity();
  CHECK(cap > 0);
  for (int i = 0; i < 100; i++) { /* kept for good, 100 x 254 slots would be twice the pool */
    bad = (void *)1;
    CHECK(pthread_create(&t, NULL, hold_and_free, NULL) == 0);
    pthread_join(t, &bad);
    CHECK(bad == NULL);
  }
  CHECK(npkit_plugin_slots_capacity() == cap);
}

static void test_names(void) {
  CHECK(strcmp(npkit_plugin_v1_func_name(4), "AllReduce") == 0);
  CHECK(strcmp(npkit_plugin_v1_func_name(0), "Broadcast") == 0);
  CHECK(strcmp(npkit_plugin_v1_func_name(7), "Recv") == 0);
  CHECK(npkit_plugin_v1_func_name(8) == NULL && npkit_plugin_v1_func_name(255) == NULL);
  CHECK(strcmp(npkit_plugin_v1_algo_name(1), "RING") == 0);
  CHECK(strcmp(npkit_plugin_v1_algo_name(6), "PAT") == 0);
  CHECK(npkit_plugin_v1_algo_name(7) == NULL);
  CHECK(strcmp(npkit_plugin_v1_proto_name(2), "SIMPLE") == 0);
  CHECK(npkit_plugin_v1_proto_name(3) == NULL);
  CHECK(npkit_plugin_datatype_from_name("ncclFloat32") == 7);
  CHECK(npkit_plugin_datatype_from_name("ncclInt8") == 0);
  CHECK(npkit_plugin_datatype_from_name("ncclFloat8e5m2") == 11);
  CHECK(npkit_plugin_datatype_from_name("Unknown") == -1); /* NCCL's name for uint8 */
  CHECK(npkit_plugin_datatype_from_name(NULL) == -1);
  /* the cache by pointer: the same literal twice, and a buffer whose text changes */
  for (int i = 0; i < 3; i++) {
    CHECK(npkit_plugin_fn_from_name("ReduceScatter") == (int)npkit_fn_from_name("ReduceScatter"));
    CHECK(npkit_plugin_datatype_from_name("ncclBfloat16") == 9);
  }
  char buf[32];
  strcpy(buf, "AllGather");
  CHECK(npkit_plugin_fn_from_name(buf) == (int)npkit_fn_from_name("AllGather"));
  strcpy(buf, "Broadcast");
  CHECK(npkit_plugin_fn_from_name(buf) == (int)npkit_fn_from_name("Broadcast"));
  strcpy(buf, "SendRecv"); /* no API function of that name */
  CHECK(npkit_plugin_fn_from_name(buf) == 0);
  CHECK(npkit_plugin_fn_from_name(buf) == 0);
  strcpy(buf, "ncclInt64");
  CHECK(npkit_plugin_datatype_from_name(buf) == 4);
  strcpy(buf, "ncclUint64");
  CHECK(npkit_plugin_datatype_from_name(buf) == 5);
  CHECK(npkit_plugin_fn_from_name(NULL) == 0);
}

static void test_events_setting(void) {
  uint32_t ev = 0;
  char bad[64];
  CHECK(npkit_config_parse_plugin_events(NPKIT_DEFAULT_PLUGIN_EVENTS, &ev, bad, sizeof bad) == 0);
  CHECK(ev ==
        (NPKIT_PEV_COLL | NPKIT_PEV_P2P | NPKIT_PEV_KERNEL | NPKIT_PEV_PROXY | NPKIT_PEV_STEP));
  CHECK(npkit_config_parse_plugin_events("all", &ev, bad, sizeof bad) == 0 && ev == NPKIT_PEV_ALL);
  CHECK(npkit_config_parse_plugin_events("none", &ev, bad, sizeof bad) == 0 && ev == 0);
  CHECK(npkit_config_parse_plugin_events(" -step , -ctrl", &ev, bad, sizeof bad) == 0 &&
        ev == (NPKIT_PEV_ALL & ~(NPKIT_PEV_STEP | NPKIT_PEV_CTRL)));
  CHECK(npkit_config_parse_plugin_events("KERNEL,coll", &ev, bad, sizeof bad) == 0 &&
        ev == (NPKIT_PEV_KERNEL | NPKIT_PEV_COLL));
  ev = 99;
  CHECK(npkit_config_parse_plugin_events("coll,steps", &ev, bad, sizeof bad) == -1);
  CHECK(strcmp(bad, "steps") == 0 && ev == 99);
  CHECK(npkit_config_parse_plugin_events(" , ", &ev, bad, sizeof bad) == -1);
  int b = -1;
  CHECK(npkit_config_parse_bool("Off", &b) == 0 && b == 0);
  CHECK(npkit_config_parse_bool("YES", &b) == 0 && b == 1);
  CHECK(npkit_config_parse_bool("2", &b) == -1);
}

int main(void) {
  test_slots_basic();
  test_slots_grow();
  test_slots_thread_exit();
  test_slots_threads();
  test_names();
  test_events_setting();
  if (failures == 0) printf("plugin units: all passed\n");
  return failures ? 1 : 0;
}
