/* Checks a fake libnccl.so.2 from the outside, the way a loader and a profiler see it:
 *   - its dynamic symbol table holds exactly the API of src/format/nccl_api.def, each function as a
 *     strong pnccl* and a weak nccl* (as NCCL builds it), minus the functions an old NCCL lacks;
 *   - its SONAME is libnccl.so.2 and it needs nothing of CUDA;
 *   - ncclGetVersion reports the expected version;
 *   - ncclBcast reaches ncclBroadcast through the dynamic symbol: this program defines its own
 *     ncclBroadcast, which the library must call.
 * Usage: fake_nccl_symbols LIB full|old VERSION */
#include <dlfcn.h>
#include <elf.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                        \
      fprintf(stderr, __VA_ARGS__);                                                               \
      fprintf(stderr, "\n");                                                                      \
      failures++;                                                                                 \
    }                                                                                             \
  } while (0)

typedef struct api_fn {
  const char *name;
  int since;
} api_fn;

static const api_fn api[] = {
#define NPKIT_NCCL_API(name, cls, since, root, ret, params, args, describe, after) {#name, since},
#define NPKIT_NCCL_API_VOID(name, cls, since, root, params, args) {#name, since},
#include "nccl_api.def"
#undef NPKIT_NCCL_API
#undef NPKIT_NCCL_API_VOID
};
#define NAPI (sizeof api / sizeof api[0])

/* What the library built with FAKE_NCCL_OLD leaves out. */
static const char *const missing_in_old[] = {
    "AlltoAll",           "Gather",           "Scatter",          "CommShrink",
    "CommRevoke",         "CommWindowRegister", "CommWindowDeregister", "CommInitRankScalable",
    "GroupSimulateEnd",   "ResetDebugInit",
};

static int in_old(const char *name) {
  for (size_t i = 0; i < sizeof missing_in_old / sizeof missing_in_old[0]; i++)
    if (strcmp(name, missing_in_old[i]) == 0) return 0;
  return 1;
}

/* ------------------------------------------------------------------ ELF reading */

typedef struct elf_file {
  unsigned char *data;
  size_t size;
  const Elf64_Shdr *sh;
  int nsh;
} elf_file;

static int elf_load(const char *path, elf_file *f) {
  FILE *fp = fopen(path, "rb");
  if (fp == NULL) return -1;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  f->data = malloc(n > 0 ? (size_t)n : 1);
  f->size = f->data && n > 0 ? fread(f->data, 1, (size_t)n, fp) : 0;
  fclose(fp);
  if (f->size < sizeof(Elf64_Ehdr) || memcmp(f->data, ELFMAG, SELFMAG) != 0 ||
      f->data[EI_CLASS] != ELFCLASS64)
    return -1;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->data;
  if (eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > f->size) return -1;
  f->sh = (const Elf64_Shdr *)(f->data + eh->e_shoff);
  f->nsh = eh->e_shnum;
  return 0;
}

static const Elf64_Shdr *elf_section(const elf_file *f, unsigned type) {
  for (int i = 0; i < f->nsh; i++)
    if (f->sh[i].sh_type == type) return &f->sh[i];
  return NULL;
}

static const char *elf_str(const elf_file *f, const Elf64_Shdr *strtab, size_t off) {
  return off < strtab->sh_size ? (const char *)f->data + strtab->sh_offset + off : "";
}

typedef struct exported {
  char name[128];
  int bind;
} exported;

/* Defined, default-visibility global or weak symbols of .dynsym. */
static int elf_exports(const elf_file *f, exported *out, int cap) {
  const Elf64_Shdr *ds = elf_section(f, SHT_DYNSYM);
  if (ds == NULL || ds->sh_link >= (unsigned)f->nsh) return -1;
  const Elf64_Shdr *strtab = &f->sh[ds->sh_link];
  const Elf64_Sym *sym = (const Elf64_Sym *)(f->data + ds->sh_offset);
  int n = 0;
  for (size_t i = 0; i < ds->sh_size / sizeof *sym; i++) {
    int bind = ELF64_ST_BIND(sym[i].st_info);
    if (sym[i].st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
        ELF64_ST_VISIBILITY(sym[i].st_other) != STV_DEFAULT)
      continue;
    if (n < cap) {
      snprintf(out[n].name, sizeof out[n].name, "%s", elf_str(f, strtab, sym[i].st_name));
      out[n].bind = bind;
    }
    n++;
  }
  return n;
}

