/* Inside the plugin renderer: NCCL's API-level events (NPKIT_EV_PLUGIN_API, NCCL 2.28+) as a table
 * the join reads.  What NCCL links is kept here: a task's parent is its CollApi (its `api`), and a
 * CollApi names the wrapped call that was running on its thread (thread, call_no).  Entries are
 * made by whichever comes first in the log, the API record or a task naming it (the writer
 * appends each thread's events in turn), and live in a table of NPKIT_PLUGIN_TASKS slots indexed
 * by id: an entry is forgotten when an id that many later needs its slot. */
#ifndef NPKIT_TRACE_PLUGIN_API_H
#define NPKIT_TRACE_PLUGIN_API_H

#include <stdint.h>

#include "npkit/event_log.h"

/* The latest tasks remembered: the slots of this table, of the renderer's tasks (trace_plugin.h)
 * and of the report's task spans. */
#define NPKIT_PLUGIN_TASKS 16384u
#define NPKIT_PLUGIN_NO_POS UINT64_MAX

typedef struct npkit_plugin_api {
  uint64_t id;            /* 0: empty */
  uint64_t call_no;       /* the wrapped call (IN_CALL), 0 */
  uint64_t call_pos;      /* that call while it is held for its task, NPKIT_PLUGIN_NO_POS */
  uint64_t call_seq;      /* its seq once read, NPKIT_NO_SEQ */
  uint64_t task;          /* the task that named it before its call was read, 0 */
  uint64_t user_tag;      /* ABI v7: the call's user profiler tag, 0 */
  uint32_t thread;        /* the thread NCCL reported it on */
  uint32_t member, row;   /* npkit report: the call's instance member and table row, UINT32_MAX */
  uint16_t fn;            /* the call's function once read */
  uint8_t type, flags;    /* NPKIT_PAPI_*; 0 while only a task has named it */
  uint8_t have_record;
} npkit_plugin_api;

typedef struct npkit_plugin_api_table npkit_plugin_api_table;

npkit_plugin_api_table *npkit_plugin_api_new(void);
void npkit_plugin_api_free(npkit_plugin_api_table *t);
/* The entry of id, made (empty) when absent; NULL for id 0. */
npkit_plugin_api *npkit_plugin_api_get(npkit_plugin_api_table *t, uint64_t id);
/* The entry, NULL when absent. */
npkit_plugin_api *npkit_plugin_api_find(npkit_plugin_api_table *t, uint64_t id);
/* An API record: fills (or makes) its entry, and indexes it by (thread, call_no). */
npkit_plugin_api *npkit_plugin_api_record(npkit_plugin_api_table *t, const npkit_event *ev);
/* The CollApi or P2pApi record of the wrapped call (thread, call_no), NULL when none was read. */
npkit_plugin_api *npkit_plugin_api_of_call(npkit_plugin_api_table *t, uint32_t thread, uint64_t call_no);

#endif
