#include "stack_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag.h"

extern char **environ;

/* Addresses handed to one addr2line run (its command line stays short). */
#define LINES_BATCH 256

typedef struct symbol {
  uintptr_t value, size;
  const char *name;
} symbol;

typedef struct module {
  uintptr_t base;  /* load bias: file address = address - base */
  uintptr_t lo, hi;
  char path[1024];
  int loaded;      /* symbols looked for */
  void *map;
  size_t map_len;
  symbol *syms;    /* sorted by value */
  size_t n_syms;
} module;

typedef struct modules {
  module *m;
  size_t n, cap;
} modules;

static int add_module(struct dl_phdr_info *info, size_t size, void *arg) {
  modules *ms = arg;
  if (ms->n == ms->cap) {
    size_t cap = ms->cap ? 2 * ms->cap : 32;
    module *m = realloc(ms->m, cap * sizeof *m);
    if (m == NULL) return 1;
    ms->m = m;
    ms->cap = cap;
  }
  module *m = &ms->m[ms->n];
  memset(m, 0, sizeof *m);
  m->base = info->dlpi_addr;
  m->lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < m->lo) m->lo = a;
    if (a + ph->p_memsz > m->hi) m->hi = a + ph->p_memsz;
  }
  if (m->hi == 0) return 0;
  if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
    snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
  } else if (ms->n == 0) { /* the main program is listed first, without a name */
    ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
    m->path[k > 0 ? k : 0] = '\0';
  }
  ms->n++;
  return 0;
}

static module *find_module(modules *ms, uintptr_t addr) {
  for (size_t i = 0; i < ms->n; i++)
    if (addr >= ms->m[i].lo && addr < ms->m[i].hi) return &ms->m[i];
  return NULL;
}

static int cmp_symbol(const void *a, const void *b) {
  const symbol *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->size < y->size) - (x->size > y->size); /* the sized alias first */
}

/* The function symbols of the module's file: .symtab if present, else .dynsym.  Every offset of
 * the file is checked against its size: a damaged file yields no names, never a crash. */
static void load_symbols(module *m) {
  m->loaded = 1;
  if (m->path[0] == '\0') return;
  int fd = open(m->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
    close(fd);
    return;
  }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  m->map = map;
  m->map_len = (size_t)st.st_size;
  const unsigned char *base = map;
  const ElfW(Ehdr) *eh = map;
  size_t len = m->map_len;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff == 0 || eh->e_shoff > len ||
      (len - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
    return;
  const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
  const ElfW(Shdr) *tab = NULL;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_SYMTAB) tab = &sh[i];
    if (sh[i].sh_type == SHT_DYNSYM && tab == NULL) tab = &sh[i];
  }
  if (tab == NULL || tab->sh_link >= eh->e_shnum || tab->sh_entsize != sizeof(ElfW(Sym)) ||
      tab->sh_offset > len || tab->sh_size > len - tab->sh_offset)
    return;
  const ElfW(Shdr) *str = &sh[tab->sh_link];
  if (str->sh_offset > len || str->sh_size > len - str->sh_offset || str->sh_size == 0) return;
  const char *names = (const char *)base + str->sh_offset;
  const ElfW(Sym) *sym = (const ElfW(Sym) *)(base + tab->sh_offset);
  size_t n = tab->sh_size / sizeof(ElfW(Sym));
  m->syms = malloc((n ? n : 1) * sizeof *m->syms);
  if (m->syms == NULL) return;
  for (size_t i = 0; i < n; i++) {
    int type = ELF64_ST_TYPE(sym[i].st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[i].st_shndx == SHN_UNDEF ||
        sym[i].st_value == 0 || sym[i].st_name >= str->sh_size)
      continue;
    const char *name = names + sym[i].st_name;
    if (memchr(name, '\0', str->sh_size - sym[i].st_name) == NULL || name[0] == '\0') continue;
    m->syms[m->n_syms++] = (symbol){sym[i].st_value, sym[i].st_size, name};
  }
  qsort(m->syms, m->n_syms, sizeof *m->syms, cmp_symbol);
}

