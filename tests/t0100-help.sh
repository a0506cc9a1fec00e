#!/bin/sh
# Every command is in README.md's table with the summary memsight -h gives
# it; its options are its -h (and its man page, tests/t0110-install.sh).
. "$(dirname "$0")/test-lib.sh"

# Every command there is, from the one table of them.
cmds=$("$MEMSIGHT" --list-commands) || exit 1
test_expect_success 'the command list names the commands -h shows' '
	test $(echo "$cmds" | wc -l) -ge 16 &&
	for c in $cmds; do "$MEMSIGHT" -h | grep -q "^  $c " || exit 1; done
'

test_expect_success 'README.md lists every command, and only those, as memsight -h sums them up' '
	sed -n "/^## Commands$/,/^## [A-Z]/s/^| \`\([a-z]*\)\` | \(.*\) |$/\1 \2/p" "$TOP/README.md" >readme &&
	"$MEMSIGHT" -h | awk "/^  [a-z]/ { if (c) print c, s; c = \$1; sub(/^  [a-z]+ +/, \"\"); s = \$0; next }
		/^              / { sub(/^ +/, \"\"); s = s \" \" \$0; next } { if (c) print c, s; c = \"\" }
		END { if (c) print c, s }" | sed "s/|/\\\\|/g" >help &&
	test_cmp help readme
'

# The README's and the guides' command lines use only commands and options
# that exist: each memsight command in their sh blocks, and each option it
# gives, is in that command's -h.
test_expect_success 'every memsight command line in README.md and the guides names a command and options it has' '
	cat "$TOP/README.md" "$TOP"/record/*.md "$TOP"/analyze/cmd/*.md "$TOP"/flamegraph/*.md |
		perl -ne "print if /^\x60\x60\x60sh\$/ .. /^\x60\x60\x60\$/" |
		sed -e "s/ #.*//" -e "s/&&/\n/g; s/|/\n/g; s/;/\n/g" | sed -n "s/^ *\(memsight .*\)/\1/p" >lines &&
	test $(wc -l <lines) -ge 20 &&
	while read -r m cmd args; do
		"$MEMSIGHT" $cmd -h >h 2>/dev/null || { echo "no command: memsight $cmd"; return 1; }
		for a in $args; do
			test "$a" = "--" && break
			o=$(expr "x$a" : "x\(--[a-z][a-z-]*\)") || o=$(expr "x$a" : "x\(-[a-zA-Z]\)$") || continue
			grep -qE -- "(^|[ ,])$o([ ,=[]|\$)" h || { echo "memsight $cmd has no $o: $cmd $args"; return 1; }
		done
	done <lines
'

test_expect_success 'the helpers answer -h directly too' '
	"$BUILD/memsight-record" -h | head -1 | grep "^usage: memsight record" &&
	"$BUILD/memsight-analyze" -h | head -1 | grep "^usage: memsight-analyze" &&
	"$BUILD/memsight-flamegraph" -h | head -1 | grep "^usage: memsight flamegraph"
'

test_expect_success 'memsight help COMMAND is COMMAND -h' '
	"$MEMSIGHT" help record >help.record &&
	"$MEMSIGHT" record -h >h.record &&
	test_cmp h.record help.record &&
	"$MEMSIGHT" help leaks | head -1 | grep "^usage: memsight leaks" &&
	"$MEMSIGHT" help | grep "^usage: memsight COMMAND"
'

test_expect_success 'an unknown command is one line and a usage exit' '
	test_must_fail "$MEMSIGHT" frobnicate 2>err &&
	test_one_line err && grep "is not a memsight command; see" err
'

test_expect_success 'a mistyped command or long option: one line that names the one meant' '
	test_must_fail "$MEMSIGHT" lekas x.trace 2>err &&
	test_one_line err && grep "^memsight: .lekas. is not a memsight command (did you mean .leaks.?); see" err &&
	test_must_fail "$MEMSIGHT" flamegrpah 2>err &&
	test_one_line err && grep "did you mean .flamegraph.?" err &&
	test_must_fail "$MEMSIGHT" faults --pdi 3 x.trace 2>err &&
	test_one_line err && grep "^memsight faults: unknown option .--pdi. (did you mean .--pid.?); see .memsight faults -h.$" err &&
	test_must_fail "$MEMSIGHT" record --ouptut=x -- true 2>err &&
	test_one_line err && grep "did you mean .--output.?" err &&
	test_must_fail "$MEMSIGHT" leaks --zzzzzzz x.trace 2>err &&
	test_one_line err && ! grep "did you mean" err
'

test_done
