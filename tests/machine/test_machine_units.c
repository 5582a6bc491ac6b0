/* Units of the machine snapshot: the text of a MACHINE block (escaping, splitting, limits), its
 * reader (every record kind, derived values, bounds), the readings of /sys text, the /sys reader
 * on a tree this test writes, and the binding of a CUDA device to NVML's GPUs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "machine_bind.h"
#include "machine_info.h"
#include "machine_sysfs.h"
#include "machine_text.h"

static char work[512];

/* ---- the text ---- */

static void test_text_round_trip(void) {
  static const char *const values[] = {"", "plain", "two words", "100%", "a=b=c", "line\nbreak", "tab\there",
                                       "\x7f\x01", "caf\xc3\xa9", "%41 not an escape"};
  enum { N = sizeof values / sizeof values[0] };
  npkit_mtext t = {0};
  for (int i = 0; i < N; i++) {
    npkit_mtext_record(&t, "rec");
    npkit_mtext_str(&t, "v", values[i]);
    npkit_mtext_i64(&t, "n", -i);
  }
  npkit_mtext_end(&t);
  CHECK(!t.failed);
  /* no byte a reader splits at or decodes is left bare in a value */
  CHECK(strchr(t.buf, '\t') == NULL && strchr(t.buf, '\x7f') == NULL);
  npkit_mtext_line *l = malloc(sizeof *l);
  size_t pos = 0;
  for (int i = 0; i < N; i++) {
    CHECK(npkit_mtext_next(t.buf, t.len, &pos, l) == 1);
    CHECK_STR(l->kind, "rec");
    CHECKF(strcmp(npkit_mtext_get(l, "v"), values[i]) == 0, "value %d came back as <%s>", i, npkit_mtext_get(l, "v"));
    CHECK(atoi(npkit_mtext_get(l, "n")) == -i);
    CHECK(npkit_mtext_get(l, "missing") == NULL);
  }
  CHECK(npkit_mtext_next(t.buf, t.len, &pos, l) == 0);
  npkit_mtext_free(&t);
  free(l);
}

static void test_text_reader_limits(void) {
  npkit_mtext_line *l = malloc(sizeof *l);
  /* blank lines, a line of spaces, tokens without '=' or key, then NUL padding ends the text */
  static const char text[] = "\n   \nkind a=1 junk =2 b= c=%zz %41=x\nnext x=%4\0\0\0 later=1\n";
  size_t pos = 0;
  CHECK(npkit_mtext_next(text, sizeof text - 1, &pos, l) == 1);
  CHECK_STR(l->kind, "kind");
  CHECK(l->n == 4);
  CHECK_STR(npkit_mtext_get(l, "a"), "1");
  CHECK_STR(npkit_mtext_get(l, "b"), "");
  CHECK_STR(npkit_mtext_get(l, "c"), "%zz");
  CHECK_STR(npkit_mtext_get(l, "%41"), "x"); /* keys are not decoded */
  CHECK(npkit_mtext_next(text, sizeof text - 1, &pos, l) == 1);
  CHECK_STR(l->kind, "next");
  CHECK_STR(npkit_mtext_get(l, "x"), "%4");
  CHECK(npkit_mtext_next(text, sizeof text - 1, &pos, l) == 0);
  /* an overlong line is skipped, the next one read; fields past the limit dropped */
  size_t big = NPKIT_MTEXT_MAX_LINE + 100;
  char *buf = malloc(big + 4096);
  memset(buf, 'x', big);
  size_t n = big;
  buf[n++] = '\n';
  n += (size_t)sprintf(buf + n, "many");
  for (int i = 0; i < NPKIT_MTEXT_MAX_FIELDS + 5; i++) n += (size_t)sprintf(buf + n, " k%d=%d", i, i);
  pos = 0;
  CHECK(npkit_mtext_next(buf, n, &pos, l) == 1);
  CHECK_STR(l->kind, "many");
  CHECK(l->n == NPKIT_MTEXT_MAX_FIELDS);
  CHECK(npkit_mtext_get(l, "k40") == NULL);
  free(buf);
  free(l);
}

/* ---- the snapshot reader ---- */

