#!/bin/sh
# Every -h prints exactly the synopsis README.md shows for it.
. "$(dirname "$0")/test-lib.sh"

readme_block() {
	awk -v want="<!-- help: $1 -->" '
		$0 == want { found = 1; next }
		found && /^```$/ { if (inside) exit; inside = 1; next }
		inside { print }
	' "$TOP/README.md"
}

# Every command there is, from the one table of them.
cmds=$("$MEMSIGHT" --list-commands) || exit 1
test_expect_success 'the command list names the commands -h shows' '
	test $(echo "$cmds" | wc -l) -ge 16 &&
	for c in $cmds; do "$MEMSIGHT" -h | grep -q "^  $c " || exit 1; done
'

for cmd in memsight $cmds; do
	test_expect_success "'$cmd -h' matches README.md" '
		readme_block '$cmd' >expect &&
		test -s expect &&
		if [ '$cmd' = memsight ]; then "$MEMSIGHT" -h >actual; else "$MEMSIGHT" '$cmd' -h >actual; fi &&
		test_cmp expect actual
	'
done

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
