#!/bin/sh
# report --html: one self-contained page, with no network reference, whose
# flame graphs are valid SVG that a real browser (headless Chromium) loads
# and draws; the leak table links to its stacks.
. "$(dirname "$0")/test-lib.sh"

XOR=$TOP/samples/traces/xor-8m.trace
DEBUG=$TOP/samples/traces/debug
CHROMIUM=$(command -v chromium || command -v chromium-browser)
# MEMSIGHT_TEST_BROWSER=no (the sanitized build's run, t0911): the pages
# are written by the build under test and checked as files; no browser
# loads them. Their script is the same bytes the normal build's run loads.
NO_BROWSER=
if [ "$MEMSIGHT_TEST_BROWSER" = no ]; then
	CHROMIUM= NO_BROWSER=1
fi
# A browser run as root needs --no-sandbox; its profile in the scratch
# directory; what the pages log on their consoles, on stderr (browser.err).
browse() {
	"$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$TRASH/chromium" --enable-logging=stderr --v=0 \
		--virtual-time-budget=3000 "$@" 2>>browser.err
}
# Console errors, in the page or in a graph: none wanted.
no_js_errors() { ! grep -E "CONSOLE.*(Uncaught|Error)|Uncaught " browser.err; }

test_expect_success 'a trace recorded elsewhere: one page with the report and a flame graph per event' '
	"$MEMSIGHT" report --debug-dir "$DEBUG" --html r.html "$XOR" 2>err &&
	cat err &&
	grep "wrote .r.html.: the report and 3 flame graphs" err &&
	grep -c "<h2 id=" r.html >n && test "$(cat n)" = 11 &&
	grep -q "<h2 id=\"g0\">Page faults by stack</h2>" r.html &&
	grep -q "^== faults: page faults ==" r.html &&
	test $(grep -o "<object id=\"g[0-9]*-flame\"" r.html | wc -l) = 3
'

# Every view on the page comes from one replay of the trace; each is
# what its command prints on its own.
recording_allowed && test_expect_success 'report --html replays the trace once for every view, each view what its command prints' '
	"$MEMSIGHT" record -q -e malloc,faults,brk,mmap,signals,rss -o all.trace -- "$SAMPLES/mem_errors" uaf >/dev/null 2>&1;
	MEMSIGHT_READ_STATS=1 "$MEMSIGHT" report --html all.html all.trace 2>err; cat err &&
	grep "wrote .all.html.: the memory errors, the report, the leaks and [0-9]* flame graphs" err &&
	grep "^memsight report: read .all.trace.: 1 replay, \([0-9]*\) data chunks read of the \1 it holds$" err &&
	test $(grep -c "replay" err) = 1 &&
	MEMSIGHT_READ_STATS=1 "$MEMSIGHT" report all.trace 2>err >/dev/null; cat err &&
	grep "^memsight report: read .all.trace.: 1 replay," err &&
	cp all.trace base.trace &&
	MEMSIGHT_READ_STATS=1 "$MEMSIGHT" report --html both.html base.trace all.trace 2>err; cat err &&
	grep "wrote .both.html.: what changed, " err &&
	grep "^memsight report: read .all.trace.: 1 replay," err && grep "^memsight report: read .base.trace.: 1 replay," err &&
	! grep "[2-9] replays" err &&
	"$MEMSIGHT" leaks --json --no-lines --top 3 all.trace >leaks.json 2>/dev/null &&
	"$MEMSIGHT" functions --json --top 200 -e malloc -w leaked all.trace >functions.json 2>/dev/null &&
	"$MEMSIGHT" errors --json --no-lines all.trace >errors.json 2>/dev/null &&
	"$MEMSIGHT" info --json all.trace >info.json &&
	python3 -c "
