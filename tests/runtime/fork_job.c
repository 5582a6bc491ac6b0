/* fork() without exec, and fork()+exec, under the preloaded library.
 *   fork_job plain   the child makes NCCL calls of its own (a data-loader style child): they must
 *                    work, and the child must write no file (documented rule: it records nothing)
 *   fork_job exec    the child execs this program again in "child" mode, which records afresh
 *   fork_job child   a one-rank job of 3 all-reduces (what the exec'd child runs)
 * The parent makes 5 all-reduces before and 5 after the fork. */
#define _GNU_SOURCE
#include <nccl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int allreduces(int n) {
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return 1;
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < n; i++)
    if (ncclAllReduce(x, x, 8, ncclFloat32, ncclSum, comm, 0) != ncclSuccess) return 1;
  return ncclCommDestroy(comm) == ncclSuccess ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fork_job plain|exec|child\n");
    return 2;
  }
  if (strcmp(argv[1], "child") == 0) return allreduces(3);
  int exec_child = strcmp(argv[1], "exec") == 0;
  if (allreduces(5) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    if (exec_child) {
      execl("/proc/self/exe", argv[0], "child", (char *)NULL);
      _exit(126);
    }
    _exit(allreduces(4)); /* _exit: a forked child must not run the parent's exit handlers twice */
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "fork_job: child failed (status %d)\n", status);
    return 1;
  }
  return allreduces(5);
}
