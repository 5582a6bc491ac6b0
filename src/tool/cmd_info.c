/* `npkit info LOG`: a readable summary of one event log. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "info_machine.h"
#include "log_reader.h"
#include "nccl_names.h"
#include "pool_recover.h"

#define MAX_NOTES_SHOWN 20

typedef struct fn_count {
  uint64_t calls;
  uint64_t failed;
  uint64_t total_ns;
} fn_count;

typedef struct event_counts {
  fn_count fn[NPKIT_FN_COUNT]; /* [NPKIT_FN_NONE]: ids this build does not know */
  uint64_t other_kinds;
  uint64_t first_ns, last_ns;
  uint64_t dumps;              /* NPKIT_EV_FLIGHT events */
  npkit_event last_dump;       /* the latest (by dump number) */
} event_counts;

static void help(void) {
  printf("Usage: npkit info LOG\n"
         "Prints a summary of the event log LOG: header, identity, the machine (host, GPUs,\n"
         "NVLinks, network ports, NCCL settings), communicators, threads, calls per NCCL\n"
         "function, dropped events, and whether the log is complete.\n\n"
         "Exit status (the worst that applies):\n"
         "  0  the log is complete: closed cleanly, every block intact\n"
         "  1  it cannot be read (not an npkit log, unreadable)\n"
         "  2  usage error\n"
         "  3  not closed cleanly (no END block: the process was killed, or still runs)\n"
         "  4  truncated: it ends in an incomplete or corrupt block\n"
         "  5  damaged: corrupt blocks were skipped (the rest was read)\n");
}

static void print_nccl_version(uint32_t code) {
  if (code == 0) {
    printf("unknown");
    return;
  }
  /* NCCL_VERSION_CODE is major*10000 + minor*100 + patch since 2.9, major*1000 + ... before */
  if (code >= 20900)
    printf("%u.%u.%u (%u)", code / 10000, code % 10000 / 100, code % 100, code);
  else
    printf("%u.%u.%u (%u)", code / 1000, code % 1000 / 100, code % 100, code);
}

static void print_time(uint64_t ns) {
  time_t s = (time_t)(ns / 1000000000u);
  struct tm tm;
  char buf[64];
  if (gmtime_r(&s, &tm) != NULL && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm) > 0)
    printf("%s.%09" PRIu64 " UTC", buf, ns % 1000000000u);
  else
    printf("%" PRIu64 " ns", ns);
}

static int count_events(npkit_log_reader *r, event_counts *c, char *err, size_t errlen) {
  const npkit_event *ev;
  int k;
  memset(c, 0, sizeof(*c));
  c->first_ns = UINT64_MAX;
  npkit_reader_rewind(r);
  while ((k = npkit_reader_next(r, &ev, err, errlen)) > 0) {
    if (ev->kind == NPKIT_EV_FLIGHT) {
      if (c->dumps++ == 0 || ev->u.flight.dump >= c->last_dump.u.flight.dump) c->last_dump = *ev;
    }
    if (ev->kind != NPKIT_EV_API) {
      c->other_kinds++;
      continue;
    }
    fn_count *f = &c->fn[ev->func < NPKIT_FN_COUNT ? ev->func : NPKIT_FN_NONE];
    f->calls++;
    if (ev->u.api.result != 0) f->failed++;
    if (ev->end_ns > ev->start_ns) f->total_ns += ev->end_ns - ev->start_ns;
    if (ev->start_ns < c->first_ns) c->first_ns = ev->start_ns;
    if (ev->end_ns > c->last_ns) c->last_ns = ev->end_ns;
  }
  return k;
}

