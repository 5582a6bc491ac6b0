"""Helpers of the tests that stop jobs with signals: the environment of a preloaded process (with
the sanitizer runtime first in sanitizer builds), starting a victim that announces itself through a
file, and sending a signal to one thread of a process (tgkill)."""
import ctypes
import os
import platform
import subprocess
import time

_SYS_TGKILL = {"x86_64": 234, "aarch64": 131}


def sanitizer_runtime():
    san = os.environ.get("NPKIT_SANITIZE", "")
    if not san:
        return None
    return subprocess.run(["cc", "-print-file-name=lib%s.so" % ("asan" if san == "address" else "tsan")],
                          capture_output=True, text=True).stdout.strip()


def preload_env(lib, trace_dir, fakes, preload=None, clean=False, **extra):
    """The environment of a process under the library (lib, or the list preload), after the
    sanitizer runtime in sanitizer builds; clean: without the NPKIT_ settings of the caller's."""
    env = dict(os.environ)
    if clean:
        for k in [k for k in env if k.startswith("NPKIT_") and k != "NPKIT_SANITIZE"]:
            del env[k]
    env.update(NPKIT_TRACE_DIR=trace_dir, LD_LIBRARY_PATH=fakes, FAKE_NCCL_LAT_US="0")
    pre = list(preload) if preload is not None else [lib]
    rt = sanitizer_runtime()
    if rt:
        pre.insert(0, rt)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    env["LD_PRELOAD"] = ":".join(pre)
    env.update(extra)
    return env


def wait_for(paths, proc, what, timeout=60):
    deadline = time.time() + timeout
    while not all(os.path.exists(p) for p in paths):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError("%s did not get ready: rc %s\n%s" % (what, proc.returncode, err[-3000:]))
        time.sleep(0.02)


def threads_of(pid):
    """{tid: thread name} of a process, from /proc."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out[int(tid)] = f.read().strip()
        except OSError:
            pass  # the thread just ended
    return out


def tgkill(pid, tid, sig):
    """Sends sig to one thread of pid (a thread-directed signal, as no launcher sends them)."""
    nr = _SYS_TGKILL.get(platform.machine())
    if nr is None:
        raise AssertionError("tgkill: unknown system call number on " + platform.machine())
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(nr, pid, tid, sig) != 0:
        raise AssertionError("tgkill(%d, %d, %d): errno %d" % (pid, tid, sig, ctypes.get_errno()))
