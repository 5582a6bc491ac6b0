/*
 * The interface of a trace source: a renderer of some event kinds of a rank's log (CUPTI records,
 * NCCL's profiler-plugin events, NPKit dump events, the application's marks).  The dispatcher
 * (trace_render.c) keeps one table of them and hands each event to the source whose kinds it is;
 * a new source is one file that defines its npkit_trace_source, and one line in that table.
 *
 * API calls are not a source: they are the spine every trace has (trace_api.c).  A source may
 * still see them first (`call`): the plugin holds calls back until NCCL's own events for them
 * have been read, to write both together.
 */
#ifndef NPKIT_TRACE_SOURCE_H
#define NPKIT_TRACE_SOURCE_H

#include <stddef.h>

#include "log_reader.h"
#include "trace_api.h"
#include "trace_sink.h"

typedef struct npkit_trace_source {
  const char *name;
  /* whether events of this kind are the source's */
  int (*kinds)(unsigned kind);
  /* its state for one log; NULL when memory is short (its events are then counted as skipped) */
  void *(*create)(const npkit_log_reader *r, npkit_api_fmt *fmt);
  /* writes one event of its kinds; returns 1 when the event was taken, 0 when it was not */
  int (*event)(void *self, npkit_sink *s, const npkit_event *ev);
  /* NULL, or takes an API call and writes it (now or later) instead of the dispatcher */
  void (*call)(void *self, npkit_api_fmt *fmt, npkit_sink *s, const npkit_event *ev);
  /* writes what is known only at the end (track names, counts) */
  void (*finish)(void *self, npkit_sink *s);
  void (*destroy)(void *self);
  /* NULL, or reads one event of its kinds before any is written, for a sink that wants its flows
   * ahead (npkit_sink_flow_ahead); the ids told are those `event` will give */
  void (*ahead)(void *self, npkit_sink *s, const npkit_event *ev);
} npkit_trace_source;

extern const npkit_trace_source npkit_plugin_trace_source; /* trace_plugin.c */
extern const npkit_trace_source npkit_marks_trace_source;  /* trace_marks.c */
extern const npkit_trace_source npkit_dump_trace_source;   /* trace_npkit_dump.c */
extern const npkit_trace_source npkit_cupti_trace_source;  /* trace_cupti.c */
extern const npkit_trace_source npkit_flight_trace_source; /* trace_flight.c */
extern const npkit_trace_source npkit_machine_trace_source; /* trace_machine.c */

#endif /* NPKIT_TRACE_SOURCE_H */
