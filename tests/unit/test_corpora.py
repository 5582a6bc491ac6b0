"""Every `npkit` command on every log of the test suite's corpora (the fuzz seeds and the inputs the
fuzzer kept, corrupt ones included): a clear exit status, valid JSON when it succeeds, and, in the
sanitizer builds, no report of undefined behaviour, a bad access or a leak.  The fuzz targets run
the same code in-process; this runs the command line itself (option parsing, npkit info, the
files it writes)."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

WORK = sys.argv[1] if len(sys.argv) > 1 else "test_corpora.work"
SEED_DIR = sys.argv[2] if len(sys.argv) > 2 else "seeds"
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
corpora = [SEED_DIR, os.path.join(SOURCE_DIR, "tests", "fuzz", "corpus", "log_render")]
logs = sorted(os.path.join(d, f) for d in corpora for f in os.listdir(d))
check(len(logs) > 100, "the corpora hold %d logs" % len(logs))


def clean(p, what):
    err = p.stderr.decode(errors="replace")
    for bad in ("runtime error:", "AddressSanitizer", "LeakSanitizer", "ThreadSanitizer"):
        check(bad not in err, "%s: %s\n%s" % (what, bad, err[-4000:]))


by_status = {}
for log in logs:
    p = run_tool("info", log)
    clean(p, "info " + log)
    check(p.returncode in (0, 1, 3, 4, 5), "info %s: exit %d" % (log, p.returncode))
    by_status[p.returncode] = by_status.get(p.returncode, 0) + 1
    out = os.path.join(WORK, "one.json")
    p = run_tool("json", "-q", log, "-o", out)
    clean(p, "json " + log)
    check(p.returncode in (0, 1), "json %s: exit %d" % (log, p.returncode))
    if p.returncode == 0:
        load_trace(open(out).read())
    check(not os.path.exists(out + ".partial"), "no partial trace left")
print("npkit info exit statuses over %d logs: %s" % (len(logs), sorted(by_status.items())))
check(by_status.get(1, 0) < len(logs), "some logs of the corpora are readable")

# all logs at once: unreadable ones and duplicates are left out with a warning
for args in (["report"], ["report", "--json"], ["report", "--html", os.path.join(WORK, "r.html")],
             ["merge", "-o", os.path.join(WORK, "merged.json")]):
    p = run_tool(*(args + logs))
    clean(p, " ".join(args))
    check(p.returncode == 0, "%s on the corpora: exit %d\n%s" % (args[0], p.returncode, p.stderr[-2000:]))
    if args == ["report", "--json"]:
        json.loads(p.stdout)
load_trace(open(os.path.join(WORK, "merged.json")).read())
print("test_corpora: OK")
