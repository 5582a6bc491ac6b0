#include "machine_source.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "state.h"
#include "diag.h"
#include "machine_bind.h"
#include "machine_host.h"
#include "machine_nvml.h"
#include "machine_sample.h"
#include "machine_sysfs.h"
#include "machine_text.h"
#include "notes.h"

#define FINISH_WAIT_MS 2000
#define MAX_GPUS 64

/* What the thread is doing, for the note when it does not finish in time. */
static const char *const phases[] = {"starting", "looking up the host name", "reading NVML", "reading /sys",
                                     "waiting", "sampling", "done"};
enum { PH_START, PH_HOST, PH_NVML, PH_SYSFS, PH_WAIT, PH_SAMPLE, PH_DONE };

/* Settings and shared state: written before the thread starts, or under mu. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;         /* CLOCK_MONOTONIC */
  int running;               /* the thread was started and not yet joined */
  int stop;
  int comm_pending, cuda_device, nccl_version;
  pthread_t thread;
  npkit_log_writer *log;
  uint64_t gpu_us, cpu_ns, flush_ms;
  char sysfs_root[512], nvml_library[512];
  char visible[256];         /* CUDA_VISIBLE_DEVICES at the start */
  npkit_mtext settings;      /* env and conf records, taken on the starting thread */
} m = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic int phase;
static _Atomic int wants_comm;

/* The thread's own; read by others only after it was joined. */
static struct {
  npkit_machine_nvml *nvml;
  npkit_machine_gpu_id ids[MAX_GPUS];
  size_t n_ids;
  npkit_machine_ports ports;
  npkit_machine_sampler sampler;
  int bound;                 /* the bind record is written */
} t;

static void write_block(npkit_mtext *text) {
  npkit_mtext_end(text);
  if (text->len == 0) return;
  if (text->failed) npkit_note(NPKIT_LEVEL_WARN, "out of memory while writing the machine snapshot: it is incomplete");
  npkit_logw_append(m.log, NPKIT_BLOCK_MACHINE, 0, text->buf, text->len);
}

/* NVML's part of the snapshot, or the one line that says why there is none. */
static void snapshot_gpus(npkit_mtext *text) {
  char why[512];
  int absent;
  atomic_store(&phase, PH_NVML);
  t.nvml = npkit_machine_nvml_open(m.nvml_library, &absent, why, sizeof why);
  if (t.nvml != NULL) {
    t.n_ids = npkit_machine_nvml_snapshot(t.nvml, text, t.ids, MAX_GPUS);
    return;
  }
  npkit_mtext_record(text, "nvml");
  npkit_mtext_str(text, "status", absent ? "absent" : "error");
  npkit_mtext_str(text, "error", why);
  npkit_mtext_str(text, "library", m.nvml_library[0] ? m.nvml_library : "libnvidia-ml.so.1");
  if (m.nvml_library[0] != '\0')
    npkit_warn("NPKIT_NVML_LIBRARY='%s': %s; the machine snapshot has no GPU part", m.nvml_library, why);
  else
    npkit_info("no NVML on this machine (%s): the machine snapshot has no GPU part", why);
}

static void snapshot(void) {
  npkit_mtext text = {0};
  npkit_mtext_record(&text, "snapshot");
  npkit_mtext_u64(&text, "taken", npkit_now_ns());
  npkit_mtext_str(&text, "sysfs_root", m.sysfs_root);
  npkit_mtext_u64(&text, "gpu_sample_us", m.gpu_us);
  npkit_mtext_u64(&text, "cpu_sample_ns", m.cpu_ns);
  npkit_mtext_bool(&text, "pcie", m.gpu_us >= NPKIT_MACHINE_PCIE_MIN_US);
  atomic_store(&phase, PH_HOST);
  npkit_machine_host_snapshot(&text);
  npkit_mtext_append(&text, &m.settings);
  snapshot_gpus(&text);
  atomic_store(&phase, PH_SYSFS);
  npkit_machine_ports_snapshot(m.sysfs_root, &text, &t.ports);
  write_block(&text);
  npkit_mtext_free(&text);
}

