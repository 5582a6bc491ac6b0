/* libFuzzer target: any bytes as a JSON string value.  The writer's output must always be a valid
 * JSON string, and text that needs no escaping must come out unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "json_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* the libFuzzer entry point */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int out = memfd_create("npkit-fuzz-out", MFD_CLOEXEC);
  npkit_json w;
  char err[128];
  if (out < 0 || npkit_json_init(&w, out) != 0) abort();
  npkit_json_string_n(&w, (const char *)data, size);
  if (npkit_json_finish(&w, err, sizeof(err)) != 0) abort();
  off_t len = lseek(out, 0, SEEK_END);
  char *text = malloc((size_t)len + 1);
  if (text == NULL || pread(out, text, (size_t)len, 0) != len) abort();
  if (npkit_json_check(text, (size_t)len) != 0) abort();

  int plain = 1;
  for (size_t i = 0; i < size; i++)
    if (data[i] < 0x20 || data[i] >= 0x7f || data[i] == '"' || data[i] == '\\') plain = 0;
  if (plain && ((size_t)len != size + 2 || memcmp(text + 1, data, size) != 0)) abort();
  free(text);
  close(out);
  return 0;
}
