#!/usr/bin/env bash
# The readers of two builds side by side: rendering one 5-million-event log to /dev/null, and the
# text and JSON reports of 8 ranks x 1 million events, alternating the builds three times (elapsed
# s, user s, peak RSS KB).  Both builds read the same inputs, made by NEW's test generators.
#   bench/layout_bench.sh OLD_BUILD NEW_BUILD
set -euo pipefail
old=${1:?OLD_BUILD}
new=${2:?NEW_BUILD}
[[ -x /usr/bin/time ]] || { echo "layout_bench: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/npkit_layout_bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
$new/tests/unit/make_big_log "$work/big.npkit" 5000000 >/dev/null
$new/tests/report/gen_report_logs "$work/logs" --ranks 8 --hosts 2 --offset 1:1500000 --gpu --period 1000000 \
  --sizes 65536,1048576,16777216 --plugin RING:SIMPLE --exit-jitter 500 --events 1000000 >/dev/null
for rep in 1 2 3; do
  for v in old new; do
    b=${!v}
    /usr/bin/time -f "%e %U %M" -o "$work/t" $b/src/tool/npkit json "$work/big.npkit" -o /dev/null; echo "render $v $(cat "$work/t")"
    /usr/bin/time -f "%e %U %M" -o "$work/t" $b/src/tool/npkit report "$work/logs" >"$work/rep_$v.txt"; echo "report_text $v $(cat "$work/t")"
    /usr/bin/time -f "%e %U %M" -o "$work/t" $b/src/tool/npkit report --json "$work/logs" >"$work/rep_$v.json"; echo "report_json $v $(cat "$work/t")"
  done
done
cmp -s "$work/rep_old.txt" "$work/rep_new.txt" && cmp -s "$work/rep_old.json" "$work/rep_new.json" \
  && echo "reports: identical" || echo "reports: DIFFER"
