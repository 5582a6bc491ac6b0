#include "stop_barrier.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One local rank's slot.  Times are CLOCK_REALTIME ns, comparable between processes; a slot whose
 * start is far from ours belongs to an earlier job that had the same name. */
typedef struct slot {
  _Atomic uint64_t start_ns;
  _Atomic uint64_t done_ns;
  _Atomic int32_t pid;
  int32_t reserved;
  uint64_t reserved2;
} slot;

#define MAX_LOCAL_RANKS 4096
#define SAME_STOP_NS (60ull * 1000000000ull)
#define POLL_NS 2000000L

static char path[160];
static slot *slots;
static int n_slots, me = -1;
static uint64_t my_start;

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int npkit_stop_barrier_arrive(const char *job, int local_rank, int local_size) {
  if (job == NULL || job[0] == '\0' || local_size < 2 || local_size > MAX_LOCAL_RANKS || local_rank < 0 ||
      local_rank >= local_size)
    return -1;
  int n = snprintf(path, sizeof path, "/dev/shm/npkit-stop-%u-", (unsigned)getuid());
  for (const char *p = job; *p && n < (int)sizeof path - 1; p++, n++) {
    char c = *p;
    path[n] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '.'
                  ? c
                  : '_';
  }
  path[n] = '\0';
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  size_t bytes = (size_t)local_size * sizeof(slot);
  struct stat st;
  /* Every rank grows the file to the same size; a larger one (another local size under the same
   * name) is used as it is. */
  if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode)) ||
      ((uint64_t)st.st_size < bytes && ftruncate(fd, (off_t)bytes) != 0)) {
    close(fd);
    return -1;
  }
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  slots = m;
  n_slots = local_size;
  me = local_rank;
  my_start = realtime_ns();
  atomic_store(&slots[me].done_ns, 0);
  atomic_store(&slots[me].pid, (int32_t)getpid());
  atomic_store(&slots[me].start_ns, my_start);
  return 0;
}

static int same_stop(uint64_t t) { return t > my_start ? t - my_start < SAME_STOP_NS : my_start - t < SAME_STOP_NS; }

/* Ranks this one still has to wait for: begun stopping and not finished, with their process
 * alive; or not begun yet while the others may still come. */
static int waiting_for(int *unfinished) {
  int n = 0, late = 0;
  uint64_t now = realtime_ns();
  for (int i = 0; i < n_slots; i++) {
    if (i == me) continue;
    uint64_t s = atomic_load(&slots[i].start_ns), d = atomic_load(&slots[i].done_ns);
    if (s != 0 && same_stop(s)) {
      pid_t pid = atomic_load(&slots[i].pid);
      if (d < s && !(pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)) n++;
    } else if (now - my_start < (uint64_t)NPKIT_STOP_JOIN_MS * 1000000ull) {
      late++;
    }
  }
  *unfinished = n;
  return n + late;
}

int npkit_stop_barrier_leave(uint64_t deadline_ns) {
  if (slots == NULL) return 0;
  atomic_store(&slots[me].done_ns, realtime_ns());
  int unfinished = 0;
  while (waiting_for(&unfinished) > 0 && mono_ns() < deadline_ns) {
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
  }
  int all_done = waiting_for(&unfinished) == 0;
  /* every rank that saw all others done removes the file: removing it twice is harmless, and a
   * rank that opens it afterwards (it began stopping very late) just finds nobody to wait for */
  if (all_done) unlink(path);
  munmap(slots, (size_t)n_slots * sizeof(slot));
  slots = NULL;
  return unfinished;
}
