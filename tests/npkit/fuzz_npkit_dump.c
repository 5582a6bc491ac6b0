/* libFuzzer target of the NPKit dump reader: one buffer, converted as a GPU buffer or a CPU channel.
 *
 * Input: byte 0 selects the source (bit 0) and the event table (bit 1: a small fork table with
 * ids shuffled); bytes 1-7 pick plausible clocks; bytes 8-15 the anchor tick; the rest is the
 * buffer, any length.  Besides the sanitizers, the slices handed out are checked for the
 * promises of npkit_dump.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npkit_dump.h"

static npkit_dump_event_table builtin, fork_table;
static int ready;

static const char fork_header[] =
    "#define NPKIT_EVENT_TIME_SYNC_CPU 0x3\n#define NPKIT_EVENT_TIME_SYNC_GPU 0x4\n"
    "#define NPKIT_EVENT_K_ENTRY 0x1\n#define NPKIT_EVENT_K_EXIT 0x2\n"
    "#define NPKIT_EVENT_L_ENTRY 0x6\n#define NPKIT_EVENT_L_EXIT 0x5\n"
    "#define NPKIT_EVENT_M_EXIT 0x7\n#define NPKIT_EVENT_POINT 0x8\n#define NPKIT_EVENT_INVALID 0x0\n";

static int on_slice(void *user, const npkit_dump_slice *s) {
  (void)user;
  if (s->name == NULL || s->name_len == 0 || s->name_len >= NPKIT_DUMP_NAME_MAX) abort();
  if (s->type == NPKIT_SLICE_COMPLETE && s->end_ns < s->start_ns) abort();
  if (s->type != NPKIT_SLICE_COMPLETE && s->end_ns != s->start_ns) abort();
  if (s->source == NPKIT_SOURCE_GPU && s->lane >= NPKIT_DUMP_MAX_GPU_LANES) abort();
  if (s->source == NPKIT_SOURCE_CPU && s->lane >= NPKIT_DUMP_MAX_OPEN_SLOTS) abort();
  return 0;
}

static void on_diag(void *user, npkit_dump_severity sev, const char *msg) {
  (void)user;
  (void)sev;
  if (msg == NULL || msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ready) {
    char err[256];
    npkit_dump_table_builtin(&builtin);
    npkit_dump_table_builtin(&fork_table);
    if (npkit_dump_table_parse_header(&fork_table, fork_header, sizeof(fork_header) - 1, NPKIT_HEADER_REPLACE, "fork",
                                      err, sizeof(err)) != 0)
      abort();
    ready = 1;
  }
  if (size < 16) return 0;
  npkit_dump_clock clk;
  clk.gpu_khz = 1000 + ((uint64_t)data[1] | (uint64_t)data[2] << 8 | (uint64_t)data[3] << 16) * 7 % 9999001;
  clk.cpu_num = 1 + data[4] % 8;
  /* a host clock of 1 Hz to 10 GHz: den/num in [1, 1e10] */
  clk.cpu_den =
      clk.cpu_num * (1 + ((uint64_t)data[5] | (uint64_t)data[6] << 8 | (uint64_t)data[7] << 16) * 597 % 9999999999u);
  uint64_t anchor = 0;
  memcpy(&anchor, data + 8, 8);
  npkit_dump_counters c;
  memset(&c, 0, sizeof(c));
  npkit_dump_callbacks cb = {NULL, on_slice, on_diag, NULL};
  char err[256];
  int rc = npkit_dump_convert_memory((data[0] & 2) ? &fork_table : &builtin, &clk, 0,
                                     (data[0] & 1) ? NPKIT_SOURCE_CPU : NPKIT_SOURCE_GPU, 0, anchor, data + 16,
                                     size - 16, &cb, &c, err, sizeof(err));
  if (rc != 0) abort(); /* the clocks above are always plausible and memory is not short */
  if (c.events != (size - 16) / 16) abort();
  if (c.slices + c.unpaired_entries > c.events) abort();
  uint64_t v;
  npkit_dump_parse_uint((const char *)data + 16, size - 16 < 80 ? size - 16 : 80, &v, err, sizeof(err));
  return 0;
}
