#!/bin/sh
# Flame graphs: well-formed, self-contained SVG whose frames carry the
# folded counts and whose widths add up.
. "$(dirname "$0")/test-lib.sh"

FIX=$TOP/tests/fixtures

# Per frame: depth, x, width, value, from the SVG's own attributes.
frames() {
	sed -n 's/.*<g class="f" data-v="\([^"]*\)" data-x="[^"]*" data-d="\([0-9]*\)"><title>.*<rect x="\([^"]*\)" y="[^"]*" width="\([^"]*\)".*/\2 \3 \4 \1/p' "$1"
}

# The widths of the frames of each depth add up to at most their parents',
# and the first level adds up to the root exactly (to rounding).
widths_add_up() {
	frames "$1" >frames.txt &&
	awk -v total="$2" '
		$1 == 0 { root = $3; rootv = $4 }
		$1 == 1 { sum1 += $3; v1 += $4 }
		END {
			printf "root width %s value %s, level 1 width %s value %s, folded total %s\n", root, rootv, sum1, v1, total
			if (rootv != total || v1 != total) exit 1
			d = root - sum1; if (d < 0) d = -d
			if (d > 0.05 * NR) exit 1
		}' frames.txt
}

test_expect_success 'perf-style folded input: well-formed, frames named, widths add up' '
	"$MEMSIGHT" flamegraph "$FIX/perf-collapsed.folded" >perf.svg &&
	xmllint --noout perf.svg &&
	grep "<title>read_in_chunks (812 samples, 62.41%)" perf.svg &&
	grep "<title>operator new(unsigned long) (409 samples" perf.svg &&
	grep "std::vector&lt;char, std::allocator&lt;char&gt; &gt;::_M_realloc_insert" perf.svg &&
	widths_add_up perf.svg 1301
'

test_expect_success 'stackcount-style folded input from standard input' '
	"$MEMSIGHT" flamegraph <"$FIX/stackcount.folded" >sc.svg &&
	xmllint --noout sc.svg &&
	grep "<title>__x64_sys_brk (3 samples" sc.svg &&
	widths_add_up sc.svg 6
'

test_expect_success 'options: title, subtitle, count name, palette, width' '
	"$MEMSIGHT" flamegraph --title "Heap <growth>" --subtitle "run 7" --countname bytes --width 800 \
		--color hot "$FIX/perf-collapsed.folded" >o.svg &&
	xmllint --noout o.svg &&
	grep "<text id=\"title\"[^>]*>Heap &lt;growth&gt;</text>" o.svg &&
	grep "<text id=\"subtitle\"[^>]*>run 7</text>" o.svg &&
	grep "(812 bytes," o.svg &&
	grep "<svg version=\"1.1\" width=\"800\"" o.svg &&
	! grep "#e0ffe0" o.svg
'

test_expect_success 'the mem palette is greens on a light green background' '
	grep "stop-color=\"#e0ffe0\"" perf.svg &&
	frames perf.svg >/dev/null &&
	sed -n "s/.*data-d=\"[1-9][0-9]*\".*fill=\"rgb(\([0-9]*\),\([0-9]*\),\([0-9]*\))\".*/\1 \2 \3/p" perf.svg >rgb &&
	test -s rgb &&
	awk "{ if (!(\$2 > \$1 && \$2 >= 150)) { print \"not green:\", \$0; exit 1 } }" rgb
'

test_expect_success 'colours are stable: a function keeps its colour across graphs' '
	a=$(grep -o "<title>malloc (.*fill=\"[^\"]*\"" perf.svg | sed "s/.*fill=//" | head -1) &&
	b=$(grep -o "<title>malloc (.*fill=\"[^\"]*\"" sc.svg | sed "s/.*fill=//" | head -1) &&
	test -n "$a" && test "$a" = "$b"
'

test_expect_success 'inverted: the root is drawn at the top' '
	"$MEMSIGHT" flamegraph --inverted "$FIX/perf-collapsed.folded" >inv.svg &&
	xmllint --noout inv.svg &&
	root_y=$(sed -n "s/.*data-d=\"0\">.*<rect x=\"[^\"]*\" y=\"\([0-9]*\)\".*/\1/p" inv.svg) &&
	leaf_y=$(sed -n "s/.*data-d=\"7\">.*<rect x=\"[^\"]*\" y=\"\([0-9]*\)\".*/\1/p" inv.svg | head -1) &&
	test "$root_y" -lt "$leaf_y"
'

test_expect_success 'minwidth leaves out narrow frames but keeps their counts' '
	"$MEMSIGHT" flamegraph --minwidth 50 "$FIX/perf-collapsed.folded" >mw.svg &&
	xmllint --noout mw.svg &&
	! grep "<title>__GI___clock_nanosleep" mw.svg &&
	grep "<title>all (1301 samples, 100.00%)" mw.svg
'