static const char snapshot[] =
    "snapshot taken=1764671234567890123 sysfs_root=/tmp/r%201 gpu_sample_us=500000 cpu_sample_ns=0 pcie=yes\n"
    "host name=node7 resolves=no error=Name%20or%20service%20not%20known\n"
    "system cpu=AMD%20EPYC%207763 cpus=128 kernel=5.15.0%20#1 machine=x86_64 nofile_soft=1024 nofile_hard=unlimited\n"
    "env name=NCCL_ALGO value=Ring\n"
    "env name=NCCL_PROFILER_PLUGIN value=/x/libnpkit_preload.so set_by=npkit\n"
    "conf name=NCCL_ALGO value=Tree file=/etc/nccl.conf applied=no\n"
    "conf name=NCCL_IB_HCA value=mlx5 file=/etc/nccl.conf applied=yes\n"
    "nvml status=ok library=libnvidia-ml.so.1 driver=550.54.15 gpus=2\n"
    "gpu index=0 name=NVIDIA%20A100 uuid=GPU-a bus_id=00000000:07:00.0 nvlinks=12\n"
    "nvlink gpu=0 link=0 active=yes version=4\nnvlink gpu=0 link=1 active=no version=4\n"
    "nvlink gpu=0 link=2 active=yes version=4\n"
    "gpu index=1 name=NVIDIA%20A100 uuid=GPU-b bus_id=00000000:0F:00.0 nvlinks=0 error=nvmlDeviceGetUUID:%20x\n"
    "nvlink gpu=5 link=0 active=yes\nnvlink gpu=0 link=99 active=yes\n"
    "port type=ib dev=mlx5_0 port=1 rate=50%20Gb/sec%20(1X%20HDR) state=4:%20ACTIVE phys_state=5:%20LinkUp link_layer=InfiniBand\n"
    "port type=ib dev=mlx5_1 port=1 rate=200%20Gb/sec%20(4X%20HDR) state=1:%20DOWN phys_state=3:%20Disabled link_layer=InfiniBand\n"
    "port type=eth dev=eth0 speed=25000 duplex=half operstate=up mtu=9000 arp_type=1 physical=yes\n"
    "port type=eth dev=eth1 speed_error=22 duplex_error=22 operstate=down mtu=1500 arp_type=1 physical=no\n"
    "port type=wifi dev=x\n"
    "future kind=1\n"
    "nccl version=22809\n"
    "bind cuda_device=3 gpu=1 how=pci_bus_id bus_id=0000:0F:00.0\n";

static void test_snapshot_reader(void) {
  npkit_machine m;
  npkit_machine_init(&m);
  CHECK(npkit_machine_parse(&m, snapshot, sizeof snapshot) == 0);
  CHECK(m.present);
  CHECK_EQ_U64(m.taken_ns, 1764671234567890123ull);
  CHECK_STR(m.sysfs_root, "/tmp/r 1");
  CHECK(m.gpu_sample_us == 500000 && m.cpu_sample_ns == 0 && m.pcie_sampled == 1);
  CHECK_STR(m.host, "node7");
  CHECK(m.resolves == 0);
  CHECK_STR(m.resolve_error, "Name or service not known");
  CHECK_STR(m.cpu, "AMD EPYC 7763");
  CHECK(m.cpus == 128 && m.nofile_soft == 1024 && m.nofile_hard == NPKIT_MACH_UNLIMITED);
  CHECK(m.nccl_version == 22809);
  CHECK_STR(m.nvml_status, "ok");
  CHECK(m.nvml_gpus == 2 && m.n_gpus == 2);
  const npkit_mach_gpu *g = &m.gpus[0];
  CHECK(g->nvlinks == 12 && npkit_mach_gpu_active_links(g) == 2 && g->nvlink_version == 4);
  CHECK(g->link_known == 0x7 && g->link_active == 0x5);
  CHECK(npkit_mach_gpu_nvlink_gbs(g) == 50.0);
  CHECK(m.gpus[1].nvlinks == 0 && npkit_mach_gpu_active_links(&m.gpus[1]) == 0);
  CHECK_STR(m.gpus[1].error, "nvmlDeviceGetUUID: x");
  CHECK(npkit_machine_bound_gpu(&m) == &m.gpus[1] && m.cuda_device == 3);
  CHECK_STR(m.bind_how, "pci_bus_id");
  CHECK(m.n_ports == 4); /* the wifi port is not a kind the reader knows */
  CHECK(m.ports[0].type == NPKIT_PORT_IB && m.ports[0].rate_mbps == 50000 && m.ports[0].width == 1 && m.ports[0].up == 1);
  CHECK_STR(m.ports[0].name, "mlx5_0/1");
  CHECK(m.ports[1].rate_mbps == 200000 && m.ports[1].width == 4 && m.ports[1].up == 0);
  CHECK(m.ports[2].type == NPKIT_PORT_ETH && m.ports[2].rate_mbps == 25000 && m.ports[2].up == 1);
  CHECK_STR(m.ports[2].duplex, "half");
  CHECK(m.ports[2].physical == 1 && m.ports[2].mtu == 9000);
  CHECK(m.ports[3].speed_errno == 22 && m.ports[3].rate_mbps == 0 && m.ports[3].up == 0 && m.ports[3].physical == 0);
  CHECK(m.n_settings == 4);
  const npkit_mach_setting *s = npkit_machine_effective(&m, "NCCL_ALGO");
  CHECK(s != NULL && s->origin == NPKIT_SETTING_ENV);
  CHECK_STR(s->value, "Ring");
  s = npkit_machine_effective(&m, "NCCL_IB_HCA");
  CHECK(s != NULL && s->origin == NPKIT_SETTING_CONF && s->applied);
  CHECK(npkit_machine_effective(&m, "NCCL_PROTO") == NULL);
  CHECK(m.settings[1].set_by_npkit == 1 && m.settings[0].set_by_npkit == 0);
  CHECK(m.skipped_lines == 1);
  npkit_machine_free(&m);
  CHECK(m.n_gpus == 0 && m.settings == NULL);
}

