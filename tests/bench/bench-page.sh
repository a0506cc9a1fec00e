#!/bin/sh
# tests/bench/bench-page.sh: memsight report --html on traces of growing
# size, and what headless Chromium (through tests/browser/page.mjs) takes
# to open each page: page faults of phases at about 10 thousand, a million
# and PAGE_BIG samples (default 10 million), every malloc call of a Python
# program with thousands of stacks, and alloc_zoo's leaks from 262,144
# stacks. For each: the page's size, the analyzer's wall time and peak
# memory, and in the page's own clock when its views were drawn (trees
# opened down their heaviest paths), what its script took, and the load
# event. bench-analyze.sh times the analyzer against heaptrack_print. Prints
# figures; asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
BIG=${PAGE_BIG:-10000000}
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	{ echo "chromium is not installed: make test-deps"; exit 1; }
[ -f "$top/tests/browser/node_modules/playwright-core/package.json" ] ||
	{ echo "playwright-core is not installed: make test-deps"; exit 1; }
export CHROMIUM
. "$top/tests/bench/bench-lib.sh"
bench_workdir

# phases touches MIB MiB, a page fault every 4 KiB.
"$b/memsight" record -q -g fp -e faults -o f10k.trace -- "$b/samples/phases" 16 40 16 >/dev/null
"$b/memsight" record -q -g fp -e faults -o f1m.trace -- "$b/samples/phases" 16 4000 16 >/dev/null
"$b/memsight" record -q -g fp -e faults -o fbig.trace -- "$b/samples/phases" 16 $((BIG / 256)) 16 >/dev/null
"$b/memsight" record -q -e malloc -o py.trace -- /usr/bin/python3 -c "
import json, decimal, email.parser, xml.dom.minidom
print(len([json.dumps({'k%d' % i: [i] * 20 for i in range(20000)}) for r in range(10)]))" >/dev/null
"$b/memsight" record -q -e malloc -o stacks.trace -- "$b/samples/alloc_zoo" stacks 18 >/dev/null 2>&1

printf "%-34s %10s %7s %9s %9s %8s %9s %9s %9s\n" trace samples stacks "page KB" "html s" "html MB" "drawn ms" \
	"script ms" "load ms"
for t in f10k f1m fbig py stacks; do
	"$b/memsight" folded "$t.trace" >/dev/null 2>&1 # the objects' cache, as perf's ~/.debug
	n=$("$b/memsight" info "$t.trace" | sed -n 's/^samples: *//p')
	stacks=$("$b/memsight" report --json "$t.trace" 2>/dev/null |
		perl -MJSON::PP -e 'local $/; print decode_json(<STDIN>)->{stack_timeline}{stacks_total}')
	set -- $(measure "$b/memsight" report --html "$t.html" "$t.trace")
	html_s=$1 html_kb=$2
	node "$top/tests/browser/page.mjs" "$t.html" load >"$t.out" 2>&1
	case $t in
	f10k) what="page faults, ~10k" ;;
	f1m) what="page faults, ~1M" ;;
	fbig) what="page faults, ~$BIG" ;;
	py) what="python3 JSON, every malloc call" ;;
	stacks) what="alloc_zoo stacks 18" ;;
	esac
	printf "%-34s %10s %7s %9d %9s %8d %9s %9s %9s\n" "$what" "$n" "$stacks" $(($(stat -c %s "$t.html") / 1024)) \
		"$html_s" $((html_kb / 1024)) "$(sed -n 's/^drawn_ms //p' "$t.out")" "$(sed -n 's/^script_ms //p' "$t.out")" \
		"$(sed -n 's/^load_event_ms //p' "$t.out")"
	grep "^error:" "$t.out"
done