test_expect_success 'the SVG is self-contained: zoom, search and tooltips are in it' '
	grep -c "<script" perf.svg &&
	grep "function zoom" perf.svg && grep "function search" perf.svg &&
	grep "Matched: " perf.svg && grep "id=\"reset\"" perf.svg &&
	! grep "http://[^w]" perf.svg
'

test_expect_success 'a trace goes in directly: memsight flamegraph runs the analyzer' '
	T=$TOP/samples/traces/xor-8m.trace &&
	"$MEMSIGHT" flamegraph --debug-dir "$TOP/samples/traces/debug" "$T" >direct.svg &&
	xmllint --noout direct.svg &&
	grep "<title>read_in_chunks (2064 faults, 49.51%)" direct.svg &&
	"$MEMSIGHT" folded --debug-dir "$TOP/samples/traces/debug" "$T" >f.folded &&
	"$MEMSIGHT" flamegraph <f.folded >t.svg &&
	xmllint --noout t.svg &&
	total=$(awk "{ s += \$NF } END { print s }" f.folded) &&
	widths_add_up t.svg $total &&
	"$MEMSIGHT" flamegraph -e brk -w bytes "$T" >b.svg &&
	xmllint --noout b.svg && grep "<text id=\"title\"[^>]*>Heap Expansion (brk)</text>" b.svg
'

# Folded into a pipe, what the weights are goes with them; into a file,
# the lines alone unless asked.
test_expect_success 'folded | flamegraph: the unit and the title of the trace'"'"'s own graph, not samples' '
	T=$TOP/samples/traces/xor-8m.trace &&
	"$MEMSIGHT" folded -e brk -w bytes "$T" 2>/dev/null | "$MEMSIGHT" flamegraph >piped.svg &&
	"$MEMSIGHT" flamegraph -e brk -w bytes "$T" >direct.svg 2>/dev/null &&
	xmllint --noout piped.svg &&
	grep "<title>all ([0-9]* bytes, 100.00%)" piped.svg &&
	grep "<text id=\"title\"[^>]*>Heap Expansion (brk)</text>" piped.svg &&
	test_cmp direct.svg piped.svg &&
	"$MEMSIGHT" folded "$T" 2>/dev/null | head -1 >first &&
	grep "^# event faults weight count estimate no$" first &&
	"$MEMSIGHT" folded --no-header "$T" 2>/dev/null | grep -c "^#" >n; test "$(cat n)" = 0 &&
	"$MEMSIGHT" folded "$T" >plain.folded 2>/dev/null && ! grep "^#" plain.folded &&
	"$MEMSIGHT" flamegraph <plain.folded >plain.svg && grep "<title>all ([0-9]* samples, 100.00%)" plain.svg
'

# What a folded line can hold, from whatever made it: the SVG must stay
# well-formed XML and the numbers real ones.
test_expect_success 'frame names that are not UTF-8, and long ones of multi-byte characters cut short: well-formed SVG' '
	{ printf "x;" && awk "BEGIN { for (i = 0; i < 400; i++) printf \"\\303\\251\" }" && printf " 5\n" &&
	  printf "bad;\377\376;\303;ctl\001 3\n"; } >utf8.folded &&
	"$BUILD/memsight-flamegraph" --title "\377 title" utf8.folded >utf8.svg &&
	xmllint --noout utf8.svg &&
	grep "\.\.</text>" utf8.svg
'

test_expect_success 'counts that are not finite numbers, or whose sum is not: one line with the line number' '
	printf "a;b 1\na;b nan\n" >nan.folded &&
	test_must_fail "$BUILD/memsight-flamegraph" nan.folded >/dev/null 2>err &&
	test_one_line err && grep "line 2: .nan. is not a count a flame graph can draw" err &&
	printf "a;b inf\n" | test_must_fail "$BUILD/memsight-flamegraph" >/dev/null 2>err &&
	test_one_line err && grep "line 1: .inf. is not a count" err &&
	printf "a;b 1e308\na;c 1e308\n" | test_must_fail "$BUILD/memsight-flamegraph" >/dev/null 2>err &&
	test_one_line err && grep "line 2: .1e308. is not a count a flame graph can draw" err
'

test_expect_success 'a stack a million frames deep: drawn to a bounded depth, no crash' '
	awk "BEGIN { for (i = 0; i < 1000000; i++) printf \"f%d;\", i; print \"leaf 1\" }" >deep.folded &&
	"$BUILD/memsight-flamegraph" deep.folded >deep.svg 2>err &&
	grep "stacks deeper than 4096 frames are drawn to that depth" err &&
	xmllint --noout deep.svg &&
	test "$(stat -c %s deep.svg)" -lt 10000000
'

# Found by fuzz-folded: a total so small that the graph's width over it is
# past every double (tests/fuzz/corpus/folded/denormal-total).
test_expect_success 'weights too small to scale make a valid, empty graph, not infinite widths' '
	printf "a;b 3e-313\n" >tiny.folded &&
	"$MEMSIGHT" flamegraph tiny.folded >tiny.svg &&
	xmllint --noout tiny.svg &&
	! grep -q "inf\"" tiny.svg
'

test_done
