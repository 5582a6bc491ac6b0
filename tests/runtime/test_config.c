/* NPKIT_* settings: good values are taken, every bad value gives exactly one warning naming the
 * variable and the value, and the default is used. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "check.h"
#include "env_table.h"
#include "identity.h"
#include "nccl_names.h"

/* Runs npkit_config_load with stderr captured; returns the captured text (static buffer). */
static const char *load(npkit_config *cfg, const char *const *env) {
  static char captured[8192];
  fflush(stderr);
  char path[] = "/tmp/npkit_test_config_XXXXXX";
  int fd = mkstemp(path);
  int saved = dup(2);
  dup2(fd, 2);
  fake_env = env;
  npkit_config_load(cfg, table_getenv);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, captured, sizeof captured - 1);
  captured[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
  return captured;
}

static int count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static void test_defaults(void) {
  npkit_config cfg;
  const char *env[] = {NULL};
  const char *err = load(&cfg, env);
  CHECK(err[0] == '\0');
  CHECK(cfg.disable == 0);
  CHECK(strcmp(cfg.trace_dir, "./npkit_trace") == 0);
  CHECK(cfg.event_buf_mb == 64);
  CHECK(cfg.flush_ms == 200);
  CHECK(cfg.write_json == 1);
  CHECK(cfg.log_level == NPKIT_LEVEL_INFO);
  CHECK(cfg.cupti == NPKIT_CUPTI_AUTO);
  /* Default: everything but the query class. */
  CHECK(npkit_fn_set_has(&cfg.ops, NPKIT_FN_AllReduce));
  CHECK(npkit_fn_set_has(&cfg.ops, NPKIT_FN_GroupEnd));
  CHECK(npkit_fn_set_has(&cfg.ops, NPKIT_FN_CommInitRank));
  CHECK(!npkit_fn_set_has(&cfg.ops, NPKIT_FN_CommGetAsyncError));
  CHECK(!npkit_fn_set_has(&cfg.ops, NPKIT_FN_GetErrorString));
}

static void test_good_values(void) {
  npkit_config cfg;
  const char *env[] = {"NPKIT_TRACE_DIR=/tmp/x y", "NPKIT_EVENT_BUF_SIZE= 128 ", "NPKIT_FLUSH_MS=5",
                       "NPKIT_OPS=AllReduce,ncclsend,p2p,-Recv", "NPKIT_LOG_LEVEL=DEBUG",
                       "NPKIT_JSON=off", "NPKIT_DISABLE=yes", "NPKIT_CLOCK=Realtime", NULL};
  const char *err = load(&cfg, env);
  CHECK(err[0] == '\0');
  CHECK(strcmp(cfg.trace_dir, "/tmp/x y") == 0);
  CHECK(cfg.event_buf_mb == 128);
  CHECK(cfg.flush_ms == 5);
  {
    npkit_fn_set want = {{0}};
    npkit_fn_set_add(&want, NPKIT_FN_AllReduce);
    npkit_fn_set_add(&want, NPKIT_FN_Send);
    /* the rest of the p2p class: NCCL 2.29's one-sided operations */
    npkit_fn_set_add(&want, NPKIT_FN_PutSignal);
    npkit_fn_set_add(&want, NPKIT_FN_Signal);
    npkit_fn_set_add(&want, NPKIT_FN_WaitSignal);
    CHECK(memcmp(&cfg.ops, &want, sizeof want) == 0);
  }
  CHECK(cfg.log_level == NPKIT_LEVEL_DEBUG);
  CHECK(cfg.write_json == 0);
  CHECK(cfg.disable == 1);
  CHECK(cfg.clock_tsc == 0);
  const char *env2[] = {"NPKIT_CLOCK=auto", NULL};
  CHECK(load(&cfg, env2)[0] == '\0' && cfg.clock_tsc == 1);
  static const struct { const char *setting; int want; } cupti[] = {
      {"NPKIT_CUPTI=AUTO", NPKIT_CUPTI_AUTO}, {"NPKIT_CUPTI=yes", NPKIT_CUPTI_ON},
      {"NPKIT_CUPTI=1", NPKIT_CUPTI_ON},      {"NPKIT_CUPTI=off", NPKIT_CUPTI_OFF},
      {"NPKIT_CUPTI=0", NPKIT_CUPTI_OFF}};
  for (size_t i = 0; i < sizeof cupti / sizeof cupti[0]; i++) {
    const char *env3[] = {cupti[i].setting, NULL};
    CHECK(load(&cfg, env3)[0] == '\0' && cfg.cupti == cupti[i].want);
  }
}