/* The process's GPU and NCCL's version, once the first communicator says. */
static void bind(int cuda_device, int nccl_version) {
  npkit_machine_binding b;
  npkit_mtext text = {0};
  if (nccl_version > 0) {
    npkit_mtext_record(&text, "nccl");
    npkit_mtext_i64(&text, "version", nccl_version);
  }
  npkit_mtext_record(&text, "bind");
  npkit_mtext_i64(&text, "cuda_device", cuda_device);
  if (t.nvml == NULL && t.n_ids == 0) {
    memset(&b, 0, sizeof b);
    b.gpu = -1;
    snprintf(b.error, sizeof b.error, "no NVML");
  } else {
    npkit_machine_bind(cuda_device, t.ids, t.n_ids, m.visible[0] ? m.visible : NULL, &b);
  }
  npkit_mtext_i64(&text, "gpu", b.gpu);
  if (b.how[0]) npkit_mtext_str(&text, "how", b.how);
  if (b.bus_id[0]) npkit_mtext_str(&text, "bus_id", b.bus_id);
  if (b.error[0]) npkit_mtext_str(&text, "error", b.error);
  write_block(&text);
  npkit_mtext_free(&text);
  t.sampler.gpu = b.gpu;
  t.bound = 1;
  if (b.gpu < 0 && m.gpu_us > 0 && t.nvml != NULL)
    npkit_note(NPKIT_LEVEL_INFO, "GPU counters are not sampled: the process's GPU (CUDA device %d) was not found "
               "among NVML's: %s", cuda_device, b.error);
}

static uint64_t add_period(uint64_t next, uint64_t period, uint64_t now) {
  next += period;
  return next > now ? next : now + period; /* a late pass is not caught up */
}

static void *machine_main(void *arg) {
  (void)arg;
  npkit_own_thread_mark();
  pthread_setname_np(pthread_self(), "npkit-machine");
  /* The lowest priority: on a host whose cores the job keeps busy, the job's threads go first and
   * the snapshot and samples wait (they carry their own times). */
  setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
  snapshot();
  int sampling = m.gpu_us > 0 || m.cpu_ns > 0;
  uint64_t gpu_ns = m.gpu_us * 1000u, cpu_ns = m.cpu_ns > 0 ? m.cpu_ns : gpu_ns;
  if (!sampling && t.nvml != NULL) {
    npkit_machine_nvml_close(t.nvml); /* the snapshot keeps what binding needs */
    t.nvml = NULL;
  }
  npkit_machine_sampler_init(&t.sampler, m.log, m.flush_ms);
  t.sampler.nvml = t.nvml;
  t.sampler.pcie = m.gpu_us >= NPKIT_MACHINE_PCIE_MIN_US;
  t.sampler.ports = &t.ports;
  uint64_t now = npkit_mono_ns();
  uint64_t next_dev = gpu_ns > 0 ? now : UINT64_MAX, next_cpu = cpu_ns > 0 ? now : UINT64_MAX;
  for (;;) {
    pthread_mutex_lock(&m.mu);
    atomic_store(&phase, PH_WAIT);
    for (;;) {
      uint64_t due = next_dev < next_cpu ? next_dev : next_cpu;
      if (m.stop || m.comm_pending || npkit_mono_ns() >= due) break;
      if (due == UINT64_MAX) {
        pthread_cond_wait(&m.cv, &m.mu);
      } else {
        struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
        pthread_cond_timedwait(&m.cv, &m.mu, &ts);
      }
    }
    int stop = m.stop, pending = m.comm_pending, dev = m.cuda_device, version = m.nccl_version;
    m.comm_pending = 0;
    pthread_mutex_unlock(&m.mu);
    if (pending) bind(dev, version);
    if (stop) break;
    /* Without sampling the thread has nothing more to do once bound, yet it waits for the finish
     * to join it: a thread that ended and was not joined when the job calls _exit is what
     * ThreadSanitizer's _exit reports as leaked (it checks before the library has finished). */
    if (!sampling) continue;
    atomic_store(&phase, PH_SAMPLE);
    now = npkit_mono_ns();
    if (now >= next_dev) {
      npkit_machine_sample_devices(&t.sampler);
      next_dev = add_period(next_dev, gpu_ns, npkit_mono_ns());
    }
    if (now >= next_cpu) {
      npkit_machine_sample_cpu(&t.sampler);
      next_cpu = add_period(next_cpu, cpu_ns, npkit_mono_ns());
    }
    npkit_machine_sampler_flush(&t.sampler, 0);
  }
  npkit_machine_sampler_flush(&t.sampler, 1);
  npkit_machine_nvml_close(t.nvml);
  t.nvml = NULL;
  atomic_store(&phase, PH_DONE);
  return NULL;
}

