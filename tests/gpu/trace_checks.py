"""What the GPU trace checkers share: each check prints "ok" or "FAIL" with what it checked, and
the failed ones decide the exit status."""

problems = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        problems.append(what)
    return cond


def verdict():
    """Prints PASS or how many checks failed; the exit status: 0, or 1 when any failed."""
    print("PASS" if not problems else "FAILED: %d problem(s)" % len(problems))
    return 1 if problems else 0