static void test_bad_values(void) {
  static const char *const vars[] = {"NPKIT_EVENT_BUF_SIZE", "NPKIT_FLUSH_MS", "NPKIT_OPS",
                                     "NPKIT_LOG_LEVEL", "NPKIT_JSON", "NPKIT_DISABLE",
                                     "NPKIT_QUIET", "NPKIT_TRACE_DIR", "NPKIT_CLOCK", "NPKIT_CUPTI"};
  static const char *const values[] = {"", "-5", "abc", "99999999999999999999", "0x10", "1e3"};
  for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      char setting[128];
      snprintf(setting, sizeof setting, "%s=%s", vars[v], values[k]);
      const char *env[] = {setting, NULL};
      npkit_config cfg;
      const char *err = load(&cfg, env);
      /* NPKIT_TRACE_DIR accepts any non-empty path; NPKIT_OPS accepts nothing here. */
      int expect_warning = strcmp(vars[v], "NPKIT_TRACE_DIR") != 0 || values[k][0] == '\0';
      if (expect_warning) {
        CHECKF(count_lines(err, "npkit: warning:") == 1 && strstr(err, vars[v]) != NULL,
               "for %s got: <%s>", setting, err);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", values[k]);
        CHECKF(strcmp(vars[v], "NPKIT_TRACE_DIR") == 0 || strstr(err, quoted) != NULL,
               "warning for %s does not quote the value: <%s>", setting, err);
      } else {
        CHECK(err[0] == '\0');
      }
      CHECK(cfg.event_buf_mb == 64);
      CHECK(cfg.flush_ms == 200);
      CHECK(cfg.clock_tsc == 1);
      CHECK(cfg.cupti == NPKIT_CUPTI_AUTO);
    }
  }
  /* Out of range. */
  const char *env[] = {"NPKIT_EVENT_BUF_SIZE=0", "NPKIT_FLUSH_MS=99999999", NULL};
  npkit_config cfg;
  const char *err = load(&cfg, env);
  CHECK(count_lines(err, "npkit: warning:") == 2);
  CHECK(cfg.event_buf_mb == 64 && cfg.flush_ms == 200);
}

/* The machine snapshot and its sampling (NPKIT_MACHINE, NPKIT_GPU_SAMPLE_RATE,
 * NPKIT_CPU_SAMPLE_INTERVAL, NPKIT_SYSFS_ROOT, NPKIT_NVML_LIBRARY): defaults, good values, and
 * one warning per bad value with sampling off. */
static void test_machine_settings(void) {
  npkit_config cfg;
  const char *none[] = {NULL};
  CHECK(load(&cfg, none)[0] == '\0');
  CHECK(cfg.machine == 1 && cfg.gpu_sample_us == 0 && cfg.cpu_sample_ns == 0);
  CHECK(strcmp(cfg.sysfs_root, "/") == 0 && cfg.nvml_library[0] == '\0');
  const char *good[] = {"NPKIT_MACHINE=no", "NPKIT_GPU_SAMPLE_RATE=500000", "NPKIT_CPU_SAMPLE_INTERVAL=2000000",
                        "NPKIT_SYSFS_ROOT=/tmp/rank1", "NPKIT_NVML_LIBRARY=/opt/nvml.so", NULL};
  CHECK(load(&cfg, good)[0] == '\0');
  CHECK(cfg.machine == 0 && cfg.gpu_sample_us == 500000 && cfg.cpu_sample_ns == 2000000);
  CHECK(strcmp(cfg.sysfs_root, "/tmp/rank1") == 0 && strcmp(cfg.nvml_library, "/opt/nvml.so") == 0);
  const char *off[] = {"NPKIT_GPU_SAMPLE_RATE=0", "NPKIT_CPU_SAMPLE_INTERVAL=0", NULL};
  CHECK(load(&cfg, off)[0] == '\0' && cfg.gpu_sample_us == 0 && cfg.cpu_sample_ns == 0);
  static const char *const bad[] = {"NPKIT_GPU_SAMPLE_RATE=999", "NPKIT_GPU_SAMPLE_RATE=3600000001",
                                    "NPKIT_GPU_SAMPLE_RATE=-1", "NPKIT_GPU_SAMPLE_RATE=1s",
                                    "NPKIT_CPU_SAMPLE_INTERVAL=999999", "NPKIT_CPU_SAMPLE_INTERVAL=abc",
                                    "NPKIT_MACHINE=maybe", "NPKIT_SYSFS_ROOT="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *env[] = {bad[i], NULL};
    const char *err = load(&cfg, env);
    CHECKF(count_lines(err, "npkit: warning:") == 1, "for %s got: <%s>", bad[i], err);
    CHECK(cfg.gpu_sample_us == 0 && cfg.cpu_sample_ns == 0 && cfg.machine == 1);
    CHECK(strcmp(cfg.sysfs_root, "/") == 0);
  }
}

static void test_quiet_and_level(void) {
  npkit_config cfg;
  const char *env[] = {"NPKIT_LOG_LEVEL=error", "NPKIT_FLUSH_MS=abc", NULL};
  const char *err = load(&cfg, env);
  CHECK(err[0] == '\0'); /* warnings are below the chosen level */
  const char *env2[] = {"NPKIT_QUIET=1", "NPKIT_FLUSH_MS=abc", NULL};
  err = load(&cfg, env2);
  CHECK(count_lines(err, "npkit: warning:") == 1); /* quiet silences information, not warnings */
}

