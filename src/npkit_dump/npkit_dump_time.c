/* Clock values of an NPKit dump and the conversion of its timestamps to CLOCK_REALTIME ns.
 *
 * The reference converter computes in floating-point microseconds; at epoch magnitudes (~1.7e15 us)
 * a double keeps only ~0.25 us, so here everything is integer: 128-bit intermediates, one rounding
 * at the end. */
#include "npkit_dump.h"

#include <stdio.h>
#include <string.h>

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* Host clock fractions beyond this are rejected: it keeps (ticks % den) × num × 1e9 inside 128 bits. */
#define MAX_FRACTION_TERM 1000000000000ull /* 1e12 */
#define MIN_GPU_KHZ 1000ull                /* 1 MHz */
#define MAX_GPU_KHZ 10000000ull            /* 10 GHz */

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* The text as it may be shown in a message: at most 24 bytes, non-printable bytes as '?'. */
static void shown_text(char *out, size_t outlen, const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n && i < 24 && k + 1 < outlen; i++) {
    unsigned char c = (unsigned char)s[i];
    out[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (n > 24 && k + 4 < outlen) {
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k] = '\0';
}

int npkit_dump_parse_uint(const char *text, size_t len, uint64_t *value, char *err, size_t errlen) {
  size_t a = 0, b = len;
  while (a < b && is_blank(text[a])) a++;
  while (b > a && is_blank(text[b - 1])) b--;
  char shown[40];
  shown_text(shown, sizeof(shown), text + a, b - a);
  if (a == b) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "empty (a number was expected)");
    return NPKIT_DUMP_EFORMAT;
  }
  if (text[a] == '-') {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "negative value '%s'", shown);
    return NPKIT_DUMP_EFORMAT;
  }
  if (text[a] == '+') a++;
  uint64_t v = 0;
  if (a == b) goto not_a_number;
  for (size_t i = a; i < b; i++) {
    char c = text[i];
    if (c < '0' || c > '9') goto not_a_number;
    unsigned d = (unsigned)(c - '0');
    if (v > (UINT64_MAX - d) / 10) {
      if (err != NULL && errlen > 0) snprintf(err, errlen, "value '%s' is too large", shown);
      return NPKIT_DUMP_EFORMAT;
    }
    v = v * 10 + d;
  }
  *value = v;
  return 0;
not_a_number:
  if (err != NULL && errlen > 0) snprintf(err, errlen, "not an integer: '%s'", shown);
  return NPKIT_DUMP_EFORMAT;
}

int npkit_dump_check_clock(const npkit_dump_clock *c, char *err, size_t errlen) {
  if (c->gpu_khz < MIN_GPU_KHZ || c->gpu_khz > MAX_GPU_KHZ) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen,
               "GPU clock rate %llu kHz is not plausible (expected 1 MHz to 10 GHz, i.e. 1000 to 10000000)",
               (unsigned long long)c->gpu_khz);
    return NPKIT_DUMP_EFORMAT;
  }
  if (c->cpu_num == 0 || c->cpu_den == 0) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "host clock period %llu/%llu s has a zero term", (unsigned long long)c->cpu_num,
               (unsigned long long)c->cpu_den);
    return NPKIT_DUMP_EFORMAT;
  }
  if (c->cpu_num > MAX_FRACTION_TERM || c->cpu_den > MAX_FRACTION_TERM) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "host clock period %llu/%llu s has a term above 10^12", (unsigned long long)c->cpu_num,
               (unsigned long long)c->cpu_den);
    return NPKIT_DUMP_EFORMAT;
  }
  /* frequency den/num between 1 Hz and 10 GHz */
  if (c->cpu_den < c->cpu_num || (u128)c->cpu_den > (u128)c->cpu_num * 10000000000ull) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "host clock period %llu/%llu s is not plausible (expected a clock of 1 Hz to 10 GHz)",
               (unsigned long long)c->cpu_num, (unsigned long long)c->cpu_den);
    return NPKIT_DUMP_EFORMAT;
  }
  return 0;
}

/* n / d rounded to nearest, halves away from zero; d > 0. */
static i128 div_round(i128 n, u128 d) {
  if (n >= 0) return (i128)(((u128)n + d / 2) / d);
  return -(i128)(((u128)(-n) + d / 2) / d);
}

static int fits_i64(i128 v) { return v >= (i128)INT64_MIN && v <= (i128)INT64_MAX; }

int npkit_dump_cpu_ns(const npkit_dump_clock *c, uint64_t ticks, int64_t *ns) {
  if (c->cpu_num == 1 && c->cpu_den == 1000000000) { /* std::chrono's period on Linux: ns already */
    if (ticks > (uint64_t)INT64_MAX) return -1;
    *ns = (int64_t)ticks;
    return 0;
  }
  if (c->cpu_den == 0 || c->cpu_num > MAX_FRACTION_TERM || c->cpu_den > MAX_FRACTION_TERM) return -1;
  /* ticks × num × 1e9 / den, split as q × den + r so that no product exceeds 128 bits */
  u128 factor = (u128)c->cpu_num * 1000000000u;
  u128 q = ticks / c->cpu_den, r = ticks % c->cpu_den;
  if (factor != 0 && q > (u128)INT64_MAX / factor) return -1;
  u128 v = q * factor + (r * factor * 2 + c->cpu_den) / ((u128)c->cpu_den * 2);
  if (v > (u128)INT64_MAX) return -1;
  *ns = (int64_t)v;
  return 0;
}

int npkit_dump_gpu_ns(const npkit_dump_clock *c, int64_t base_ns, uint64_t base_ticks, uint64_t ticks, int64_t *ns) {
  if (c->gpu_khz == 0) return -1;
  /* 64-bit arithmetic for the usual case (an event less than ~5 h of ticks after its base) */
  if (ticks >= base_ticks && ticks - base_ticks <= UINT64_MAX / 1000000) {
    uint64_t off = ((ticks - base_ticks) * 1000000 + c->gpu_khz / 2) / c->gpu_khz;
    if (__builtin_add_overflow(base_ns, (int64_t)off, ns)) return -1;
    return 0;
  }
  i128 delta = (i128)ticks - (i128)base_ticks; /* |delta| < 2^64 */
  i128 v = (i128)base_ns + div_round(delta * 1000000, c->gpu_khz);
  if (!fits_i64(v)) return -1;
  *ns = (int64_t)v;
  return 0;
}