static void attach(const npkit_source_log *at) {
  const npkit_config *cfg = at->cfg;
  if (!cfg->machine) return;
  m.log = at->log;
  m.gpu_us = cfg->gpu_sample_us;
  m.cpu_ns = cfg->cpu_sample_ns;
  m.flush_ms = cfg->flush_ms;
  snprintf(m.sysfs_root, sizeof m.sysfs_root, "%s", cfg->sysfs_root);
  snprintf(m.nvml_library, sizeof m.nvml_library, "%s", cfg->nvml_library);
  npkit_machine_settings_snapshot(&m.settings, m.visible, sizeof m.visible);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&m.cv, &ca);
  pthread_condattr_destroy(&ca);
  /* The thread takes no signal: the job's signals go to the job's threads (and to the library's
   * handlers there), as if the thread were not here. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&m.thread, NULL, machine_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    npkit_note(NPKIT_LEVEL_WARN, "cannot start the machine thread (%s): no machine snapshot", strerror(rc));
    return;
  }
  m.running = 1;
  atomic_store(&wants_comm, 1);
}

int npkit_machine_wants_comm(void) { return atomic_load(&wants_comm); }

void npkit_machine_comm_created(int cuda_device, int nccl_version) {
  int expected = 1;
  if (!atomic_compare_exchange_strong(&wants_comm, &expected, 0)) return;
  pthread_mutex_lock(&m.mu);
  m.cuda_device = cuda_device;
  m.nccl_version = nccl_version;
  m.comm_pending = 1;
  pthread_cond_signal(&m.cv);
  pthread_mutex_unlock(&m.mu);
}

static void finish(npkit_source_totals *totals) {
  if (!m.running) return;
  m.running = 0;
  atomic_store(&wants_comm, 0);
  pthread_mutex_lock(&m.mu);
  m.stop = 1;
  pthread_cond_signal(&m.cv);
  pthread_mutex_unlock(&m.mu);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += FINISH_WAIT_MS / 1000;
  deadline.tv_nsec += (long)(FINISH_WAIT_MS % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  int rc = pthread_timedjoin_np(m.thread, NULL, &deadline);
  if (rc != 0) {
    npkit_note(NPKIT_LEVEL_WARN, "the machine thread was still %s %d s after the end: the log goes on without "
               "what it had not written", phases[atomic_load(&phase)], FINISH_WAIT_MS / 1000);
    pthread_detach(m.thread);
    return;
  }
  npkit_mtext_free(&m.settings);
  const npkit_batch *b = &t.sampler.batch;
  if (b->stored + b->failed == 0) return;
  npkit_counter_rec c = {0, NPKIT_SRC_MACHINE, b->stored, b->failed};
  npkit_logw_append(m.log, NPKIT_BLOCK_COUNTERS, 1, &c, sizeof c);
  totals->recorded += b->stored;
  totals->dropped += b->failed;
}

static void summary(char *buf, size_t len) {
  /* read only after finish joined the thread; a thread still running left samples 0 */
  if (t.sampler.samples > 0 && atomic_load(&phase) == PH_DONE)
    snprintf(buf, len, "; machine: %llu samples", (unsigned long long)t.sampler.samples);
  else if (len > 0)
    buf[0] = '\0';
}

const npkit_source_ops npkit_source_machine = {
    .name = "machine",
    .attach = attach,
    .finish = finish,
    .summary = summary,
};