static void test_ops_parser(void) {
  npkit_fn_set m;
  char bad[64];
  CHECK(npkit_config_parse_ops("all", &m, bad, sizeof bad) == 0);
  for (unsigned f = 1; f < NPKIT_FN_COUNT; f++) CHECK(npkit_fn_set_has(&m, f));
  CHECK(!npkit_fn_set_has(&m, NPKIT_FN_NONE));
  CHECK(npkit_config_parse_ops("-coll", &m, bad, sizeof bad) == 0);
  CHECK(!npkit_fn_set_has(&m, NPKIT_FN_AllReduce) && npkit_fn_set_has(&m, NPKIT_FN_Send));
  CHECK(npkit_config_parse_ops("coll,nonsense", &m, bad, sizeof bad) == -1);
  CHECK(strcmp(bad, "nonsense") == 0);
  CHECK(npkit_config_parse_ops(" , ", &m, bad, sizeof bad) == -1);
}

static void test_identity(void) {
  npkit_identity id;
  const char *env[] = {"SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_LOCALID=3", "RANK=99", NULL};
  fake_env = env;
  npkit_identity_load(&id, table_getenv);
  CHECK(id.rank == 7 && id.world_size == 16 && id.local_rank == 3);
  CHECK(strcmp(id.source, "slurm") == 0);
  const char *env2[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4", "SLURM_PROCID=7", NULL};
  fake_env = env2;
  npkit_identity_load(&id, table_getenv);
  CHECK(id.rank == 2 && id.world_size == 4 && strcmp(id.source, "ompi") == 0);
  const char *env3[] = {"RANK=abc", NULL};
  fake_env = env3;
  npkit_identity_load(&id, table_getenv);
  CHECK(id.rank == -1 && id.source[0] == '\0');
  CHECK(id.pid == (int)getpid() && id.host[0] != '\0');
}

/* The flight recorder's and the watchdog's settings: good values taken (the timeout in ns from its
 * unit), each bad value one warning naming it, and the feature off. */
static void test_flight(void) {
  npkit_config cfg;
  const char *none[] = {NULL};
  const char *err = load(&cfg, none);
  CHECK(cfg.ring_mb == 0 && cfg.dump_signal == 0 && cfg.hang_timeout_ns == 0);
  static const struct { const char *value; uint64_t ns; } good[] = {
      {"60s", 60000000000ull}, {"500ms", 500000000ull}, {"2min", 120000000000ull}, {"1.5s", 1500000000ull},
      {"0", 0},                {"10ms", 10000000ull},   {" 3s", 3000000000ull}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char v[64];
    snprintf(v, sizeof v, "NPKIT_HANG_TIMEOUT=%s", good[i].value);
    const char *env[] = {v, "NPKIT_RING_MB=16", "NPKIT_DUMP_SIGNAL=SIGUSR1", NULL};
    err = load(&cfg, env);
    CHECKF(err[0] == '\0', "%s: %s", v, err);
    CHECKF(cfg.hang_timeout_ns == good[i].ns, "%s: %llu", v, (unsigned long long)cfg.hang_timeout_ns);
    CHECK(cfg.ring_mb == 16 && cfg.dump_signal == SIGUSR1);
  }
  static const char *const bad_timeouts[] = {"60", "5ms", "8d", "-1s", "abc", "1e3s", "", "0x10s", "10081min"};
  for (size_t i = 0; i < sizeof bad_timeouts / sizeof bad_timeouts[0]; i++) {
    char v[64];
    snprintf(v, sizeof v, "NPKIT_HANG_TIMEOUT=%s", bad_timeouts[i]);
    const char *env[] = {v, NULL};
    err = load(&cfg, env);
    CHECKF(count_lines(err, "npkit: warning: NPKIT_HANG_TIMEOUT=") == 1 && strstr(err, "no hang watchdog"), "%s: %s", v,
           err);
    CHECK(cfg.hang_timeout_ns == 0);
  }
  const char *ring_bad[] = {"NPKIT_RING_MB=65537", "NPKIT_DUMP_SIGNAL=SIGTERM", NULL};
  err = load(&cfg, ring_bad);
  CHECK(count_lines(err, "npkit: warning: NPKIT_RING_MB='65537'") == 1);
  CHECK(count_lines(err, "npkit: warning: NPKIT_DUMP_SIGNAL='SIGTERM'") == 1);
  CHECK(cfg.ring_mb == 0 && cfg.dump_signal == 0);
  /* one signal cannot both toggle and dump: it toggles */
  const char *same[] = {"NPKIT_DUMP_SIGNAL=USR2", "NPKIT_TOGGLE_SIGNAL=SIGUSR2", NULL};
  err = load(&cfg, same);
  CHECK(count_lines(err, "npkit: warning: NPKIT_DUMP_SIGNAL and NPKIT_TOGGLE_SIGNAL are the same signal") == 1);
  CHECK(cfg.dump_signal == 0 && cfg.toggle_signal == SIGUSR2);
}

int main(void) {
  test_defaults();
  test_flight();
  test_good_values();
  test_bad_values();
  test_machine_settings();
  test_quiet_and_level();
  test_ops_parser();
  test_identity();
  return check_exit_code("config");
}
