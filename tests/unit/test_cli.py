"""The `npkit` command line: help, version, usage errors (exit 2), failures (exit 1), default
output names, standard output, and the content of `npkit info`."""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

B = 1764671234567890123
WORK = sys.argv[1] if len(sys.argv) > 1 else "test_cli.work"
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# --- help and version
p = run_tool("--help", check_rc=0)
for cmd in (b"json", b"info", b"api"):
    check(re.search(rb"^  " + cmd + rb" ", p.stdout, re.M), "help lists %r" % cmd)
run_tool("-h", check_rc=0)
check(run_tool(check_rc=2).stderr.startswith(b"Usage: npkit"), "no command: usage on stderr")
v = run_tool("--version", check_rc=0).stdout.decode()
project_version = re.search(r"project\(\w+ VERSION ([\d.]+)", open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()).group(1)
log_version = re.search(r"#define NPKIT_LOG_VERSION (\d+)u", open(os.path.join(SOURCE_DIR, "include/npkit/event_log.h")).read()).group(1)
check(v == "npkit %s (event log version %s)\n" % (project_version, log_version), "version %r" % v)
for sub in ("json", "info", "api"):
    check(run_tool(sub, "--help", check_rc=0).stdout.startswith(b"Usage: npkit " + sub.encode()), sub + " --help")

# --- usage errors: exit 2 and a message naming the problem
for args, msg in [(["bogus"], "unknown command 'bogus'"), (["--bogus"], "unknown option '--bogus'"),
                  (["json"], "missing LOG"), (["json", "a", "b"], "one log at a time"),
                  (["json", "-x", "a"], "unknown option '-x'"), (["json", "a", "-o"], "option '-o' needs a value"),
                  (["json", "a", "--output="], "empty output name"), (["info"], "missing LOG"),
                  (["info", "--all", "a"], "unknown option '--all'"), (["api", "x"], "unexpected argument 'x'")]:
    p = run_tool(*args, check_rc=2)
    check(msg in p.stderr.decode(), "npkit %s: %r" % (" ".join(args), p.stderr))
    check(p.stdout == b"", "usage errors print nothing on stdout")

# --- failures: exit 1
p = run_tool("json", os.path.join(WORK, "missing.npkit"), check_rc=1)
check(b"missing.npkit: No such file or directory" in p.stderr, "missing log: %r" % p.stderr)
p = run_tool("info", "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd", check_rc=1)
check(b"not an npkit log" in p.stderr or b"truncated header" in p.stderr or b"empty file" in p.stderr,
      "not a log: %r" % p.stderr)

# --- a log
lines = [spec_line("header", clock_base=B, pid=777, rank=2, world=8, local_rank=2, host="gpu-node-7",
                   launcher="slurm", nccl=22809)]
lines.append(spec_line("comm", local_id=1, comm_id=0xfeedfacecafebeef, rank=2, nranks=8, device=2,
                       created_by="CommInitRankConfig", name="dp"))
lines.append(spec_line("thread", index=1, os_tid=31337, name="trainer"))
for i in range(30):
    lines.append(spec_line("ev", fn=FN_ID["ncclAllReduce"], thread=1, start=B + 1000 * i, end=B + 1000 * i + 250,
                           comm=1, count=8, datatype=7, redop=0, seq=i, result=0 if i else 5))
for i in range(5):
    lines.append(spec_line("ev", fn=FN_ID["ncclBroadcast"], thread=1, start=B + 50000 + i, end=B + 50000 + i,
                           comm=1, peer=0, seq=30 + i))
lines.append(spec_line("note", time=B + 5, level=2, text=b"bad\x1b[31m text"))
lines.append(spec_line("counter", thread=1, recorded=35, dropped=4))
lines.append(spec_line("end", end_ns=B + 10**9, recorded=35, dropped=4))
log = os.path.join(WORK, "rank2.npkit")
build_log(lines, os.path.join(WORK, "rank2.spec"), log)

# default output name: .npkit replaced by .json; other names get .json appended
p = run_tool("json", log, check_rc=0)
check(os.path.exists(os.path.join(WORK, "rank2.json")), "default output rank2.json")
check(re.match(rb"npkit json: .*rank2\.json: 35 calls, 0 groups, 4 events dropped while recording\n$", p.stderr),
      "summary line %r" % p.stderr)