import json, re, sys
page = open(\"all.html\").read()
data = json.loads(re.search(r\"<script type=.application/json. id=.data.>(.*?)</script>\", page, re.S).group(1))
for k in (\"leaks\", \"functions\", \"errors\", \"info\"):
    own = json.load(open(k + \".json\"))
    assert data[k] == own, k
    print(k, \"as its command prints it\")
assert data[\"errors\"][\"errors\"], \"no error\"
"
'

test_expect_success 'self-contained: no network, no other file' '
	! grep -Eq "(src|href|data)=\"(https?:|//)" r.html &&
	! grep -qi "<link\|<script src\|<img src\|@import\|url(" r.html
'

test_expect_success 'each embedded graph is valid SVG, and says how many narrow frames it merged' '
	grep -o "data:image/svg+xml;base64,[A-Za-z0-9+/=]*" r.html | sed "s/^data:image\/svg+xml;base64,//" >b64 &&
	test $(wc -l <b64) = 3 &&
	i=0 && while read -r b; do
		i=$((i + 1)); printf "%s" "$b" | base64 -d >g$i.svg && xmllint --noout g$i.svg || exit 1
	done <b64 &&
	grep -q "read_in_chunks" g1.svg &&
	grep -q "narrower than 0.5 px merged into" g1.svg
'

if [ -n "$NO_BROWSER" ]; then
	echo "# MEMSIGHT_TEST_BROWSER=no: the pages are not loaded in a browser"
elif [ -z "$CHROMIUM" ]; then
	echo "# chromium is not installed (make test-deps installs it): the page is not loaded in a browser"
else
	test_expect_success 'headless Chromium loads the page, with no script error, every section there' '
		: >browser.err &&
		browse --dump-dom "file://$TRASH/r.html" >dom &&
		grep -q "<nav>" dom &&
		for id in report g0 g1 g2 g0-flame g1-flame g2-flame; do grep -q "id=\"$id\"" dom || exit 1; done &&
		no_js_errors
	'

	test_expect_success 'a screenshot of the page is not blank' '
		browse --window-size=1300,2400 --screenshot="$TRASH/shot.png" "file://$TRASH/r.html" >/dev/null &&
		test -s shot.png &&
		echo "$(stat -c %s shot.png) bytes" && test $(stat -c %s shot.png) -gt 30000 &&
		no_js_errors
	'

	test_expect_success 'search highlights a frame: a graph searched for read_in_chunks' '
		: >browser.err &&
		browse --dump-dom "file://$TRASH/g1.svg?s=read_in_chunks" >svgdom &&
		grep -q "<g id=\"frames\">" svgdom &&
		grep -q "fill: rgb(230, 0, 230)" svgdom &&
		grep -q "Matched: [1-9][0-9.]*%" svgdom &&
		no_js_errors
	'
fi

if recording_allowed; then
	test_expect_success 'a leak: the table links to its stack' '
		"$MEMSIGHT" record -q -e malloc -o leak.trace -- "$SAMPLES/loop_leak" 1000 >truth &&
		"$MEMSIGHT" report --html l.html leak.trace 2>err &&
		grep "wrote .l.html.: the report, the leaks and 4 flame graphs" err &&
		grep -q "<tr><td><a href=\"#leak-0\">4000</a></td><td>1000</td><td>pid [0-9]* loop_leak</td><td>leak+0x[0-9a-f]* \[loop_leak\] samples/loop_leak.c:[0-9]*</td></tr>" l.html &&
		grep -q "<span id=\"leak-0\"></span>4000 bytes in 1000 allocations from stack" l.html
	'
fi

if [ -n "$CHROMIUM" ]; then
	test_expect_success 'the page opens on a summary, the recording over time and the trees, drawn in the browser from the commands'"'"' own figures' '
		"$MEMSIGHT" record -q -e malloc,faults -o sum.trace -- "$SAMPLES/loop_leak" 1000 >truth &&
		"$MEMSIGHT" report --html sum.html sum.trace 2>/dev/null &&
		"$MEMSIGHT" report --json sum.trace >rep.json 2>/dev/null && json_valid report rep.json &&
		perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>); my \$t = \$d->{timeline}; my (\$f, \$h) = (0, 0);
			\$f += \$_ for @{\$t->{faults}}; \$h = \$_ > \$h ? \$_ : \$h for @{\$t->{heap_bytes}};
			my \$pf = 0; \$pf += \$_->{faults} for @{\$d->{faults}{processes}};
			die qq{faults over time \$f, in all \$pf\n} unless \$f == \$pf;
			die qq{heap over time up to \$h, peak \$d->{malloc}{peak}{bytes}\n} unless \$h == \$d->{malloc}{peak}{bytes}" <rep.json &&
		: >browser.err &&
		browse --dump-dom "file://$TRASH/sum.html" >dom &&
		no_js_errors &&
		leaked=$("$MEMSIGHT" leaks --json sum.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{leaked_bytes}") &&
		test "$leaked" = 4000 &&
		grep -q "<td id=\"sum-leaked\" data-bytes=\"4000\">3.9 KiB in 1,000 allocations</td>" dom &&
		grep -q "<td>3.9 KiB in 1,000 allocations from leak (pid [0-9]* loop_leak)</td>" dom &&
		grep -q "<td id=\"sum-lost\">nothing</td>" dom &&
		grep -q "<svg id=\"timeline-chart\" x=\"78\" y=\"6\" width=\"1000\" height=\"160\" viewBox=\"0 0 1000 160\" preserveAspectRatio=\"none\"><rect " dom &&
		grep -q "<polyline id=\"timeline-heap\" points=\"[0-9., ]*\"" dom &&
		grep -q "<table class=\"leaks\" id=\"sizes-table\"><tr><th>size</th>.*<tr><td>up to 4 B</td><td data-value=\"1000\">1,000</td><td data-value=\"4000\">3.9 KiB</td>" dom &&
		grep -q "<td id=\"sum-temporary\">[0-9,]* allocations\{0,1\} of [0-9,]* freed right after an allocation of the same stack and size (as heaptrack counts them)</td>" dom &&
		grep -q "<p id=\"topdown-total\" data-value=\"4000\">3.9 KiB leaked (held at the end), from the outermost callers in:</p>" dom &&
		grep -q "<p id=\"bottomup-total\" data-value=\"4000\">3.9 KiB leaked (held at the end), from the functions that asked out:</p>" dom
	'
fi

if [ -n "$CHROMIUM" ]; then
	test_expect_success 'a trace whose strings hold markup: the page shows them as text, and runs no script of theirs' '
		"$MEMSIGHT" record -q -o evil.trace -- sh -c "true \"</script><script>document.title=1</script><!--\"" &&
		"$MEMSIGHT" report --html evil.html evil.trace 2>/dev/null &&
		! grep -q "</script><script>document.title" evil.html &&
		: >browser.err &&
		browse --dump-dom "file://$TRASH/evil.html" >dom &&
		no_js_errors &&
		grep -q "<title>memsight report: evil.trace</title>" dom &&
		grep -q "&lt;/script&gt;&lt;script&gt;document.title=1&lt;/script&gt;&lt;!--" dom
	'
fi

if [ -n "$CHROMIUM" ]; then
	test_expect_success 'a flame graph turned by its Icicle button (#flip) is the icicle flamegraph --inverted draws' '
		printf "main;a;b 3\nmain;a;c 2\nmain;d 4\n" >f.folded &&
		"$MEMSIGHT" flamegraph f.folded >f.svg && "$MEMSIGHT" flamegraph --inverted f.folded >fi.svg &&
		grep -q "<text id=\"flip\" class=\"btn\" [^>]*>Icicle</text>" f.svg &&
		: >browser.err &&
		browse --dump-dom "file://$TRASH/f.svg#flip" >f.dom &&
		no_js_errors &&
		grep -o "<rect x=\"[0-9.]*\" y=\"[0-9]*\"" f.dom >flipped.y &&
		grep -o "<rect x=\"[0-9.]*\" y=\"[0-9]*\"" fi.svg >inverted.y &&
		test $(wc -l <flipped.y) -ge 5 && test_cmp inverted.y flipped.y &&
		grep -q ">Flame graph</text>" f.dom
	'
fi

# Driven as a person would, in Debian's chromium through playwright-core
# (make test-deps installs it into tests/browser): tests/browser/page.mjs
# prints what the page shows, a fact a line.
drive() { node "$TOP/tests/browser/drive.mjs" "$@"; }
fact() { sed -n "s/^$1 //p" "$2"; }
# One browser for every drive, and one node that drives it
# (tests/browser/server.mjs): started once, asked by each drive through
# DRIVE_SOCKET; gone with this script.
browser_start() {
	DRIVE_SOCKET=$TRASH/drive.sock
	export DRIVE_SOCKET
	CHROMIUM=$CHROMIUM node "$TOP/tests/browser/server.mjs" "$DRIVE_SOCKET" >ws 2>ws.err &
	browser_pid=$!
	trap 'kill $browser_pid 2>/dev/null; rm -rf "$TRASH"' EXIT
	i=0 && while [ $i -lt 300 ] && ! grep -q "^ws " ws 2>/dev/null && kill -0 $browser_pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	BROWSER_WS=$(sed -n "s/^ws //p" ws)
	export BROWSER_WS
}
# Five kinds of recording, each a page: m d lc ring a (.trace), and the
# leak check's truth in lc.truth.
record_kinds() {
	"$MEMSIGHT" record -q -e malloc -o m.trace -- "$SAMPLES/loop_leak" 1000 >/dev/null &&
	"$MEMSIGHT" record -q -o d.trace -- "$SAMPLES/phases" 64 8 16 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc --leak-check -o lc.trace -- "$SAMPLES/leak_cases" tree 1 >lc.truth &&
	"$MEMSIGHT" record -q --ring 8M -e faults,malloc -o ring.trace -- "$SAMPLES/phases" 16 8 16 >/dev/null &&
	"$MEMSIGHT" record -q -a -e faults -o a.trace -- "$SAMPLES/phases" 16 4 16 >/dev/null
}
if [ -n "$NO_BROWSER" ]; then
	recording_allowed && test_expect_success 'a page of each kind of recording, two traces, and many stacks: written whole, self-contained' '
		record_kinds &&
		"$MEMSIGHT" record -q -e malloc -o m3.trace -- "$SAMPLES/loop_leak" 3000 >/dev/null &&
		"$MEMSIGHT" record -q -e rss,malloc -o rss.trace -- "$SAMPLES/rss_grow" 16 0 0 >/dev/null &&
		"$MEMSIGHT" record -q -e malloc,signals,faults -o err.trace -- "$SAMPLES/mem_errors" uaf >/dev/null 2>&1;
		"$MEMSIGHT" record -q -e malloc -o many.trace -- /usr/bin/python3 -c "
import json
print(len([json.dumps({\"k%d\" % i: [i] * 20 for i in range(2000)}) for r in range(10)]))" >/dev/null &&
		for t in m d lc ring a rss err many; do
			"$MEMSIGHT" report --html $t.html $t.trace 2>err &&
			grep "wrote .$t.html.: " err &&
			grep -q "<h2 id=" $t.html && grep -q "</html>" $t.html &&
			! grep -Eq "(src|href|data)=\"(https?:|//)" $t.html || return 1
		done &&
		"$MEMSIGHT" report --html diff.html m.trace m3.trace 2>err &&
		grep "wrote .diff.html.: what changed, the report, the leaks and 4 flame graphs" err
	'
elif [ -z "$CHROMIUM" ] || ! [ -f "$TOP/tests/browser/node_modules/playwright-core/package.json" ]; then
	test_expect_success 'chromium and playwright-core are installed (make test-deps installs them)' 'false'
elif recording_allowed; then
	browser_start
	test_expect_success 'one browser serves the pages driven below' 'test -n "$BROWSER_WS" || { cat ws.err; false; }'
	test_expect_success 'five kinds of recording: each page loads with no console error and no network request' '
		record_kinds &&
		for t in m d lc ring a; do
			"$MEMSIGHT" report --html $t.html $t.trace 2>/dev/null &&
			test "$(stat -c %a $t.html)" = 600 &&
			drive $t.html load >$t.out &&
			cat $t.out &&
			test "$(fact errors $t.out)" = 0 && test "$(fact requests $t.out)" = 0 || return 1
		done &&
		grep "^leak_cases: definitely lost 48 bytes in 1 blocks$" lc.truth &&
		grep "^leak_cases: indirectly lost 512 bytes in 12 blocks$" lc.truth &&
		drive lc.html load text:#sum-leak-check >lc.sum &&
		grep "^text #sum-leak-check: definitely lost 48 B in 1 block, indirectly lost 512 B in 12 blocks, possibly lost 0 B in 0 blocks, still reachable 0 B in 0 blocks$" lc.sum
	'

	test_expect_success 'resident memory on the same time axis: its most is what memsight rss says of the one process' '
		"$MEMSIGHT" record -q -e rss,malloc -o rss.trace -- "$SAMPLES/rss_grow" 16 0 0 >/dev/null &&
		"$MEMSIGHT" rss --json rss.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
			die qq{one process wanted\n} unless @{\$d->{processes}} == 1; print \$d->{processes}[0]{peak_bytes}, qq{\n}" >want &&
		"$MEMSIGHT" report --json rss.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$m = 0;
			\$m = \$_ > \$m ? \$_ : \$m for @{decode_json(<STDIN>)->{timeline}{rss_bytes}}; print qq{\$m\n}" >got &&
		test_cmp want got &&
		"$MEMSIGHT" report --html rss.html rss.trace 2>/dev/null &&
		drive rss.html load attr:#timeline-rss:points >r.out &&
		test "$(fact errors r.out)" = 0 &&
		grep "^attr #timeline-rss points: [0-9]" r.out
	'

	test_expect_success 'memory errors: a row each, with the block'"'"'s address and the functions that touched, made and freed it' '
		"$MEMSIGHT" record -q -e malloc,signals,faults -o err.trace -- "$SAMPLES/mem_errors" uaf >err.truth 2>/dev/null;
		block=$(sed -n "s/^mem_errors: block //p" err.truth) &&
		test -n "$block" &&
		"$MEMSIGHT" report --html err.html err.trace 2>/dev/null &&
		drive err.html load text:#errors-table\ tr:nth-child\(2\) >e.out &&
		cat e.out &&
		test "$(fact errors e.out)" = 0 &&
		addr=$(printf "0x%x" $((block + 16))) &&
		grep "^text #errors-table tr:nth-child(2): use-after-free+[0-9.]* mspid [0-9]* mem_errors, SIGSEGV${addr}read_atmake_blockdrop_block$" e.out
	'

	test_expect_success 'each view draws something, and fits a 1400x900 window without scrolling sideways' '
		for t in m d; do
			drive $t.html load views >$t.views &&
			cat $t.views &&
			for v in summary timeline functions topdown bottomup; do
				px=$(sed -n "s/^view $v pixels \([0-9]*\) right \([0-9]*\)$/\1/p" $t.views) &&
				right=$(sed -n "s/^view $v pixels \([0-9]*\) right \([0-9]*\)$/\2/p" $t.views) &&
				test "$px" -gt 500 && test "$right" -le 1400 || { echo "view $v of $t: $px pixels, right $right"; return 1; }
			done &&
			test "$(fact scroll_width $t.views)" -le 1400 &&
			test "$(fact errors $t.views)" = 0 || return 1
		done &&
		px=$(sed -n "s/^view sizes pixels \([0-9]*\) right [0-9]*$/\1/p" m.views) && test "$px" -gt 500
	'

	test_expect_success 'a window dragged across the chart: the top-down total is what leaks --time counts for it' '
		"$MEMSIGHT" record -q -e malloc -o churn.trace -- "$SAMPLES/churn_leak" 8 192 2 >/dev/null &&
		"$MEMSIGHT" report --html churn.html churn.trace 2>/dev/null &&
		drive churn.html load attr:#topdown-total:data-value drag:timeline-chart:0.25:0.7 \
			attr:#timeline-range:data-time attr:#topdown-total:data-value hash >w.out &&
		cat w.out &&
		test "$(fact errors w.out)" = 0 &&
		whole=$(sed -n 1,/timeline-range/p w.out | sed -n "s/^attr #topdown-total data-value: //p") &&
		range=$(fact "attr #timeline-range data-time:" w.out) &&
		windowed=$(sed -n "/timeline-range/,\$s/^attr #topdown-total data-value: //p" w.out) &&
		"$MEMSIGHT" leaks --json churn.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{leaked_bytes}, qq{\n}" >want.whole &&
		"$MEMSIGHT" leaks --json --time "$range" churn.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{leaked_bytes}, qq{\n}" >want.window &&
		echo "$whole" >got.whole && echo "$windowed" >got.window &&
		test_cmp want.whole got.whole &&
		test_cmp want.window got.window &&
		test "$windowed" != "$whole" &&
		grep "^hash: window=[0-9]*,[0-9]*&metric=leaked$" w.out
	'

	# A temporary allocation is the page's where it was made: one made in
	# the window's last moment and freed after it is the page's but not
	# report --time's, which sees no free of it (one a process at most).
	test_expect_success 'the window'"'"'s allocation sizes are what report --time counts for it, temporary ones with them' '
		range=$(fact "attr #timeline-range data-time:" w.out) &&
		hash=$(fact hash: w.out) &&
		drive churn.html "load:$hash" text:#sizes-note rows:#sizes-table >sz.out &&
		grep "^text #sizes-note: The allocations made in the window." sz.out &&
		test "$(fact errors sz.out)" = 0 &&
		sed -n "s/^row #sizes-table: //p" sz.out >got &&
		"$MEMSIGHT" report --json --time "$range" churn.trace 2>/dev/null |
			perl -MJSON::PP -e "local \$/; print qq{\$_->{allocations} \$_->{bytes} \$_->{temporary}\n} for @{decode_json(<STDIN>)->{malloc}{sizes}}" >want &&
		cat want got &&
		cut -d" " -f1,2 want >want.ab && cut -d" " -f1,2 got >got.ab && test_cmp want.ab got.ab &&
		tw=$(awk "{ n += \$3 } END { print n + 0 }" want) && tg=$(awk "{ n += \$3 } END { print n + 0 }" got) &&
		echo "temporary: $tg in the page, $tw by report --time" &&
		test "$tg" -ge "$tw" && test "$tg" -le $((tw + 1))
	'

	test_expect_success 'the window is in the address: opened again there, the page counts the same window' '
		hash=$(fact hash: w.out) && test -n "$hash" &&
		range=$(fact "attr #timeline-range data-time:" w.out) && test -n "$range" &&
		windowed=$(sed -n "/timeline-range/,\$s/^attr #topdown-total data-value: //p" w.out) &&
		drive churn.html "load:$hash" attr:#timeline-range:data-time attr:#topdown-total:data-value >w2.out &&
		test "$(fact "attr #timeline-range data-time:" w2.out)" = "$range" &&
		test "$(fact "attr #topdown-total data-value:" w2.out)" = "$windowed"
	'

	test_expect_success 'the window'"'"'s flame graph: drawn in the page, its totals those of leaks --time and the tree, a frame opens its callers' '
		hash=$(fact hash: w.out) &&
		drive churn.html "load:$hash" attr:#wflame-svg:data-total "select:#topdown select.metric:allocated" \
			attr:#wflame-svg:data-total attr:#topdown-total:data-value "attr:#wflame-svg g:data-name" \
			"press:#wflame-svg g" text:.callers-of >wf.out &&
		cat wf.out &&
		test "$(fact errors wf.out)" = 0 &&
		test "$(fact "attr #wflame-svg data-total:" wf.out | sed -n 1p)" = "$(cat want.window)" &&
		allocated=$(fact "attr #wflame-svg data-total:" wf.out | sed -n 2p) &&
		test "$allocated" -gt 0 &&
		test "$allocated" = "$(fact "attr #topdown-total data-value:" wf.out)" &&
		name=$(fact "attr #wflame-svg g data-name:" wf.out) && test -n "$name" &&
		grep "^text .callers-of: $name: " wf.out
	'

	test_expect_success 'a function clicked in the bottom-up tree: its callers and callees, and the address says so' '
		drive m.html load click:bottomup:someFunc text:.callers-of tree:#callers-tree tree:#callees-tree hash >c.out &&
		cat c.out &&
		test "$(fact errors c.out)" = 0 &&
		grep "^text .callers-of: someFunc: 3.9 KiB in all, 0 B in it itself.$" c.out &&
		grep "^tree #callers-tree: 1 main open$" c.out &&
		grep "^tree #callees-tree: 1 leak$" c.out &&
		grep "^hash: metric=leaked&callers=someFunc$" c.out
	'

	test_expect_success 'a frame clicked in the leak flame graph: a link under it opens the same callers and callees' '
		graph=$(sed -n "s/.*<h2 id=\"\(g[0-9]*\)\">Leaked bytes by stack.*/\1-flame/p" m.html) &&
		test -n "$graph" &&
		drive m.html load "frame:$graph:someFunc" "text:#$graph-fn" "click:$graph-fn:someFunc" \
			text:.callers-of tree:#callers-tree tree:#callees-tree hash >fc.out &&
		cat fc.out &&
		test "$(fact errors fc.out)" = 0 &&
		grep "^text #$graph-fn: Clicked in the graph: someFunc, its callers and callees.$" fc.out &&
		grep "^text .callers-of: someFunc: 3.9 KiB in all, 0 B in it itself.$" fc.out &&
		grep "^tree #callers-tree: 1 main open$" fc.out &&
		grep "^tree #callees-tree: 1 leak$" fc.out &&
		grep "^hash: metric=leaked&callers=someFunc$" fc.out
	'

	test_expect_success 'the trees weigh by allocated, calls and peak too, chosen in the page' '
		drive m.html load select:#topdown\ select.metric:calls attr:#topdown-total:data-value \
			select:#topdown\ select.metric:allocated attr:#topdown-total:data-value >s.out &&
		cat s.out &&
		# All the report counts, the stdout buffer loop_leak never frees
		# among them: libc'"'"'s one-time allocations are allocations, only
		# their blocks held at the end are no leak.
		"$MEMSIGHT" report --json m.trace 2>/dev/null >m.json &&
		perl -MJSON::PP -e "local \$/; my \$m = decode_json(<STDIN>)->{malloc}; my (\$c, \$b) = (0, 0);
			for (@{\$m->{processes}}) { \$c += \$_->{calls}; \$b += \$_->{allocated_bytes} }
			print \$c, qq{\n}, \$b, qq{\n}" <m.json >want &&
		sed -n "s/^attr #topdown-total data-value: //p" s.out >got &&
		test_cmp want got &&
		test "$(fact errors s.out)" = 0
	'

	test_expect_success 'two traces: the page holds what changed, as memsight diff gives it, and its differential flame graph' '
		"$MEMSIGHT" record -q -e malloc -o m3.trace -- "$SAMPLES/loop_leak" 3000 >/dev/null &&
		"$MEMSIGHT" report --html d.html m.trace m3.trace 2>err &&
		cat err &&
		grep "wrote .d.html.: what changed, the report, the leaks and 4 flame graphs" err &&
		test $(grep -c "leaks suppresses too" err) = 1 &&
		grep -q "<object id=\"diff-flame\" type=\"image/svg+xml\"" d.html &&
		grep -o "data:image/svg+xml;base64,[A-Za-z0-9+/=]*" d.html | head -1 | sed "s/^data:image\/svg+xml;base64,//" | base64 -d >diff.svg &&
		xmllint --noout diff.svg &&
		drive d.html load attr:#diff-total:data-value text:#diff-table\ tr:nth-child\(2\) >d.out &&
		cat d.out &&
		test "$(fact errors d.out)" = 0 &&
		"$MEMSIGHT" diff --json m.trace m3.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{delta}" >want &&
		test "$(fact "attr #diff-total data-value:" d.out)" = "$(cat want)" &&
		grep "^text #diff-table tr:nth-child(2): +7.8 KiB3.9 KiB11.7 KiBleak (loop_leak)$" d.out &&
		test_must_fail "$MEMSIGHT" report m.trace m3.trace 2>err &&
		test_one_line err &&
		grep "two traces make a page of what changed: give --html PAGE, or compare them with memsight diff" err
	'

	test_expect_success 'a trace of many stacks: the page stays under 5 MB, the 300 heaviest stacks kept and the rest summed as one' '
		test -x /usr/bin/python3 || { echo "# /usr/bin/python3 is missing: skipped"; return 0; }
		"$MEMSIGHT" record -q -e malloc -o many.trace -- /usr/bin/python3 -c "
import json, decimal, email.parser, xml.dom.minidom
print(len([json.dumps({\"k%d\" % i: [i] * 20 for i in range(2000)}) for r in range(10)]))" >/dev/null &&
		"$MEMSIGHT" report --json many.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$t = decode_json(<STDIN>)->{stack_timeline};
			print \$t->{stacks_total}, q{ }, scalar @{\$t->{stacks}}, q{ }, \$t->{other}{stacks}, qq{\n}" >n &&
		cat n &&
		read total kept other <n &&
		test "$total" -gt 300 && test "$kept" = 300 && test "$other" = $((total - 300)) &&
		"$MEMSIGHT" report --html many.html many.trace 2>/dev/null &&
		size=$(stat -c %s many.html) && echo "$size bytes" &&
		test "$size" -lt 5242880 &&
		drive many.html load attr:#topdown-total:data-value >many.out &&
		test "$(fact errors many.out)" = 0 &&
		"$MEMSIGHT" leaks --json many.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{leaked_bytes}" >want &&
		test "$(fact "attr #topdown-total data-value:" many.out)" = "$(cat want)"
	'

	test_expect_success 'the trees read as trees: a child drawn right of its parent, the heaviest path open down to where memory was asked for' '
		drive m.html load tree:#topdown-tree "box:#topdown-tree tr[data-depth=\"0\"] a.fn" \
			"box:#topdown-tree tr[data-depth=\"1\"] a.fn" "box:#topdown-tree tr[data-depth=\"4\"] a.fn" >tr.out &&
		cat tr.out &&
		test "$(fact errors tr.out)" = 0 &&
		x0=$(sed -n "s/^box .*depth=.0.*: \([0-9]*\) [0-9]*$/\1/p" tr.out) &&
		x1=$(sed -n "s/^box .*depth=.1.*: \([0-9]*\) [0-9]*$/\1/p" tr.out) &&
		x4=$(sed -n "s/^box .*depth=.4.*: \([0-9]*\) [0-9]*$/\1/p" tr.out) &&
		test "$x1" -gt "$x0" && test "$x4" -gt "$x1" &&
		# main, someFunc, leak: the path loop_leak prints; leak is its end
		# (malloc and the allocator below it are the block'"'"'s, left out).
		sed -n "s/^tree #topdown-tree: //p" tr.out >rows &&
		grep -n "" rows | grep -A2 " main open$" >path &&
		cat path &&
		sed -n 2p path | grep "^[0-9]*:\([0-9]*\) someFunc open$" &&
		sed -n 3p path | grep "^[0-9]*:\([0-9]*\) leak$" &&
		! grep " closed$" path
	'

	test_expect_success 'the keys: left closes, right opens, * opens a whole subtree' '
		drive m.html load "focus:#topdown-tree tbody tr" key:ArrowLeft tree:#topdown-tree key:ArrowRight tree:#topdown-tree \
			"focus:#bottomup-tree tbody tr[aria-expanded=\"false\"]" key:* tree:#bottomup-tree >k.out &&
		cat k.out &&
		test "$(fact errors k.out)" = 0 &&
		sed -n "s/^tree #topdown-tree: //p" k.out >td &&
		test "$(sed -n 1p td)" = "0 _start closed" &&
		grep "^0 _start open$" td && grep "^5 leak$" td &&
		# the stdout buffer'"'"'s stack, closed on load: * opens it out to _start
		sed -n "s/^tree #bottomup-tree: //p" k.out >bu &&
		sed -n "/^0 _IO_file_doallocate/,\$p" bu >sub &&
		cat sub && test "$(sed -n 1p sub)" = "0 _IO_file_doallocate open" &&
		! grep " closed$" sub && grep "_start$" sub && test $(wc -l <sub) -ge 5
	'

	# Each column'"'"'s total, for the whole recording and a window, is what
	# the commands count: report --json'"'"'s allocations, bytes, temporary
	# ones and peak, leaks'"'"' leaked bytes.
	column_totals() { # TRACE [RANGE]: "peak leaked allocated calls temporary"
		"$MEMSIGHT" report --json ${2:+--time "$2"} "$1" 2>/dev/null >ct.json &&
		"$MEMSIGHT" leaks --json ${2:+--time "$2"} "$1" 2>/dev/null >ctl.json &&
		perl -MJSON::PP -e "local \$/; my \$m = decode_json(<STDIN>)->{malloc}; my (\$c, \$b, \$t) = (0, 0, 0);
			open my \$l, q{<}, q{ctl.json}; my \$k = decode_json(<\$l>);
			for (@{\$m->{processes}}) { \$c += \$_->{calls}; \$b += \$_->{allocated_bytes}; \$t += \$_->{temporary} }
			print qq{peak \$m->{peak}{bytes} leaked \$k->{leaked_bytes} allocated \$b calls \$c temporary \$t\n}" <ct.json
	}
	test_expect_success 'each column'"'"'s total is the commands'"'"' figure: peak, leaked, allocated, allocations, temporary' '
		"$MEMSIGHT" record -q -e malloc -o tz.trace -- "$SAMPLES/alloc_zoo" temporary 300 >tz.truth &&
		"$MEMSIGHT" report --html tz.html tz.trace 2>/dev/null &&
		drive tz.html load totals:#topdown-tree totals:#bottomup-tree >tz.out &&
		cat tz.out &&
		test "$(fact errors tz.out)" = 0 &&
		column_totals tz.trace >want && cat want &&
		fact "totals #topdown-tree:" tz.out >got && test_cmp want got &&
		fact "totals #bottomup-tree:" tz.out >got && test_cmp want got &&
		grep "temporary [1-9]" want
	'

	test_expect_success 'a window'"'"'s columns: allocated, allocations and leaked are report --time'"'"'s and leaks --time'"'"'s' '
		hash=$(fact hash: w.out) &&
		range=$(fact "attr #timeline-range data-time:" w.out) &&
		drive churn.html "load:$hash" totals:#topdown-tree >wt.out &&
		cat wt.out && test "$(fact errors wt.out)" = 0 &&
		column_totals churn.trace "$range" | cut -d" " -f3-8 >want && cat want &&
		fact "totals #topdown-tree:" wt.out | cut -d" " -f3-8 >got &&
		test_cmp want got
	'

	test_expect_success 'temporary allocations as heaptrack counts them, in the trees: the sample'"'"'s own' '
		want=$(sed -n "s/^alloc_zoo: \([0-9]*\) temporary allocations of [0-9]* from temporaries .*/\1/p" tz.truth) &&
		test "$want" = 600 &&
		drive tz.html load click:bottomup-tree:temporaries totals:#callers-tree >tt.out &&
		cat tt.out && test "$(fact errors tt.out)" = 0 &&
		fact "totals #callers-tree:" tt.out | grep " temporary $want$"
	'

	test_expect_success 'the chart'"'"'s axes: the top bytes tick at or above the heap'"'"'s most, time ticks in order, a read-out under the pointer' '
		drive churn.html load "values:#timeline-yaxis text" "values:#timeline-xaxis text" hover:timeline-chart:0.5 \
			text:#timeline-readout attr:#timeline-readout:data-bucket >ax.out &&
		cat ax.out && test "$(fact errors ax.out)" = 0 &&
		"$MEMSIGHT" report --json churn.trace 2>/dev/null >cj.json &&
		most=$(perl -MJSON::PP -e "local \$/; my \$m = 0; \$m = \$_ > \$m ? \$_ : \$m for @{decode_json(<STDIN>)->{timeline}{heap_bytes}}; print \$m" <cj.json) &&
		top=$(fact "values #timeline-yaxis text:" ax.out | tr " " "\n" | tail -1) &&
		echo "most $most, top tick $top" && test "$top" -ge "$most" && test "$most" -gt 0 &&
		fact "values #timeline-xaxis text:" ax.out | tr " " "\n" >ticks && test $(wc -l <ticks) -ge 3 &&
		sort -g ticks | test_cmp ticks - &&
		k=$(fact "attr #timeline-readout data-bucket:" ax.out) &&
		heap=$(perl -MJSON::PP -e "local \$/; print decode_json(<STDIN>)->{timeline}{heap_bytes}[$k]" <cj.json) &&
		grep "^text #timeline-readout: +[0-9.]* m\{0,1\}s to +[0-9.]* m\{0,1\}s; .*malloc heap in use " ax.out &&
		echo "bucket $k: heap $heap" &&
		# On a grid line, which the axes draw across the chart: the
		# pointer still reaches the chart (the line under the second tick,
		# at 1 - its value / the top value of the chart'"'"'s height).
		second=$(fact "values #timeline-yaxis text:" ax.out | cut -d" " -f2) &&
		at=$(awk -v v="$second" -v t="$top" "BEGIN { printf \"%.6f\", 1 - v / t }") &&
		drive churn.html load "hover:timeline-chart:0.3:$at" text:#timeline-readout >grid.out &&
		cat grid.out &&
		grep "^text #timeline-readout: +[0-9.]* m\{0,1\}s to +[0-9.]* m\{0,1\}s; .*malloc heap in use " grid.out
	'

	test_expect_success 'the summary'"'"'s peak contributor is the stack report --json names at the peak' '
		drive many.html load text:#sum-peak-top attr:#sum-peak-top:data-bytes >pk.out &&
		cat pk.out && test "$(fact errors pk.out)" = 0 &&
		"$MEMSIGHT" report --json many.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$s = decode_json(<STDIN>)->{malloc}{peak}{stacks}[0];
			my (\$f) = grep { !/^(malloc|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|operator new.*)\$/ }
				map { \$_->{function} // qq{[\$_->{object}]} } @{\$s->{frames}};
			print \$s->{bytes}, qq{ }, \$f, qq{\n}" >want &&
		cat want && read bytes fn <want &&
		test "$(fact "attr #sum-peak-top data-bytes:" pk.out)" = "$bytes" &&
		fact "text #sum-peak-top:" pk.out | grep -F " from $fn"
	'

	test_expect_success 'the caller tree of a function three levels down: its callers out to main, the heaviest path open' '
		drive m.html load click:bottomup-tree:leak tree:#callers-tree tree:#callees-tree >ct.out &&
		cat ct.out && test "$(fact errors ct.out)" = 0 &&
		sed -n "s/^tree #callers-tree: //p" ct.out >up &&
		sed -n 1,3p up >got &&
		printf "0 leak open\n1 someFunc open\n2 main open\n" >want && test_cmp want got &&
		grep "^5 _start$" up &&
		test "$(sed -n "s/^tree #callees-tree: //p" ct.out)" = "0 leak"
	'

	test_expect_success '--focus on the command line and in the page: the same totals; --ignore the rest' '
		# loop_leak'"'"'s 1,000 blocks of 4 bytes come through someFunc; its
		# stdout buffer and libc'"'"'s own allocations do not.
		"$MEMSIGHT" report --html fo.html --focus "^some" m.trace 2>/dev/null &&
		drive fo.html load totals:#topdown-tree attr:#focus-input:value hash >fo.out &&
		drive m.html load fill:#focus-input:^some totals:#topdown-tree hash >fp.out &&
		drive m.html load fill:#ignore-input:^some totals:#topdown-tree >fi.out &&
		cat fo.out fp.out fi.out &&
		test "$(fact errors fo.out)" = 0 && test "$(fact errors fp.out)" = 0 &&
		test "$(fact "attr #focus-input value:" fo.out)" = "^some" &&
		fact "totals #topdown-tree:" fo.out >cli && fact "totals #topdown-tree:" fp.out >page &&
		test_cmp cli page &&
		grep "^hash: metric=leaked&focus=%5Esome$" fp.out &&
		grep "^peak 4000 leaked 4000 allocated 4000 calls 1000 temporary 0$" cli &&
		"$MEMSIGHT" report --json --focus "^some" m.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$t = decode_json(<STDIN>)->{stack_timeline};
			print \$t->{focus}, q{ }, \$t->{filtered_stacks} > 0 ? q{some} : q{none}, qq{\n}" >fj &&
		test "$(cat fj)" = "^some some" &&
		column_totals m.trace >all &&
		perl -e "my %a = split / /, <STDIN>; open my \$f, q{<}, q{cli}; my %c = split / /, <\$f>; open my \$g, q{<}, q{fi.out};
			my (\$l) = grep { s/^totals #topdown-tree: // } <\$g>; my %i = split / /, \$l;
			die qq{\$_: \$c{\$_} + \$i{\$_} != \$a{\$_}\n} for grep { \$_ ne q{peak} && \$c{\$_} + \$i{\$_} != \$a{\$_} } qw(allocated calls temporary)" <all &&
		test_must_fail "$MEMSIGHT" report --html bad.html --focus "(" m.trace 2>err &&
		test_one_line err && grep "^memsight report: --focus .(. is not an extended regular expression" err && ! test -e bad.html
	'

	test_expect_success 'the stacked chart'"'"'s key tells its stacks apart' '
		drive many.html load "texts:#stacked-key li" >key.out &&
		cat key.out && test "$(fact errors key.out)" = 0 &&
		fact "texts #stacked-key li:" key.out | tr "|" "\n" | sed "s/, up to .*//" >keys &&
		test $(wc -l <keys) -ge 3 && test -z "$(sort keys | uniq -d)"
	'

	test_expect_success 'the flat table'"'"'s top function and bytes are the functions command'"'"'s' '
		drive m.html load text:#functions-table\ tbody\ tr\ td "attr:#functions-table tbody tr td[data-col=leaked-self]:data-value" \
			"attr:#functions-table tbody tr td[data-col=leaked-total]:data-value" >t.out &&
		cat t.out &&
		"$MEMSIGHT" functions -e malloc -w leaked m.trace 2>/dev/null | sed -n 3p >top &&
		read self pct total tpct fn obj <top &&
		test "$(fact "text #functions-table tbody tr td:" t.out)" = "$fn" &&
		test "$(fact "attr #functions-table tbody tr td\[data-col=leaked-self\] data-value:" t.out)" = "$self" &&
		test "$(fact "attr #functions-table tbody tr td\[data-col=leaked-total\] data-value:" t.out)" = "$total"
	'

	# Every stack ends in one function: a column'"'"'s selves add up to the
	# column'"'"'s total, the trees'"'"' row of totals, for every metric.
	test_expect_success 'the flat table'"'"'s columns side by side: each column'"'"'s self figures add up to the trees'"'"' total' '
		drive tz.html load totals:#topdown-tree "values:#functions-table tbody td[data-col\$=-self]" >ft.out &&
		cat ft.out && test "$(fact errors ft.out)" = 0 &&
		fact "totals #topdown-tree:" ft.out >totals &&
		fact "values #functions-table tbody td\[data-col\$=-self\]:" ft.out >selves &&
		perl -e "open my \$t, q{<}, q{totals}; chomp(my \$l = <\$t>); my @p = split / /, \$l;
			my @k = @p[grep { !(\$_ % 2) } 0 .. \$#p]; my %t = @p;
			open my \$v, q{<}, q{selves}; chomp(my \$w = <\$v>); my @v = split / /, \$w; my %s;
			\$s{\$k[\$_ % @k]} += \$v[\$_] for 0 .. \$#v;
			print join(q{ }, map { qq{\$_ \$t{\$_}} } @k), qq{\n}, join(q{ }, map { qq{\$_ } . (\$s{\$_} // 0) } @k), qq{\n}" >both &&
		sed -n 1p both >want && sed -n 2p both >got &&
		cat want got && test_cmp want got
	'
fi

test_expect_success 'bad input: a BASE that is a FIFO, a directory or no trace gets one line, and no page is begun' '
	rm -f fifo && mkfifo fifo && printf junk >junk &&
	for b in fifo . /dev/null junk; do
		rm -f bad.html &&
		test_must_fail timeout 20 "$MEMSIGHT" report --html bad.html "$b" "$XOR" 2>err &&
		test_one_line err && ! test -e bad.html || return 1
	done &&
	grep "not a memsight trace" err &&
	test_must_fail timeout 20 "$MEMSIGHT" report --html bad.html fifo "$XOR" 2>err &&
	grep "^memsight report: .fifo. is not a regular file: give a trace file (a FIFO, device or directory cannot be one)$" err &&
	test_must_fail timeout 20 "$MEMSIGHT" diff fifo "$XOR" 2>err &&
	test_one_line err && grep "is not a regular file" err
'

test_expect_success 'bad input: an output that cannot be written, in one line' '
	test_must_fail "$MEMSIGHT" report --html /nonexistent/dir/r.html "$XOR" 2>err &&
	test_one_line err && grep "cannot create ./nonexistent/dir/r.html." err
'

# A disk that fills halfway through the page: a tmpfs smaller than it.
mkdir -p small
if mount -t tmpfs -o size=64k memsight-test small 2>/dev/null; then
	test_expect_success 'a full disk: one line, exit 1, and the page that was there stays whole' '
		test_must_fail "$MEMSIGHT" report --html small/p.html "$XOR" 2>err &&
		grep "cannot write .small/p.html.: No space left on device" err &&
		test "$(grep -c "^memsight report: cannot write" err)" = 1 &&
		test -z "$(ls small)" &&
		printf "<!DOCTYPE html>\n<p>before</p>\n" >small/p.html &&
		cp small/p.html before.html &&
		test_must_fail "$MEMSIGHT" report --html small/p.html "$XOR" 2>/dev/null &&
		cmp small/p.html before.html && test "$(ls small)" = p.html &&
		{ head -c 61440 /dev/zero >small/fill; true; } &&
		test_must_fail "$MEMSIGHT" flamegraph -o small/p.svg "$XOR" 2>err &&
		grep "No space left on device" err && test "$(ls small | tr "\n" " ")" = "fill p.html " &&
		test_must_fail "$MEMSIGHT" pprof -o small/p.pb.gz "$XOR" 2>err &&
		grep "No space left on device" err && test "$(ls small | tr "\n" " ")" = "fill p.html " &&
		cmp small/p.html before.html
	'
	umount small
else
	echo "# skipped: a full disk (a small tmpfs cannot be mounted here)"
fi

# Ended by a signal while the page is written (a Ctrl-C, a CI job's
# timeout): the page that was there stays, and nothing else is left.
if recording_allowed; then
	test_expect_success 'SIGTERM while the page is written: the page that was there stays whole, no other file' '
		"$MEMSIGHT" record -q -e malloc -o sig.trace -- "$SAMPLES/churn_leak" >/dev/null 2>&1 &&
		mkdir sig && printf "<!DOCTYPE html>\n<p>before</p>\n" >sig/p.html && cp sig/p.html before.html &&
		{ "$MEMSIGHT" report --html sig/p.html sig.trace 2>/dev/null & pid=$!; } &&
		n=0 && while ! ls sig/p.html.* >/dev/null 2>&1 && test $n -lt 1000; do sleep 0.01; n=$((n + 1)); done &&
		kill -TERM $pid &&
		{ wait $pid; status=$?; } && echo "status $status" &&
		test "$status" = 143 &&
		test "$(ls sig)" = p.html && cmp sig/p.html before.html
	'
fi

test_done
