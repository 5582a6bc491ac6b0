#!/usr/bin/env python3
"""What NVML and /sys say on a GPU machine: the facts a fake NVML and generated /sys trees must
model (device_check.sh).  One line per query: the NVML function, then its value or its error.
Uses pynvml (nvidia-ml-py) for the constants and calls, each a thin wrapper of the C function of
the same name in libnvidia-ml.so.1."""
import glob
import os
import time


def show(name, fn, *args):
    try:
        v = fn(*args)
        if isinstance(v, bytes):
            v = v.decode()
        print("nvml %s%r = %r" % (name, args[1:] if len(args) > 1 else (), v))
        return v
    except Exception as e:  # NVMLError: print its text and code
        print("nvml %s%r: error %s (%s)" % (name, args[1:] if len(args) > 1 else (), e, getattr(e, "value", "?")))
        return None


def nvml():
    import pynvml as n
    show("nvmlInit_v2", n.nvmlInit)
    show("nvmlSystemGetDriverVersion", n.nvmlSystemGetDriverVersion)
    show("nvmlSystemGetNVMLVersion", n.nvmlSystemGetNVMLVersion)
    show("nvmlSystemGetCudaDriverVersion_v2", n.nvmlSystemGetCudaDriverVersion_v2)
    count = show("nvmlDeviceGetCount_v2", n.nvmlDeviceGetCount) or 0
    for i in range(count):
        h = n.nvmlDeviceGetHandleByIndex(i)
        show("nvmlDeviceGetName", n.nvmlDeviceGetName, h)
        show("nvmlDeviceGetUUID", n.nvmlDeviceGetUUID, h)
        pci = show("nvmlDeviceGetPciInfo_v3", n.nvmlDeviceGetPciInfo, h)
        if pci is not None:
            print("nvml   pci busId=%r domain=%d bus=%d device=%d" % (pci.busId, pci.domain, pci.bus, pci.device))
        show("nvmlDeviceGetMaxPcieLinkGeneration", n.nvmlDeviceGetMaxPcieLinkGeneration, h)
        show("nvmlDeviceGetCurrPcieLinkGeneration", n.nvmlDeviceGetCurrPcieLinkGeneration, h)
        show("nvmlDeviceGetCurrPcieLinkWidth", n.nvmlDeviceGetCurrPcieLinkWidth, h)
        show("nvmlDeviceGetMaxPcieLinkWidth", n.nvmlDeviceGetMaxPcieLinkWidth, h)
        for link in range(n.NVML_NVLINK_MAX_LINKS):
            st = show("nvmlDeviceGetNvLinkState", n.nvmlDeviceGetNvLinkState, h, link)
            if st is None and link > 0:
                break
            show("nvmlDeviceGetNvLinkVersion", n.nvmlDeviceGetNvLinkVersion, h, link)
        show("nvmlDeviceGetClockInfo(SM)", n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM)
        show("nvmlDeviceGetClockInfo(MEM)", n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM)
        u = show("nvmlDeviceGetUtilizationRates", n.nvmlDeviceGetUtilizationRates, h)
        if u is not None:
            print("nvml   utilization gpu=%d%% memory=%d%%" % (u.gpu, u.memory))
        show("nvmlDeviceGetPowerUsage (mW)", n.nvmlDeviceGetPowerUsage, h)
        show("nvmlDeviceGetTemperature(GPU)", n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU)
        t0 = time.time()
        show("nvmlDeviceGetPcieThroughput(TX, KB/s)", n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_TX_BYTES)
        show("nvmlDeviceGetPcieThroughput(RX, KB/s)", n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_RX_BYTES)
        print("nvml   two PCIe throughput reads took %.1f ms" % ((time.time() - t0) * 1000))
        fields = [getattr(n, f) for f in ("NVML_FI_DEV_NVLINK_LINK_COUNT", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX",
                                          "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX") if hasattr(n, f)]
        if fields:
            try:
                for f, v in zip(fields, n.nvmlDeviceGetFieldValues(h, fields)):
                    print("nvml nvmlDeviceGetFieldValues(field %d) = nvmlReturn %d, value %r"
                          % (f, v.nvmlReturn, v.value.ullVal))
            except Exception as e:
                print("nvml nvmlDeviceGetFieldValues: error %s" % e)
    show("nvmlShutdown", n.nvmlShutdown)


def sysfs():
    for d in sorted(glob.glob("/sys/class/net/*")):
        vals = []
        for f in ("speed", "duplex", "operstate", "mtu", "statistics/tx_bytes", "statistics/rx_bytes"):
            try:
                vals.append("%s=%s" % (f, open(os.path.join(d, f)).read().strip()))
            except OSError as e:
                vals.append("%s=<%s>" % (f, e.strerror))
        print("sysfs %s %s" % (d, " ".join(vals)))
    ib = sorted(glob.glob("/sys/class/infiniband/*/ports/*"))
    print("sysfs infiniband ports: %d" % len(ib))
    for p in ib[:8]:
        vals = []
        for f in ("rate", "state", "phys_state", "link_layer"):
            try:
                vals.append("%s=%s" % (f, open(os.path.join(p, f)).read().strip()))
            except OSError as e:
                vals.append("%s=<%s>" % (f, e.strerror))
        print("sysfs %s %s" % (p, " ".join(vals)))
    import resource
    print("rlimit NOFILE soft=%d hard=%d" % resource.getrlimit(resource.RLIMIT_NOFILE))
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            print("cpu %s" % l.split(":", 1)[1].strip())
            break
    print("kernel %s" % " ".join(os.uname()))


if __name__ == "__main__":
    try:
        nvml()
    except ImportError as e:
        print("nvml: pynvml missing: %s" % e)
    sysfs()
