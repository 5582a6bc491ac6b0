#include "trace_plugin_api.h"

#include <stdlib.h>
#include <string.h>


#define SLOTS NPKIT_PLUGIN_TASKS
#define CALL_BUCKETS (SLOTS * 2u)

struct npkit_plugin_api_table {
  npkit_plugin_api *slots;
  int32_t *by_call; /* (thread, call_no) -> slot, open addressing; -1 empty */
};

npkit_plugin_api_table *npkit_plugin_api_new(void) {
  npkit_plugin_api_table *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  t->slots = calloc(SLOTS, sizeof *t->slots);
  t->by_call = malloc(CALL_BUCKETS * sizeof *t->by_call);
  if (t->slots == NULL || t->by_call == NULL) {
    npkit_plugin_api_free(t);
    return NULL;
  }
  for (uint32_t i = 0; i < CALL_BUCKETS; i++) t->by_call[i] = -1;
  return t;
}

void npkit_plugin_api_free(npkit_plugin_api_table *t) {
  if (t == NULL) return;
  free(t->slots);
  free(t->by_call);
  free(t);
}

static void reset(npkit_plugin_api *a, uint64_t id) {
  memset(a, 0, sizeof *a);
  a->id = id;
  a->call_pos = NPKIT_PLUGIN_NO_POS;
  a->call_seq = NPKIT_NO_SEQ;
  a->member = a->row = UINT32_MAX;
}

npkit_plugin_api *npkit_plugin_api_find(npkit_plugin_api_table *t, uint64_t id) {
  if (id == 0) return NULL;
  npkit_plugin_api *a = &t->slots[id % SLOTS];
  return a->id == id ? a : NULL;
}

npkit_plugin_api *npkit_plugin_api_get(npkit_plugin_api_table *t, uint64_t id) {
  if (id == 0) return NULL;
  npkit_plugin_api *a = &t->slots[id % SLOTS];
  if (a->id != id) reset(a, id); /* an older one leaves; its call index entry goes stale */
  return a;
}

static uint32_t call_hash(uint32_t thread, uint64_t call_no) {
  uint64_t h = ((uint64_t)thread << 40) ^ call_no;
  h *= 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 33) % CALL_BUCKETS;
}

/* A bucket holds a slot index; it is valid while that slot's entry has the same key. */
static int32_t *call_bucket(npkit_plugin_api_table *t, uint32_t thread, uint64_t call_no, int for_insert) {
  uint32_t b = call_hash(thread, call_no);
  for (uint32_t probe = 0; probe < 16; probe++, b = (b + 1) % CALL_BUCKETS) {
    int32_t s = t->by_call[b];
    if (s < 0) return for_insert ? &t->by_call[b] : NULL;
    const npkit_plugin_api *a = &t->slots[s];
    int live = a->have_record && a->call_no != 0;
    if (live && a->thread == thread && a->call_no == call_no) return &t->by_call[b];
    if (!live && for_insert) return &t->by_call[b]; /* stale: reuse */
  }
  return for_insert ? &t->by_call[call_hash(thread, call_no)] : NULL; /* crowded: overwrite */
}

npkit_plugin_api *npkit_plugin_api_record(npkit_plugin_api_table *t, const npkit_event *ev) {
  const npkit_ev_plugin_api *r = &ev->u.plugin_api;
  npkit_plugin_api *a = npkit_plugin_api_get(t, r->api);
  if (a == NULL) return NULL;
  a->type = r->type;
  a->flags = r->flags;
  a->thread = ev->thread;
  a->call_no = (r->flags & NPKIT_PAPI_IN_CALL) ? r->call_no : 0;
  a->user_tag = r->user_tag;
  a->have_record = 1;
  /* a call's own CollApi or P2pApi is looked up by its call (the readers check the type) */
  if (a->call_no != 0 && (r->type == NPKIT_PAPI_COLL || r->type == NPKIT_PAPI_P2P)) {
    int32_t *b = call_bucket(t, a->thread, a->call_no, 1);
    *b = (int32_t)(a - t->slots);
  }
  return a;
}

npkit_plugin_api *npkit_plugin_api_of_call(npkit_plugin_api_table *t, uint32_t thread, uint64_t call_no) {
  if (call_no == 0) return NULL;
  int32_t *b = call_bucket(t, thread, call_no, 0);
  return b != NULL ? &t->slots[*b] : NULL;
}
