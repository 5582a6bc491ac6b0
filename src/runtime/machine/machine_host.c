#include "machine_host.h"

#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "nccl_conf.h"
#include "self_register.h"

extern char **environ;

/* The first address getaddrinfo gives for name, as text; 0, or its EAI_* code. */
static int resolve(const char *name, char *addr, size_t len) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(name, NULL, &hints, &res);
  if (rc != 0) return rc;
  addr[0] = '\0';
  if (res != NULL && res->ai_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, addr, (socklen_t)len);
  else if (res != NULL && res->ai_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr, addr, (socklen_t)len);
  freeaddrinfo(res);
  return 0;
}

/* "model name" of /proc/cpuinfo (x86), else its "Hardware" or "CPU part" line (Arm). */
static void cpu_model(char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Hardware", 8) != 0 &&
        (out[0] != '\0' || strncmp(line, "CPU part", 8) != 0))
      continue;
    char *colon = strchr(line, ':');
    if (colon == NULL) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, len, "%s", colon);
    if (strncmp(line, "CPU part", 8) != 0) break;
  }
  fclose(f);
}

static void limit(npkit_mtext *t, const char *key, rlim_t v) {
  if (v == RLIM_INFINITY)
    npkit_mtext_str(t, key, "unlimited");
  else
    npkit_mtext_u64(t, key, (uint64_t)v);
}

void npkit_machine_host_snapshot(npkit_mtext *t) {
  char host[HOST_NAME_MAX + 1] = "", addr[64] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  npkit_mtext_record(t, "host");
  npkit_mtext_str(t, "name", host);
  if (host[0] != '\0') {
    int rc = resolve(host, addr, sizeof addr);
    npkit_mtext_bool(t, "resolves", rc == 0);
    if (rc == 0)
      npkit_mtext_str(t, "addr", addr);
    else
      npkit_mtext_str(t, "error", gai_strerror(rc));
  }
  char cpu[256];
  struct utsname u;
  struct rlimit rl;
  cpu_model(cpu, sizeof cpu);
  npkit_mtext_record(t, "system");
  if (cpu[0] != '\0') npkit_mtext_str(t, "cpu", cpu);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n > 0) npkit_mtext_i64(t, "cpus", n);
  if (uname(&u) == 0) {
    char kernel[sizeof u.release + sizeof u.version + 2];
    snprintf(kernel, sizeof kernel, "%s %s", u.release, u.version);
    npkit_mtext_str(t, "kernel", kernel);
    npkit_mtext_str(t, "machine", u.machine);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    limit(t, "nofile_soft", rl.rlim_cur);
    limit(t, "nofile_hard", rl.rlim_max);
  }
}

static int wanted(const char *entry) {
  return strncmp(entry, "NCCL_", 5) == 0 || strncmp(entry, "NPKIT_", 6) == 0 ||
         strncmp(entry, "CUDA_VISIBLE_DEVICES=", 21) == 0 || strncmp(entry, "CUDA_DEVICE_ORDER=", 18) == 0;
}

static void conf_record(void *ctx, const char *name, const npkit_nccl_conf_hit *hit) {
  npkit_mtext *t = ctx;
  npkit_mtext_record(t, "conf");
  npkit_mtext_str(t, "name", name);
  npkit_mtext_str(t, "value", hit->value);
  npkit_mtext_str(t, "file", hit->file);
  /* setenv(name, value, 0): NCCL keeps a value the environment already has */
  npkit_mtext_bool(t, "applied", getenv(name) == NULL);
}

void npkit_machine_settings_snapshot(npkit_mtext *t, char *visible, size_t len) {
  visible[0] = '\0';
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    const char *eq = strchr(*e, '=');
    if (eq == NULL || !wanted(*e)) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
    npkit_mtext_record(t, "env");
    npkit_mtext_str(t, "name", name);
    npkit_mtext_str(t, "value", eq + 1);
    if (npkit_self_register_did_set(name)) npkit_mtext_str(t, "set_by", "npkit");
    if (strcmp(name, "CUDA_VISIBLE_DEVICES") == 0) snprintf(visible, len, "%s", eq + 1);
  }
  npkit_nccl_conf_places where;
  char home[PATH_MAX];
  npkit_nccl_conf_places_of_process(&where, home, sizeof home);
  npkit_nccl_conf_each(&where, conf_record, t);
}