static void check_dynamic(const elf_file *f) {
  const Elf64_Shdr *dyn = elf_section(f, SHT_DYNAMIC);
  CHECK(dyn != NULL && dyn->sh_link < (unsigned)f->nsh, "no dynamic section");
  if (dyn == NULL) return;
  const Elf64_Shdr *strtab = &f->sh[dyn->sh_link];
  const Elf64_Dyn *d = (const Elf64_Dyn *)(f->data + dyn->sh_offset);
  int soname = 0;
  for (size_t i = 0; i < dyn->sh_size / sizeof *d && d[i].d_tag != DT_NULL; i++) {
    const char *s = elf_str(f, strtab, d[i].d_un.d_val);
    if (d[i].d_tag == DT_SONAME) {
      soname = 1;
      CHECK(strcmp(s, "libnccl.so.2") == 0, "SONAME is %s, expected libnccl.so.2", s);
    }
    if (d[i].d_tag == DT_NEEDED)
      CHECK(strstr(s, "cuda") == NULL && strstr(s, "nccl") == NULL,
            "the library needs %s: it must load without CUDA", s);
    CHECK(d[i].d_tag != DT_SYMBOLIC, "built with -Bsymbolic: ncclBcast would bypass the PLT");
  }
  CHECK(soname, "no SONAME");
}

/* Symbols any shared library may export besides its API. */
static int linker_symbol(const char *s) {
  return strcmp(s, "_init") == 0 || strcmp(s, "_fini") == 0 || strcmp(s, "_edata") == 0 ||
         strcmp(s, "_end") == 0 || strcmp(s, "__bss_start") == 0;
}

/* The library plays NCCL `version`: it exports the functions NCCL had by then. */
static void check_exports(const elf_file *f, int old, int version) {
  enum { CAP = 1024 };
  static exported ex[CAP];
  int n = elf_exports(f, ex, CAP);
  CHECK(n > 0 && n <= CAP, "cannot read the dynamic symbols (%d)", n);
  if (n <= 0 || n > CAP) return;
  int expected = 0;
  for (size_t i = 0; i < NAPI; i++) {
    /* the old library leaves out its list, and everything from 2.28 on */
    int want = old ? in_old(api[i].name) && api[i].since < 22800 : api[i].since <= version;
    if (old && !want)
      CHECK(api[i].since > 21703, "%s is left out of the old library but NCCL 2.17.3 has it",
            api[i].name);
    expected += want ? 2 : 0;
    for (int p = 0; p < 2; p++) {
      char name[128];
      snprintf(name, sizeof name, "%snccl%s", p ? "p" : "", api[i].name);
      int found = -1;
      for (int k = 0; k < n; k++)
        if (strcmp(ex[k].name, name) == 0) found = k;
      if (!want) {
        CHECK(found < 0, "%s is exported but an old NCCL does not have it", name);
        continue;
      }
      CHECK(found >= 0, "%s is not exported", name);
      if (found >= 0)
        CHECK(ex[found].bind == (p ? STB_GLOBAL : STB_WEAK), "%s should be %s", name,
              p ? "a strong symbol" : "a weak alias");
    }
  }
  int others = 0;
  for (int k = 0; k < n; k++) {
    if (linker_symbol(ex[k].name) || strncmp(ex[k].name, "__", 2) == 0) continue; /* sanitizers */
    if (strncmp(ex[k].name, "npkitFakeNccl", 13) == 0) continue; /* test-only entry points (fake_graph.c) */
    if (strstr(ex[k].name, "nccl") == NULL) {
      CHECK(0, "unexpected exported symbol %s", ex[k].name);
      others++;
    }
  }
  int api_count = 0;
  for (int k = 0; k < n; k++)
    api_count += strstr(ex[k].name, "nccl") != NULL && strncmp(ex[k].name, "npkitFakeNccl", 13) != 0;
  CHECK(api_count == expected, "%d NCCL symbols exported, expected %d", api_count, expected);
  printf("%d API symbols exported (expected %d), %d unexpected\n", api_count, expected, others);
}

