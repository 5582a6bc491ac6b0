/* Runs a libFuzzer entry point over files and folders of inputs, so that the seed corpora are
 * exercised by every build, not only by clang's. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  size_t cap = 1 << 16, n = 0, k;
  uint8_t *buf = malloc(cap);
  while (buf != NULL && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      uint8_t *b = realloc(buf, cap *= 2);
      if (b == NULL) break;
      buf = b;
    }
  }
  fclose(f);
  if (buf == NULL) return -1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int files = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) < 0) return 1;
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
      if (de->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
      if (run_file(path) < 0) return 1;
      files++;
    }
    if (d != NULL) closedir(d);
  }
  printf("%d inputs replayed\n", files);
  return files > 0 ? 0 : 1;
}
