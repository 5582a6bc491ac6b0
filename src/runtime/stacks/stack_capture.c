#include "stack_capture.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "diag.h"
#include "notes.h"
#include "npkit/event_log.h"
#include "stack_symbols.h"
#include "string_table.h"

/* Frames that precede the caller's: unw_backtrace's own and this library's (capture, the per-call
 * hook, the wrapper), plus one to spare; every frame asked for costs time. */
#define SKIP_MAX 5
#define SLOTS (2 * NPKIT_STACK_MAX_SITES)
/* Frame strings go to the log in blocks of about this size. */
#define STRING_BLOCK_BYTES (1u << 20)

_Static_assert((SLOTS & (SLOTS - 1)) == 0, "slot count is a power of two");

typedef struct site {
  uint64_t hash;
  uint32_t id; /* from 1: the index in `sites` + 1 */
  uint32_t n;
  uintptr_t *ips;
} site;

typedef int (*backtrace_fn)(void **buffer, int size);

uint32_t npkit_stack_depth;
static backtrace_fn unwind;
static uintptr_t self_lo, self_hi; /* this library's mapped address range */
static site *sites;                /* NPKIT_STACK_MAX_SITES entries */
static uintptr_t *site_ips;        /* their frames, npkit_stack_depth each */
static _Atomic(site *) slots[SLOTS];
static uint32_t n_sites; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int full_warned;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
  uintptr_t probe = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (probe < lo || probe >= hi) return 0;
  self_lo = lo;
  self_hi = hi;
  return 1;
}

static int lines; /* NPKIT_STACK_LINES */

/* Loads libunwind and sets up the table for `depth` frames (0: stays off).  Returns 0, or -1 after
 * a note when stacks cannot be recorded. */
static int start(uint32_t depth) {
  if (depth == 0) return 0;
  if (depth > NPKIT_MAX_STACK_DEPTH) depth = NPKIT_MAX_STACK_DEPTH;
  void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  backtrace_fn fn = lib != NULL ? (backtrace_fn)dlsym(lib, "unw_backtrace") : NULL;
  if (fn == NULL) {
    const char *why = dlerror();
    npkit_note(NPKIT_LEVEL_WARN,
               "NPKIT_STACK_DEPTH=%u: libunwind.so.8 cannot be used (%s); no call stacks are "
               "recorded (install libunwind8)",
               depth, why != NULL ? why : "unw_backtrace not found");
    return -1;
  }
  dl_iterate_phdr(find_self, (void *)(uintptr_t)&npkit_stack_capture);
  sites = calloc(NPKIT_STACK_MAX_SITES, sizeof *sites);
  site_ips = calloc((size_t)NPKIT_STACK_MAX_SITES * depth, sizeof *site_ips);
  if (sites == NULL || site_ips == NULL || self_hi == 0) {
    free(sites);
    free(site_ips);
    sites = NULL;
    site_ips = NULL;
    npkit_note(NPKIT_LEVEL_WARN, "NPKIT_STACK_DEPTH=%u: out of memory for the call-site table; no "
               "call stacks are recorded", depth);
    return -1;
  }
  unwind = fn;
  npkit_stack_depth = depth;
  return 0;
}

static int in_self(const void *ip) {
  return (uintptr_t)ip >= self_lo && (uintptr_t)ip < self_hi;
}

static int same(const site *s, uint64_t hash, void *const *ips, uint32_t n) {
  if (s->hash != hash || s->n != n) return 0;
  for (uint32_t i = 0; i < n; i++)
    if (s->ips[i] != (uintptr_t)ips[i]) return 0;
  return 1;
}

static uint64_t add_site(size_t slot, uint64_t hash, void *const *ips, uint32_t n) {
  uint64_t id = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = slot;; i = (i + 1) & (SLOTS - 1)) {
    site *s = atomic_load_explicit(&slots[i], memory_order_acquire);
    if (s != NULL) {
      if (same(s, hash, ips, n)) {
        id = s->id; /* another thread added it meanwhile */
        break;
      }
      continue;
    }
    if (n_sites >= NPKIT_STACK_MAX_SITES) break;
    s = &sites[n_sites];
    s->hash = hash;
    s->id = n_sites + 1;
    s->n = n;
    s->ips = &site_ips[(size_t)n_sites * npkit_stack_depth];
    for (uint32_t k = 0; k < n; k++) s->ips[k] = (uintptr_t)ips[k];
    atomic_store_explicit(&slots[i], s, memory_order_release);
    n_sites++;
    id = s->id;
    break;
  }
  pthread_mutex_unlock(&lock);
  if (id == 0 && !atomic_exchange(&full_warned, 1))
    npkit_note(NPKIT_LEVEL_WARN, "more than %u distinct call stacks: calls from further call sites "
               "are recorded without a stack", NPKIT_STACK_MAX_SITES);
  return id;
}