static void print_header(const npkit_log_reader *r) {
  const npkit_log_header *h = &r->header;
  printf("log            %s (%" PRIu64 " bytes)\n", r->path, r->file_size);
  printf("format         version %u%s, header %u bytes, event record %u bytes%s\n", h->version,
         r->checksums ? " (blocks checksummed)" : "", r->header_size, r->record_size,
         r->newer_version ? " (newer than this npkit: new parts are skipped)" : "");
  printf("written by     npkit-preload %s, nccl.h ", h->library_version[0] ? h->library_version : "?");
  print_nccl_version(h->nccl_header_version);
  printf("\n");
  printf("host           %s, pid %" PRId32 "\n", h->host, h->pid);
  if (r->rank >= 0)
    printf("rank           %" PRId32, r->rank);
  else
    printf("rank           unknown");
  if (r->world_size >= 0) printf(" of %" PRId32, r->world_size);
  if (r->local_rank >= 0) printf(", local rank %" PRId32, r->local_rank);
  if (r->rank_source[0]) printf(" (from %s)", r->rank_source);
  printf("\n");
  if (r->device >= 0) printf("device         GPU %" PRId32 "\n", r->device);
  printf("clock base     %" PRIu64 " ns = ", h->clock_base_ns);
  print_time(h->clock_base_ns);
  printf("\n");
  if (!(h->flags & NPKIT_LOG_F_TSC_CLOCK)) {
    printf("clock source   clock_gettime(CLOCK_REALTIME)\n");
  } else if (r->has_end && r->end.clock_checks > 0) {
    printf("clock source   time-stamp counter mapped onto CLOCK_REALTIME: %" PRIu32
           " comparisons, largest difference %" PRIu64 " ns",
           r->end.clock_checks, r->end.clock_max_error_ns);
    if (r->end.clock_steps > 0) printf(", %" PRIu32 " jumps of CLOCK_REALTIME followed", r->end.clock_steps);
    printf("\n");
  } else {
    printf("clock source   time-stamp counter mapped onto CLOCK_REALTIME (no comparison recorded)\n");
  }
}

/* The event pool the log names: what it still holds, whether its process runs. */
static void print_pool(const npkit_log_reader *r) {
  printf("event pool     %s (%" PRIu64 " MB, kept in memory beyond a kill)", r->pool.path, r->pool.bytes >> 20);
  npkit_pool_summary s;
  char err[300];
  if (access(r->pool.path, F_OK) != 0) {
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    if (r->has_end || r->n_recovered > 0)
      printf(": gone (%s)\n", r->has_end ? "removed at the clean close" : "recovered");
    else if (strncmp(here, r->header.host, sizeof r->header.host) != 0)
      /* a memory file system of the process's host: readable there only */
      printf(": not on this host; it is in the memory of %.*s, where any npkit command on this log (or the library "
             "of the next process that ends there) moves the events it holds into the log\n",
             (int)strnlen(r->header.host, sizeof r->header.host), r->header.host);
    else
      printf(": gone (removed, or the host was restarted): the events after the writer's last pass are lost\n");
  } else if (npkit_pool_inspect(r->pool.path, &s, err, sizeof err) != 0) {
    printf(": unreadable (%s)\n", err);
  } else {
    printf(": %" PRIu64 " events on %" PRIu32 " threads not in the log yet; its process (pid %d) %s\n", s.pending_events,
           s.pending_threads, (int)s.pid, s.owner_alive ? "runs" : "is gone");
  }
}

static void print_state(const npkit_log_reader *r) {
  printf("blocks         %" PRIu64 " (%" PRIu64 " of events", r->n_blocks, r->n_event_blocks);
  if (r->n_packed_blocks) printf(", %" PRIu64 " of them packed", r->n_packed_blocks);
  if (r->n_unknown_blocks) printf(", %" PRIu64 " of unknown types skipped", r->n_unknown_blocks);
  printf(")\n");
  if (r->skipped_blocks)
    printf("damage         %" PRIu64 " corrupt block%s skipped (%" PRIu64 " bytes), the first at offset %" PRIu64
           ": %s; read on after %s\n",
           r->skipped_blocks, r->skipped_blocks == 1 ? "" : "s", r->skipped_bytes, r->first_skip_at, r->skip_reason,
           r->skipped_blocks == 1 ? "it" : "them");
  if (r->truncated)
    printf("state          TRUNCATED at offset %" PRIu64 ": %s; read up to there\n", r->truncated_at, r->truncation);
  else if (r->has_end)
    printf("state          closed cleanly\n");
  else if (r->n_recovered > 0)
  {
    printf("state          not closed cleanly: the process was killed; %" PRIu64 " events it had not written were "
           "recovered from its event pool (by %s on %s, at ",
           r->recovered_events, r->recovered.by, r->recovered.host);
    print_time(r->recovered.time_ns);
    printf(")\n");
  }
  else
    printf("state          not closed cleanly (no END block: the process is running, or was killed)\n");
  printf("events         %" PRIu64 " (recorded %" PRIu64 ", dropped %" PRIu64 ")\n", r->n_events, r->recorded,
         r->dropped);
  if (r->has_pool) print_pool(r);
  if (r->has_end) {
    printf("closed at      ");
    print_time(r->end.end_ns);
    printf("\n");
  }
}