/* ------------------------------------------------------------------ behaviour through dlopen */

static int bcast_calls;
static ncclResult_t (*real_broadcast)(const void *, void *, size_t, ncclDataType_t, int,
                                      ncclComm_t, cudaStream_t);

/* Takes the place of the library's ncclBroadcast, as a preloaded profiler would. */
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  bcast_calls++;
  return real_broadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

#define SYM(var, name)                                                                            \
  do {                                                                                            \
    *(void **)(&var) = dlsym(lib, name);                                                          \
    CHECK(var != NULL, "dlsym(%s) failed", name);                                                 \
    if (var == NULL) return;                                                                      \
  } while (0)

static void check_behaviour(void *lib, int version) {
  ncclResult_t (*get_version)(int *);
  ncclResult_t (*get_id)(ncclUniqueId *);
  ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*bcast)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*destroy)(ncclComm_t);
  const char *(*err_string)(ncclResult_t);
  SYM(get_version, "ncclGetVersion");
  SYM(get_id, "ncclGetUniqueId");
  SYM(init, "ncclCommInitRank");
  SYM(bcast, "ncclBcast");
  SYM(destroy, "ncclCommDestroy");
  SYM(err_string, "ncclGetErrorString");
  SYM(real_broadcast, "pncclBroadcast");

  int v = 0;
  CHECK(get_version(&v) == ncclSuccess && v == version, "ncclGetVersion gave %d, expected %d", v,
        version);
  CHECK(strcmp(err_string(ncclInvalidArgument),
               "invalid argument (run with NCCL_DEBUG=WARN for details)") == 0,
        "ncclGetErrorString(ncclInvalidArgument) is '%s'", err_string(ncclInvalidArgument));

  ncclUniqueId id;
  ncclComm_t comm = NULL;
  CHECK(get_id(&id) == ncclSuccess, "ncclGetUniqueId failed");
  CHECK(init(&comm, 1, id, 0) == ncclSuccess && comm != NULL, "1-rank ncclCommInitRank failed");
  if (comm == NULL) return;
  int buf[4] = {1, 2, 3, 4};
  CHECK(bcast(buf, 4, ncclInt32, 0, comm, NULL) == ncclSuccess, "ncclBcast failed");
  CHECK(buf[0] == 1 && buf[3] == 4, "ncclBcast changed a 1-rank buffer");
  CHECK(bcast_calls == 1, "ncclBcast called this program's ncclBroadcast %d times, expected 1",
        bcast_calls);
  CHECK(destroy(comm) == ncclSuccess, "ncclCommDestroy failed");
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[2], "full") != 0 && strcmp(argv[2], "old") != 0 &&
                    strcmp(argv[2], "new") != 0)) {
    fprintf(stderr, "usage: %s LIB full|old|new VERSION\n", argv[0]);
    return 2;
  }
  int old = strcmp(argv[2], "old") == 0;
  elf_file f = {0};
  if (elf_load(argv[1], &f) != 0) {
    fprintf(stderr, "FAIL: %s is not a readable 64-bit ELF file\n", argv[1]);
    return 1;
  }
  check_dynamic(&f);
  check_exports(&f, old, atoi(argv[3]));
  free(f.data);

  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL, "dlopen(%s): %s", argv[1], dlerror());
  if (lib != NULL) check_behaviour(lib, atoi(argv[3]));
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("OK %s (%s)\n", argv[1], argv[2]);
  return 0;
}