static void test_snapshot_bounds(void) {
  npkit_mtext t = {0};
  for (int i = 0; i < NPKIT_MACH_MAX_GPUS + 10; i++) {
    npkit_mtext_record(&t, "gpu");
    npkit_mtext_i64(&t, "index", i);
  }
  for (int i = 0; i < NPKIT_MACH_MAX_PORTS + 10; i++) {
    npkit_mtext_record(&t, "port");
    npkit_mtext_str(&t, "type", "eth");
  }
  for (int i = 0; i < NPKIT_MACH_MAX_SETTINGS + 10; i++) {
    npkit_mtext_record(&t, "env");
    npkit_mtext_str(&t, "name", "NCCL_X");
  }
  npkit_mtext_record(&t, "gpu");
  npkit_mtext_i64(&t, "index", -5);
  npkit_mtext_record(&t, "system");
  npkit_mtext_str(&t, "cpus", "99999999999999999999");
  npkit_mtext_end(&t);
  npkit_machine m;
  npkit_machine_init(&m);
  CHECK(npkit_machine_parse(&m, t.buf, t.len) == 0);
  CHECK(m.n_gpus == NPKIT_MACH_MAX_GPUS && m.n_ports == NPKIT_MACH_MAX_PORTS && m.n_settings == NPKIT_MACH_MAX_SETTINGS);
  CHECK(m.cpus == -1);
  npkit_machine_free(&m);
  npkit_mtext_free(&t);
}

static void test_sysfs_values(void) {
  static const struct {
    const char *text;
    int rc;
    uint64_t mbps;
    int width;
  } rates[] = {{"2.5 Gb/sec (1X SDR)", 0, 2500, 1},   {"200 Gb/sec (4X HDR)", 0, 200000, 4},
               {"400 Gb/sec (4X NDR)", 0, 400000, 4}, {"100 Gb/sec (2X HDR)", 0, 100000, 2},
               {"53.125 Gb/sec (1X HDR)", 0, 53100, 1}, {"10 Gb/sec", 0, 10000, 0},
               {"56 Gb/sec (4X FDR)", 0, 56000, 4},   {"", -1, 0, 0},
               {"fast", -1, 0, 0},                    {"200 Mb/sec (4X)", -1, 0, 0},
               {"99999999999999999999 Gb/sec", -1, 0, 0}};
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
    uint64_t mbps;
    int width;
    int rc = npkit_ib_rate_parse(rates[i].text, &mbps, &width);
    CHECKF(rc == rates[i].rc && mbps == rates[i].mbps && width == rates[i].width, "rate <%s>: %d %llu %d",
           rates[i].text, rc, (unsigned long long)mbps, width);
  }
  const char *name;
  CHECK(npkit_sysfs_state_parse("4: ACTIVE", &name) == 4);
  CHECK_STR(name, "ACTIVE");
  CHECK(npkit_sysfs_state_parse("5: LinkUp", &name) == 5);
  CHECK_STR(name, "LinkUp");
  CHECK(npkit_sysfs_state_parse("ACTIVE", &name) == -1);
  CHECK(npkit_sysfs_state_parse(NULL, &name) == -1);
  CHECK_STR(npkit_nvlink_version_name(6), "4.0");
  CHECK(npkit_nvlink_version_name(0) == NULL && npkit_nvlink_version_name(99) == NULL);
  CHECK(npkit_nvlink_link_gbs(7) == 50.0 && npkit_nvlink_link_gbs(6) == 25.0 && npkit_nvlink_link_gbs(8) == 0.0);
  CHECK(npkit_counter_rate(100, 1000000000u, 1100, 2000000000u) == 1000.0);
  CHECK(npkit_counter_rate(1100, 1000000000u, 100, 2000000000u) < 0); /* reset */
  CHECK(npkit_counter_rate(100, 5, 200, 5) < 0);                       /* no time */
}