/* The function holding file address `addr`, or NULL. */
static const symbol *lookup(module *m, uintptr_t addr) {
  if (!m->loaded) load_symbols(m);
  size_t lo = 0, hi = m->n_syms;
  while (lo < hi) { /* first symbol above addr */
    size_t mid = lo + (hi - lo) / 2;
    if (m->syms[mid].value <= addr) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return NULL;
  uintptr_t value = m->syms[lo - 1].value;
  size_t i = lo - 1;
  while (i > 0 && m->syms[i - 1].value == value) i--; /* the sized alias of that address */
  const symbol *s = &m->syms[i];
  if (s->size > 0 && addr >= s->value + s->size) return NULL;
  return s;
}

typedef char *(*demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

/* "function+0xOFF (library+0xOFF)" into buf. */
static void describe(modules *ms, uintptr_t ip, demangle_fn demangle, char *buf, size_t len) {
  module *m = find_module(ms, ip - 1);
  if (m == NULL) {
    snprintf(buf, len, "0x%" PRIxPTR, ip);
    return;
  }
  const char *lib = m->path[0] ? base_name(m->path) : "??";
  const symbol *s = lookup(m, ip - 1 - m->base);
  const char *name = s != NULL ? s->name : NULL;
  uintptr_t sym_addr = s != NULL ? s->value + m->base : 0;
  Dl_info info;
  if (name == NULL && dladdr((void *)(ip - 1), &info) != 0 && info.dli_sname != NULL) {
    name = info.dli_sname;
    sym_addr = (uintptr_t)info.dli_saddr;
  }
  char *plain = NULL;
  if (name != NULL && demangle != NULL && name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    plain = demangle(name, NULL, NULL, &status);
    if (status == 0 && plain != NULL) name = plain;
  }
  /* long C++ names are cut so that the library part always fits */
  if (name != NULL)
    snprintf(buf, len, "%.700s+0x%" PRIxPTR " (%.255s+0x%" PRIxPTR ")", name, ip - sym_addr, lib,
             ip - m->base);
  else
    snprintf(buf, len, "?? (%.255s+0x%" PRIxPTR ")", lib, ip - m->base);
  free(plain);
}

/* The environment without LD_PRELOAD: addr2line needs no profiler. */
static char **child_env(void) {
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char **env = malloc((n + 1) * sizeof *env);
  if (env == NULL) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) env[k++] = environ[i];
  env[k] = NULL;
  return env;
}

/* Runs addr2line on n file addresses of `path` and appends " file:line" to the texts it knows. */
static int run_addr2line(const char *path, const uintptr_t *addrs, size_t n, char **texts, char **env) {
  char *argv[LINES_BATCH + 5];
  char hex[LINES_BATCH][24];
  size_t a = 0;
  argv[a++] = "addr2line";
  argv[a++] = "-e";
  argv[a++] = (char *)path;
  for (size_t i = 0; i < n; i++) {
    snprintf(hex[i], sizeof hex[i], "0x%" PRIxPTR, addrs[i]);
    argv[a++] = hex[i];
  }
  argv[a] = NULL;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int e = posix_spawnp(&pid, "addr2line", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (e != 0) {
    close(pipefd[0]);
    return -1;
  }
  FILE *out = fdopen(pipefd[0], "r");
  if (out == NULL) {
    close(pipefd[0]);
    waitpid(pid, NULL, 0);
    return -1;
  }
  char line[2048];
  for (size_t i = 0; i < n && fgets(line, sizeof line, out) != NULL; i++) {
    line[strcspn(line, "\n")] = '\0';
    char *disc = strstr(line, " (discriminator");
    if (disc != NULL) *disc = '\0';
    char *colon = strrchr(line, ':');
    if (line[0] == '?' || colon == NULL || colon[1] < '1' || colon[1] > '9') continue;
    *colon = '\0';
    size_t have = strlen(texts[i]);
    char *t = realloc(texts[i], have + strlen(base_name(line)) + strlen(colon + 1) + 3);
    if (t == NULL) continue;
    sprintf(t + have, " %s:%s", base_name(line), colon + 1);
    texts[i] = t;
  }
  fclose(out);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return 0;
}

/* file:line for every address, one addr2line run per module and batch. */
static void add_lines(modules *ms, const uintptr_t *ips, size_t n, char **out) {
  char **env = child_env();
  size_t *idx = malloc(n * sizeof *idx);
  uintptr_t *addrs = malloc(LINES_BATCH * sizeof *addrs);
  char **texts = malloc(LINES_BATCH * sizeof *texts);
  if (env == NULL || idx == NULL || addrs == NULL || texts == NULL) goto done;
  for (size_t mi = 0; mi < ms->n; mi++) {
    module *m = &ms->m[mi];
    if (m->path[0] == '\0') continue;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (find_module(ms, ips[i] - 1) == m) idx[k++] = i;
    for (size_t b = 0; b < k; b += LINES_BATCH) {
      size_t cnt = k - b < LINES_BATCH ? k - b : LINES_BATCH;
      for (size_t j = 0; j < cnt; j++) {
        addrs[j] = ips[idx[b + j]] - 1 - m->base;
        texts[j] = out[idx[b + j]];
      }
      if (run_addr2line(m->path, addrs, cnt, texts, env) != 0) {
        npkit_warn("NPKIT_STACK_LINES: cannot run addr2line (binutils) for %s; frames have no "
                   "file:line", m->path);
        goto done;
      }
      for (size_t j = 0; j < cnt; j++) out[idx[b + j]] = texts[j];
    }
  }
done:
  free(texts);
  free(addrs);
  free(idx);
  free(env);
}

int npkit_symbolise(const uintptr_t *ips, size_t n, int lines, char **out) {
  modules ms = {0};
  dl_iterate_phdr(add_module, &ms);
  /* present when the job uses C++ (PyTorch, most NCCL users); C programs keep mangled names */
  demangle_fn demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  char buf[NPKIT_FRAME_TEXT_MAX];
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    describe(&ms, ips[i], demangle, buf, sizeof buf);
    out[i] = strdup(buf);
    if (out[i] == NULL) rc = -1;
  }
  if (lines && rc == 0) add_lines(&ms, ips, n, out);
  for (size_t i = 0; i < ms.n; i++) {
    if (ms.m[i].map != NULL) munmap(ms.m[i].map, ms.m[i].map_len);
    free(ms.m[i].syms);
  }
  free(ms.m);
  return rc;
}
