#!/bin/sh
# The README's command blocks, run as written: every line of its sh blocks
# (but the set-up block's make commands, which are what runs this test), in
# a directory laid out as the tree is (build/ and the README), with build/
# on the PATH. A line exits 0, or the status its comment says it exits with
# ("exits N"), and writes what its comment's command would: the test reads
# the lines from the README itself, so the two cannot drift.
. "$(dirname "$0")/test-lib.sh"

test_skip_unless_recording

# The lines of FILE's sh blocks, a line continued with a backslash joined.
sh_lines() {
	perl -ne 'if (/^```sh$/ .. /^```$/) { print unless /^```/ || /^make / }' "$1" | perl -pe 's/\\\n//'
}

test_expect_success 'every command line of the README runs as written' '
	ln -s "$TOP/build" build && cp "$TOP/README.md" . &&
	sh_lines README.md >lines &&
	test $(wc -l <lines) -ge 10 &&
	n=0 &&
	while IFS= read -r line; do
		want=$(expr "x$line" : "x.*#.* exits \([0-9][0-9]*\)") || want=0
		cmd=${line%%#*}
		sh -c "$cmd" >out 2>err </dev/null
		got=$?
		n=$((n + 1))
		test "$got" = "$want" || { cat out err; echo "exit $got, not $want: $cmd"; return 1; }
	done <lines &&
	echo "# $n lines ran" &&
	test -s leak.svg && test -s report.html && test -s faults.svg &&
	"$MEMSIGHT" errors crash.trace 2>/dev/null | grep -q "^use after free at "
'

test_done