/* ---- the /sys reader ---- */

static void put(const char *rel, const char *text) {
  char path[1024], dir[1100];
  snprintf(path, sizeof path, "%s/%s", work, rel);
  snprintf(dir, sizeof dir, "mkdir -p '%s'", path);
  *strrchr(dir, '/') = '\0';
  strcat(dir, "'");
  if (system(dir) != 0) abort();
  FILE *f = fopen(path, "w");
  if (f == NULL) abort();
  fputs(text, f);
  fclose(f);
}

static void test_sysfs_reader(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
  if (system(cmd) != 0) abort();
  put("sys/class/infiniband/mlx5_10/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  put("sys/class/infiniband/mlx5_10/ports/1/state", "4: ACTIVE\n");
  put("sys/class/infiniband/mlx5_10/ports/1/phys_state", "5: LinkUp\n");
  put("sys/class/infiniband/mlx5_10/ports/1/link_layer", "InfiniBand\n");
  put("sys/class/infiniband/mlx5_10/ports/1/counters/port_xmit_data", "1000\n");
  put("sys/class/infiniband/mlx5_10/ports/1/counters/port_rcv_data", "250\n");
  put("sys/class/infiniband/mlx5_2/ports/1/rate", "100 Gb/sec (4X EDR)\n"); /* no state files */
  put("sys/class/net/eth0/speed", "100000\n");
  put("sys/class/net/eth0/duplex", "full\n");
  put("sys/class/net/eth0/operstate", "up\n");
  put("sys/class/net/eth0/mtu", "9000\n");
  put("sys/class/net/eth0/type", "1\n");
  put("sys/class/net/eth0/device/vendor", "0x15b3\n");
  put("sys/class/net/eth0/statistics/tx_bytes", "123456789012\n");
  put("sys/class/net/eth0/statistics/rx_bytes", "garbage\n");
  put("sys/class/net/lo/type", "772\n");
  put("sys/class/net/bonding_masters", "\n");
  npkit_mtext t = {0};
  npkit_machine_ports ports;
  npkit_machine_ports_snapshot(work, &t, &ports);
  npkit_mtext_end(&t);
  const char *want =
      "port type=ib dev=mlx5_2 port=1 rate=100%20Gb/sec%20(4X%20EDR) state_error=2 phys_state_error=2 link_layer_error=2\n"
      "port type=ib dev=mlx5_10 port=1 rate=200%20Gb/sec%20(4X%20HDR) state=4:%20ACTIVE phys_state=5:%20LinkUp "
      "link_layer=InfiniBand\n"
      "port type=eth dev=eth0 speed=100000 duplex=full operstate=up mtu=9000 arp_type=1 physical=yes\n";
  CHECKF(strcmp(t.buf, want) == 0, "snapshot text:\n%s", t.buf);
  CHECK(ports.n == 3 && ports.records == 3);
  CHECK_STR(ports.port[1].name, "mlx5_10/1");
  CHECK(ports.port[1].ib == 1 && ports.port[2].ib == 0 && ports.port[2].record == 2);
  uint64_t bytes = 0;
  CHECK(npkit_machine_port_bytes(ports.port[1].tx, 1, &bytes) == 0 && bytes == 4000);
  CHECK(npkit_machine_port_bytes(ports.port[1].rx, 1, &bytes) == 0 && bytes == 1000);
  CHECK(npkit_machine_port_bytes(ports.port[2].tx, 0, &bytes) == 0 && bytes == 123456789012ull);
  CHECK(npkit_machine_port_bytes(ports.port[2].rx, 0, &bytes) == EINVAL);
  CHECK(npkit_machine_port_bytes(ports.port[0].tx, 1, &bytes) == ENOENT);
  char buf[64];
  CHECK(npkit_machine_sysfs_read(work, "sys/class/net/eth0/mtu", buf, sizeof buf) == 0);
  CHECK_STR(buf, "9000");
  CHECK(npkit_machine_sysfs_read(work, "sys/class/net/eth0", buf, sizeof buf) == EISDIR);
  npkit_mtext_free(&t);
  /* a root without /sys: no ports, no failure */
  npkit_mtext t2 = {0};
  npkit_machine_ports_snapshot("/nonexistent/npkit", &t2, &ports);
  CHECK(t2.len == 0 && ports.n == 0);
  npkit_mtext_free(&t2);
}

/* ---- binding ---- */

static void test_bind(void) {
  unsigned d, b, v, f;
  CHECK(npkit_machine_parse_bus_id("00000000:3B:00.0", &d, &b, &v, &f) == 0 && d == 0 && b == 0x3b && v == 0 && f == 0);
  CHECK(npkit_machine_parse_bus_id("0001:af:1f.1", &d, &b, &v, &f) == 0 && d == 1 && b == 0xaf && v == 0x1f && f == 1);
  CHECK(npkit_machine_parse_bus_id("3b:00.0", &d, &b, &v, &f) == 0 && d == 0 && b == 0x3b);
  CHECK(npkit_machine_parse_bus_id("3b:00", &d, &b, &v, &f) == -1);
  CHECK(npkit_machine_parse_bus_id("", &d, &b, &v, &f) == -1);
  npkit_machine_gpu_id ids[3] = {{0, "GPU-aaaa1111-2222", "00000000:18:00.0"},
                              {1, "GPU-bbbb1111-2222", "00000000:28:00.0"},
                              {2, "GPU-cccc1111-2222", "00000000:38:00.0"}};
  npkit_machine_binding bb;
  /* no CUDA driver in this process: CUDA_VISIBLE_DEVICES, then the index */
  npkit_machine_bind(1, ids, 3, "2,GPU-aaaa", &bb);
  CHECK(bb.gpu == 0);
  CHECK_STR(bb.how, "cuda_visible_devices");
  npkit_machine_bind(0, ids, 3, " 2 ,GPU-aaaa", &bb);
  CHECK(bb.gpu == 2);
  npkit_machine_bind(2, ids, 3, "2,GPU-aaaa", &bb);
  CHECK(bb.gpu == -1 && strstr(bb.error, "has no entry 2") != NULL);
  npkit_machine_bind(0, ids, 3, "GPU-ffff", &bb);
  CHECK(bb.gpu == -1 && strstr(bb.error, "UUID") != NULL);
  npkit_machine_bind(0, ids, 3, "MIG-1234", &bb);
  CHECK(bb.gpu == -1);
  npkit_machine_bind(0, ids, 3, "7", &bb);
  CHECK(bb.gpu == -1);
  npkit_machine_bind(1, ids, 3, NULL, &bb);
  CHECK(bb.gpu == 1);
  CHECK_STR(bb.how, "index");
  npkit_machine_bind(5, ids, 3, NULL, &bb);
  CHECK(bb.gpu == -1 && bb.error[0] != '\0');
  npkit_machine_bind(-1, ids, 3, NULL, &bb);
  CHECK(bb.gpu == -1 && bb.how[0] == '\0');
}

int main(int argc, char **argv) {
  snprintf(work, sizeof work, "%s", argc > 1 ? argv[1] : "/tmp/npkit_machine_units");
  test_text_round_trip();
  test_text_reader_limits();
  test_snapshot_reader();
  test_snapshot_bounds();
  test_sysfs_values();
  test_sysfs_reader();
  test_bind();
  return check_exit_code("machine units");
}
