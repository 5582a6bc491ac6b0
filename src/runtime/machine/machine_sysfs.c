#include "machine_sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARPHRD_LOOPBACK_TYPE 772 /* linux/if_arp.h ARPHRD_LOOPBACK */

/* ROOT/rel, with one '/' between them. */
static void join(char *out, size_t len, const char *root, const char *rel) {
  size_t r = strlen(root);
  snprintf(out, len, "%s%s%s", root, r > 0 && root[r - 1] == '/' ? "" : "/", rel);
}

static int read_path(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n;
  do {
    n = read(fd, buf, len - 1);
  } while (n < 0 && errno == EINTR);
  int e = n < 0 ? errno : 0;
  close(fd);
  if (n < 0) {
    buf[0] = '\0';
    return e;
  }
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0'; /* attributes are one line */
  return 0;
}

int npkit_machine_sysfs_read(const char *root, const char *rel, char *buf, size_t len) {
  char path[1024];
  join(path, sizeof path, root, rel);
  return read_path(path, buf, len);
}

static int by_version(const void *a, const void *b) {
  return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

/* The entries of ROOT/rel that are folders (or links to them), sorted so that mlx5_2 comes before
 * mlx5_10; at most `max`.  Returns the count; names are malloc'd into out. */
static size_t list_dirs(const char *root, const char *rel, char **out, size_t max) {
  char dir[1024], path[1400];
  join(dir, sizeof dir, root, rel);
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  size_t n = 0;
  struct dirent *e;
  while (n < max && (e = readdir(d)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue; /* /sys/class/net/bonding_masters */
    if ((out[n] = strdup(e->d_name)) != NULL) n++;
  }
  closedir(d);
  qsort(out, n, sizeof *out, by_version);
  return n;
}

static void free_list(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
}

/* One attribute into the record: its text, or KEY_error=errno. */
static void attr(npkit_mtext *t, const char *root, const char *rel, const char *key) {
  char buf[256];
  int e = npkit_machine_sysfs_read(root, rel, buf, sizeof buf);
  if (e == 0) {
    npkit_mtext_str(t, key, buf);
  } else {
    char k[64];
    snprintf(k, sizeof k, "%s_error", key);
    npkit_mtext_i64(t, k, e);
  }
}

static void add_port(npkit_machine_ports *ports, const char *name, int ib, const char *root, const char *tx,
                     const char *rx) {
  uint32_t record = ports->records++;
  if (ports->n == NPKIT_MACHINE_MAX_PORTS || strlen(name) >= sizeof ports->port[0].name) return;
  npkit_machine_port *p = &ports->port[ports->n++];
  p->record = record;
  memcpy(p->name, name, strlen(name) + 1);
  p->ib = ib;
  join(p->tx, sizeof p->tx, root, tx);
  join(p->rx, sizeof p->rx, root, rx);
}

static void ib_ports(const char *root, npkit_mtext *t, npkit_machine_ports *ports) {
  char *devs[64], *nums[64], rel[512], name[160];
  size_t nd = list_dirs(root, "sys/class/infiniband", devs, 64);
  for (size_t i = 0; i < nd; i++) {
    snprintf(rel, sizeof rel, "sys/class/infiniband/%s/ports", devs[i]);
    size_t np = list_dirs(root, rel, nums, 64);
    for (size_t j = 0; j < np; j++) {
      char base[400];
      snprintf(base, sizeof base, "sys/class/infiniband/%s/ports/%s", devs[i], nums[j]);
      npkit_mtext_record(t, "port");
      npkit_mtext_str(t, "type", "ib");
      npkit_mtext_str(t, "dev", devs[i]);
      npkit_mtext_str(t, "port", nums[j]);
      static const char *const files[] = {"rate", "state", "phys_state", "link_layer"};
      for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        snprintf(rel, sizeof rel, "%s/%s", base, files[f]);
        attr(t, root, rel, files[f]);
      }
      char tx[480], rx[480];
      snprintf(tx, sizeof tx, "%s/counters/port_xmit_data", base);
      snprintf(rx, sizeof rx, "%s/counters/port_rcv_data", base);
      snprintf(name, sizeof name, "%s/%s", devs[i], nums[j]);
      add_port(ports, name, 1, root, tx, rx);
    }
    free_list(nums, np);
  }
  free_list(devs, nd);
}

static void net_ports(const char *root, npkit_mtext *t, npkit_machine_ports *ports) {
  char *devs[128], rel[512], buf[64];
  size_t nd = list_dirs(root, "sys/class/net", devs, 128);
  for (size_t i = 0; i < nd; i++) {
    snprintf(rel, sizeof rel, "sys/class/net/%s/type", devs[i]);
    int type = npkit_machine_sysfs_read(root, rel, buf, sizeof buf) == 0 ? atoi(buf) : -1;
    if (type == ARPHRD_LOOPBACK_TYPE || strcmp(devs[i], "lo") == 0) continue;
    npkit_mtext_record(t, "port");
    npkit_mtext_str(t, "type", "eth");
    npkit_mtext_str(t, "dev", devs[i]);
    static const char *const files[] = {"speed", "duplex", "operstate", "mtu"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
      snprintf(rel, sizeof rel, "sys/class/net/%s/%s", devs[i], files[f]);
      attr(t, root, rel, files[f]);
    }
    npkit_mtext_i64(t, "arp_type", type);
    /* a physical interface has a device (its PCI function); virtual ones (bridges, veth, ifb) none */
    char path[1024];
    struct stat st;
    snprintf(rel, sizeof rel, "sys/class/net/%s/device", devs[i]);
    join(path, sizeof path, root, rel);
    npkit_mtext_bool(t, "physical", stat(path, &st) == 0);
    char tx[480], rx[480];
    snprintf(tx, sizeof tx, "sys/class/net/%s/statistics/tx_bytes", devs[i]);
    snprintf(rx, sizeof rx, "sys/class/net/%s/statistics/rx_bytes", devs[i]);
    add_port(ports, devs[i], 0, root, tx, rx);
  }
  free_list(devs, nd);
}

void npkit_machine_ports_snapshot(const char *root, npkit_mtext *t, npkit_machine_ports *ports) {
  ports->n = 0;
  ports->records = 0;
  ib_ports(root, t, ports);
  net_ports(root, t, ports);
}

int npkit_machine_port_bytes(const char *path, int ib, uint64_t *bytes) {
  char buf[64];
  int e = read_path(path, buf, sizeof buf);
  if (e != 0) return e;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno != 0 || end == buf) return EINVAL;
  /* port_xmit_data and port_rcv_data count octets divided by 4 (IBA PortCounters) */
  *bytes = ib ? (uint64_t)v * 4u : (uint64_t)v;
  return 0;
}