__attribute__((noinline)) uint64_t npkit_stack_capture(void) {
  void *buf[NPKIT_MAX_STACK_DEPTH + SKIP_MAX];
  int n = unwind(buf, (int)npkit_stack_depth + SKIP_MAX);
  /* libunwind's frames, then ours, then the caller's */
  int i = 0;
  while (i < n && !in_self(buf[i])) i++;
  if (i == n) return 0;
  while (i < n && in_self(buf[i])) i++;
  uint32_t m = (uint32_t)(n - i);
  if (m > npkit_stack_depth) m = npkit_stack_depth;
  if (m == 0) return 0;
  void *const *ips = buf + i;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ m;
  for (uint32_t k = 0; k < m; k++) {
    h = (h ^ (uint64_t)(uintptr_t)ips[k]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  size_t slot = (size_t)h & (SLOTS - 1);
  for (size_t k = slot;; k = (k + 1) & (SLOTS - 1)) {
    site *s = atomic_load_explicit(&slots[k], memory_order_acquire);
    if (s == NULL) return add_site(slot, h, ips, m);
    if (same(s, h, ips, m)) return s->id;
  }
}

static int cmp_ip(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static size_t find_ip(const uintptr_t *sorted, size_t n, uintptr_t ip) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < ip) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/* STRING blocks of the frame texts, each below STRING_BLOCK_BYTES (a text is at most
 * NPKIT_FRAME_TEXT_MAX bytes). */
static int write_frames(npkit_log_writer *log, char **text, const uint32_t *ids, size_t n) {
  unsigned char *buf = malloc(STRING_BLOCK_BYTES);
  if (buf == NULL) return -1;
  size_t used = 0;
  uint32_t count = 0;
  for (size_t i = 0; i <= n; i++) {
    size_t len = i < n ? strlen(text[i]) : 0;
    size_t need = sizeof(npkit_string_rec) + ((len + 7) & ~(size_t)7);
    if (count > 0 && (i == n || used + need > STRING_BLOCK_BYTES)) {
      npkit_logw_append(log, NPKIT_BLOCK_STRING, count, buf, used);
      used = 0;
      count = 0;
    }
    if (i == n) break;
    npkit_string_rec rec = {ids[i], (uint32_t)len};
    memcpy(buf + used, &rec, sizeof rec);
    memcpy(buf + used + sizeof rec, text[i], len);
    size_t padded = sizeof rec + ((len + 7) & ~(size_t)7);
    memset(buf + used + sizeof rec + len, 0, padded - sizeof rec - len);
    used += padded;
    count++;
  }
  free(buf);
  return 0;
}

static int write_stacks(npkit_log_writer *log, uint32_t count, const uintptr_t *ips, size_t n_ips,
                        const uint32_t *ids) {
  size_t size = 0;
  for (uint32_t i = 0; i < count; i++)
    size += sizeof(npkit_stack_rec) + (((size_t)sites[i].n * sizeof(uint32_t) + 7) & ~(size_t)7);
  unsigned char *buf = calloc(1, size);
  if (buf == NULL) return -1;
  size_t off = 0;
  for (uint32_t i = 0; i < count; i++) {
    const site *s = &sites[i];
    npkit_stack_rec rec = {s->id, s->n};
    memcpy(buf + off, &rec, sizeof rec);
    off += sizeof rec;
    for (uint32_t k = 0; k < s->n; k++) {
      uint32_t id = ids[find_ip(ips, n_ips, s->ips[k])];
      memcpy(buf + off + k * sizeof id, &id, sizeof id);
    }
    off += ((size_t)s->n * sizeof(uint32_t) + 7) & ~(size_t)7;
  }
  npkit_logw_append(log, NPKIT_BLOCK_STACK, count, buf, size);
  free(buf);
  return 0;
}

static void attach(const npkit_source_log *at) {
  lines = at->cfg->stack_lines;
  (void)start(at->cfg->stack_depth);
}

/* Symbolises the stacks seen so far and appends them to the log (STRING blocks for the frames,
 * one STACK block), with file:line through addr2line when NPKIT_STACK_LINES asks. */
static void detach(npkit_log_writer *log) {
  if (npkit_stack_depth == 0 || log == NULL) return;
  /* Sites below the count are complete and never change; a call still running on another
   * thread may add one more, which is left out. */
  pthread_mutex_lock(&lock);
  uint32_t count = n_sites;
  pthread_mutex_unlock(&lock);
  if (count == 0) return;

  size_t n_ips = 0, distinct = 0;
  for (uint32_t i = 0; i < count; i++) n_ips += sites[i].n;
  uintptr_t *ips = malloc(n_ips * sizeof *ips);
  uint32_t *ids = NULL;
  char **text = NULL;
  if (ips == NULL) goto oom;
  n_ips = 0;
  for (uint32_t i = 0; i < count; i++)
    for (uint32_t k = 0; k < sites[i].n; k++) ips[n_ips++] = sites[i].ips[k];
  qsort(ips, n_ips, sizeof *ips, cmp_ip);
  for (size_t i = 0; i < n_ips; i++)
    if (distinct == 0 || ips[i] != ips[distinct - 1]) ips[distinct++] = ips[i];
  ids = malloc(distinct * sizeof *ids);
  text = calloc(distinct, sizeof *text);
  if (ids == NULL || text == NULL || npkit_symbolise(ips, distinct, lines, text) != 0) goto oom;
  for (size_t i = 0; i < distinct; i++) ids[i] = npkit_string_id_new();
  if (write_frames(log, text, ids, distinct) != 0 || write_stacks(log, count, ips, distinct, ids) != 0)
    goto oom;
  npkit_debug("%u call sites, %zu distinct frames", count, distinct);
  goto done;
oom:
  npkit_warn("out of memory while writing the call stacks; the log has stack ids without stacks");
done:
  if (text != NULL)
    for (size_t i = 0; i < distinct; i++) free(text[i]);
  free(text);
  free(ids);
  free(ips);
}

const npkit_source_ops npkit_source_stacks = {"stacks", NULL, attach, NULL, detach, NULL, NULL};
