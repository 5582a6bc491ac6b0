#!/usr/bin/env bash
# Two builds of the `npkit` tool rendering the same log to /dev/null, alternating, R rounds: the
# medians of their wall and CPU (user + sys) seconds, and the ratio of the CPU medians (new / old).
# The old build is usually main's, the new one the working tree's:
#   git worktree add /tmp/old main && cmake -S /tmp/old -B /tmp/old/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build /tmp/old/build --target npkit
#   build/tests/unit/make_big_log /tmp/big.npkit 10000000
#   [R=9] bench/render_compare.sh /tmp/old/build/src/tool/npkit build/src/tool/npkit /tmp/big.npkit [json|merge]
set -euo pipefail
old="$1" new="$2" log="$3" cmd="${4:-json}"
rounds="${R:-9}"
for i in $(seq "$rounds"); do
  for t in old new; do
    bin="$old"
    [ "$t" = new ] && bin="$new"
    /usr/bin/time -f "$t %e %U %S" "$bin" "$cmd" "$log" -o /dev/null 2>&1 >/dev/null | tail -1
  done
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    t, wall, user, system = line.split()
    runs.setdefault(t, []).append((float(wall), float(user) + float(system)))
for t in ("old", "new"):
    print("%s wall %.3f s, cpu %.3f s (medians of %d)" % (t, statistics.median(w for w, _ in runs[t]),
                                                         statistics.median(c for _, c in runs[t]), len(runs[t])))
print("ratio new/old cpu %.3f" % (statistics.median(c for _, c in runs["new"]) /
                                  statistics.median(c for _, c in runs["old"])))
'