static void print_comms(const npkit_log_reader *r) {
  printf("\ncommunicators  %zu\n", r->n_comms);
  if (r->n_comms == 0) return;
  printf("  %-6s %-18s %-11s %-6s %-6s %-26s %s\n", "local", "comm_id", "rank", "device", "parent", "created by", "name");
  for (size_t i = 0; i < r->n_comms; i++) {
    const npkit_comm_rec *c = &r->comms[i];
    char rank[32];
    snprintf(rank, sizeof(rank), "%" PRId32 "/%" PRId32, c->rank, c->nranks);
    printf("  %-6" PRIu32 " 0x%016" PRIx64 " %-11s %-6" PRId32 " %-6" PRIu32 " %-26s %s\n", c->local_id, c->comm_id,
           rank, c->device, c->parent, npkit_fn_name(c->created_by), c->name);
  }
}

static void print_threads(const npkit_log_reader *r) {
  printf("\nthreads        %zu\n", r->n_threads);
  if (r->n_threads == 0) return;
  printf("  %-6s %-9s %s\n", "index", "os tid", "name");
  for (size_t i = 0; i < r->n_threads; i++)
    printf("  %-6" PRIu32 " %-9" PRId32 " %s\n", r->threads[i].index, r->threads[i].os_tid, r->threads[i].name);
  for (size_t i = 0; i < r->n_counters; i++) {
    const npkit_counter_rec *c = &r->counters[i];
    if (i == 0) printf("  %-6s %-6s %-12s %s\n", "thread", "source", "recorded", "dropped");
    printf("  %-6" PRIu32 " %-6" PRIu32 " %-12" PRIu64 " %" PRIu64 "\n", c->thread, c->source, c->recorded, c->dropped);
  }
}

static void print_calls(const event_counts *c) {
  printf("\ncalls\n");
  printf("  %-28s %-10s %-8s %s\n", "function", "calls", "failed", "total time (us)");
  for (unsigned fn = 1; fn <= NPKIT_FN_COUNT; fn++) {
    unsigned id = fn % NPKIT_FN_COUNT; /* unknown ids last */
    const fn_count *f = &c->fn[id];
    if (f->calls == 0) continue;
    printf("  %-28s %-10" PRIu64 " %-8" PRIu64 " %" PRIu64 ".%03" PRIu64 "\n", id ? npkit_fn_name(id) : "(unknown id)",
           f->calls, f->failed, f->total_ns / 1000, f->total_ns % 1000);
  }
  if (c->other_kinds) printf("  %-28s %" PRIu64 "\n", "(other event kinds)", c->other_kinds);
  if (c->first_ns <= c->last_ns) {
    uint64_t d = c->last_ns - c->first_ns;
    printf("span           %" PRIu64 ".%06" PRIu64 " s from first call to last\n", d / 1000000000u, d % 1000000000u / 1000);
  }
}

