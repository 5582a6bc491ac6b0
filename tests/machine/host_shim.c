/* A test shim, preloaded into the ranks of the machine tests, that gives each rank a host of its
 * own without touching what the rest of the process (Open MPI, the fake NCCL) sees:
 *  - gethostname() called from libnpkit_preload.so returns FAKE_HOSTNAME (when set); every other
 *    caller gets the real name;
 *  - getaddrinfo() of a name that starts with "npkit-fake-" resolves (to 127.0.0.1) when the name
 *    is in the comma separated FAKE_RESOLVABLE, and fails with EAI_NONAME otherwise, without ever
 *    asking a name server; any other name goes to the real getaddrinfo. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../shim_next.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

static int called_from_npkit(const void *ret) {
  Dl_info info;
  return dladdr(ret, &info) != 0 && info.dli_fname != NULL && strstr(info.dli_fname, "libnpkit_preload") != NULL;
}

SHIM_EXPORT int gethostname(char *name, size_t len) {
  static void *real;
  const char *fake = getenv("FAKE_HOSTNAME");
  if (fake != NULL && fake[0] != '\0' && called_from_npkit(__builtin_return_address(0))) {
    if (strlen(fake) + 1 > len) return -1;
    memcpy(name, fake, strlen(fake) + 1);
    return 0;
  }
  int (*f)(char *, size_t) = (int (*)(char *, size_t))npkit_shim_next(&real, "gethostname");
  return f(name, len);
}

static int listed(const char *name, const char *list) {
  size_t n = strlen(name);
  for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

SHIM_EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                            struct addrinfo **res) {
  static void *real;
  int (*f)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
      (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))npkit_shim_next(
          &real, "getaddrinfo");
  if (node != NULL && strncmp(node, "npkit-fake-", 11) == 0) {
    if (!listed(node, getenv("FAKE_RESOLVABLE"))) return EAI_NONAME;
    struct addrinfo h;
    memset(&h, 0, sizeof h);
    h.ai_family = AF_INET;
    h.ai_socktype = hints != NULL ? hints->ai_socktype : 0;
    h.ai_flags = AI_NUMERICHOST;
    return f("127.0.0.1", service, &h, res);
  }
  return f(node, service, hints, res);
}