other = os.path.join(WORK, "copy.log")
shutil.copy(log, other)
run_tool("json", "-q", other, check_rc=0)
check(os.path.exists(other + ".json"), "copy.log.json")
run_tool("json", "--output=" + os.path.join(WORK, "named.json"), log, "--quiet", check_rc=0)
check(os.path.exists(os.path.join(WORK, "named.json")), "--output=")
run_tool("json", "-o" + os.path.join(WORK, "glued.json"), "--", log, check_rc=0)
check(os.path.exists(os.path.join(WORK, "glued.json")), "-oFILE and --")
p = run_tool("json", log, "-o", "-", check_rc=0)
trace = load_trace(p.stdout.decode())
check(len([x for x in trace["traceEvents"] if x.get("cat") == "nccl_api"]) == 35, "stdout trace")
check(b"stdout: 35 calls" in p.stderr, "stdout summary on stderr: %r" % p.stderr)
check(open(os.path.join(WORK, "rank2.json"), "rb").read() == p.stdout, "file and stdout are the same trace")
check(sorted(os.listdir(WORK)) == sorted(["rank2.npkit", "rank2.spec", "rank2.json", "copy.log", "copy.log.json",
                                          "named.json", "glued.json"]), "no stray files: %r" % os.listdir(WORK))

# outputs that are not regular files are written in place, never replaced by a renamed file
import stat  # noqa: E402
run_tool("json", "-q", log, "-o", "/dev/null", check_rc=0)
check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a device")
check(not os.path.exists("/dev/null.partial"), "no /dev/null.partial")
target = os.path.join(WORK, "target.json")
link = os.path.join(WORK, "link.json")
os.symlink("target.json", link)
run_tool("json", "-q", log, "-o", link, check_rc=0)
check(os.path.islink(link) and open(target, "rb").read() == p.stdout, "written through the symbolic link")
os.unlink(link)
os.unlink(target)

# --- npkit info
info = run_tool("info", log, check_rc=0).stdout.decode()


def field(name):
    m = re.search(r"^%s\s+(.*)$" % re.escape(name), info, re.M)
    check(m is not None, "info has '%s':\n%s" % (name, info))
    return m.group(1)


check(field("host") == "gpu-node-7, pid 777", "host line")
check(field("rank") == "2 of 8, local rank 2 (from slurm)", "rank line: %r" % field("rank"))
check(field("state") == "closed cleanly", "state")
check(field("events") == "35 (recorded 35, dropped 4)", "events line")
check(field("format") == "version %s (blocks checksummed), header 256 bytes, event record %d bytes"
      % (log_version, header_sizes(log)[1]), "format line")
check("nccl.h 2.28.9 (22809)" in field("written by"), "nccl version")
check(field("clock base") == "%d ns = 2025-12-02 10:27:14.567890123 UTC" % B, "clock base %r" % field("clock base"))
check(field("communicators") == "1", "communicators")
check(re.search(r"^  1\s+0xfeedfacecafebeef 2/8\s+2\s+0\s+ncclCommInitRankConfig\s+dp$", info, re.M), "comm row")
check(re.search(r"^  1\s+31337\s+trainer$", info, re.M), "thread row")
check(re.search(r"^  ncclAllReduce\s+30\s+1\s+7\.500$", info, re.M), "AllReduce row:\n" + info)
check(re.search(r"^  ncclBroadcast\s+5\s+0\s+0\.000$", info, re.M), "Broadcast row")
check("bad?[31m text" in info, "control characters of notes are neutralised")
check(re.search(r"^clock source\s+clock_gettime\(CLOCK_REALTIME\)$", info, re.M), "clock source line")

# truncated log
data = open(log, "rb").read()
cut = os.path.join(WORK, "cut.npkit")
open(cut, "wb").write(data[:len(data) - 24 - 16])  # the END block's CHECK block and 16 of its bytes
info = run_tool("info", cut, check_rc=4).stdout.decode()  # 4: truncated
m = re.search(r"^state\s+TRUNCATED at offset \d+: incomplete END block: (\d+) of (\d+) payload bytes", info, re.M)
check(m and int(m.group(1)) == int(m.group(2)) - 16, "truncated state:\n" + info)
print("test_cli: OK")