/* The flight recorder's dumps: the latest, why, and what a ring lost. */
static void print_dumps(const npkit_log_reader *r, const event_counts *c) {
  static const char *const triggers[] = {"?", "exit", "dump signal", "hang", "NCCL error", "ncclCommAbort", "fatal signal"};
  if (c->dumps == 0) return;
  const npkit_ev_flight *f = &c->last_dump.u.flight;
  printf("\ndumps          %" PRIu64 " in the log; the latest, number %" PRIu32 ", at ", c->dumps, f->dump);
  print_time(c->last_dump.start_ns);
  printf(" (%s", f->trigger < sizeof triggers / sizeof triggers[0] ? triggers[f->trigger] : "?");
  if (f->signal != 0) printf(", signal %" PRId32, f->signal);
  if (f->reason[0] != '\0') printf(": %.*s", (int)sizeof f->reason, f->reason);
  printf("), %" PRIu32 " items in flight\n", f->inflight);
  if ((r->header.flags & NPKIT_LOG_F_RING) || f->ring_bytes > 0)
    printf("flight ring    %" PRIu64 " MB: %" PRIu64 " events kept, %" PRIu64 " older ones overwritten\n",
           f->ring_bytes >> 20, f->events_kept, f->events_overwritten);
}

static void print_notes(const npkit_log_reader *r) {
  static const char *const levels[] = {"note", "error", "warning", "info"};
  if (r->n_notes == 0) return;
  printf("\nnotes          %zu\n", r->n_notes + (size_t)r->notes_omitted);
  for (size_t i = 0; i < r->n_notes && i < MAX_NOTES_SHOWN; i++) {
    const npkit_log_note *n = &r->notes[i];
    /* the text comes from the file: keep terminals safe */
    printf("  %-8s ", levels[n->level <= 3 ? n->level : 0]);
    for (const char *p = n->text; *p; p++) putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
    printf("\n");
  }
  if (r->n_notes > MAX_NOTES_SHOWN) printf("  ... (%zu more)\n", r->n_notes - MAX_NOTES_SHOWN);
}

int npkit_cmd_info(int argc, char **argv) {
  const char *log = NULL;
  for (int i = 1; i < argc; i++) {
    if (npkit_cli_is_help(argv[i])) {
      help();
      return NPKIT_EXIT_OK;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') return npkit_cli_usage_error("info", "unknown option '%s'", argv[i]);
    if (log != NULL) return npkit_cli_usage_error("info", "one log at a time");
    log = argv[i];
  }
  if (log == NULL) return npkit_cli_usage_error("info", "missing LOG");

  char err[512];
  npkit_log_reader *r;
  int opened = npkit_reader_open(log, &r, err, sizeof(err));
  /* a log not closed that names its event pool: its process may have been killed */
  if (opened == 0 && r->has_pool && !r->has_end && npkit_cli_recover("info", log)) {
    npkit_reader_close(r);
    opened = npkit_reader_open(log, &r, err, sizeof(err));
  }
  if (opened != 0) {
    fprintf(stderr, "npkit info: %s\n", err);
    return NPKIT_EXIT_FAIL;
  }
  event_counts counts;
  char note_err[512];
  int k = count_events(r, &counts, err, sizeof(err));
  print_header(r);
  print_state(r);
  int mk = npkit_info_machine(r, note_err, sizeof(note_err));
  print_comms(r);
  print_threads(r);
  print_calls(&counts);
  print_dumps(r, &counts);
  print_notes(r);
  char note[400];
  if (r->skipped_blocks) fprintf(stderr, "npkit info: warning: %s: %s\n", log, npkit_reader_damage(r, note, sizeof(note)));
  if (r->newer_version) fprintf(stderr, "npkit info: note: %s: %s\n", log, npkit_reader_version_note(r, note, sizeof(note)));
  int status = r->skipped_blocks ? NPKIT_EXIT_DAMAGED
               : r->truncated    ? NPKIT_EXIT_TRUNCATED
               : !r->has_end     ? NPKIT_EXIT_NOT_CLOSED
                                 : NPKIT_EXIT_OK;
  npkit_reader_close(r);
  if (mk != 0) fprintf(stderr, "npkit info: %s\n", note_err);
  if (k < 0) {
    fprintf(stderr, "npkit info: %s\n", err);
    return NPKIT_EXIT_FAIL;
  }
  return status;
}
