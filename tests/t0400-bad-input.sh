#!/bin/sh
# Bad input: one line that says what is wrong and how to fix it, a non-zero
# exit that is not a crash, and no file left behind.
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'unknown event group' '
	mkdir ueg && cd ueg &&
	test_must_fail "$MEMSIGHT" record -e brk,bogus -o t.trace -- true 2>../err &&
	test_one_line ../err && grep "unknown event group .bogus.: known groups are brk, mmap, faults" ../err &&
	test -z "$(ls -A)"
'

test_expect_success 'missing pid' '
	pid=$(sh -c "echo \$\$") &&
	while kill -0 $pid 2>/dev/null; do pid=$((pid + 1000)); done &&
	test_must_fail "$MEMSIGHT" record -o t.trace -p $pid 2>err &&
	test_one_line err && grep "no process with pid $pid: check it with .ps -p $pid." err &&
	test ! -e t.trace
'

test_expect_success 'malformed pid list' '
	test_must_fail "$MEMSIGHT" record -p 12,x3 2>err &&
	test_one_line err && grep "invalid pid .x3. in -p" err
'

test_expect_success 'no target' '
	test_must_fail "$MEMSIGHT" record -o t.trace 2>err &&
	test_one_line err && grep "nothing to record: give -p PID, -a, or -- COMMAND" err &&
	test ! -e t.trace
'

test_expect_success 'bad option values' '
	test_must_fail "$MEMSIGHT" record -d soon -- true 2>err &&
	test_one_line err && grep "invalid duration .soon." err &&
	for d in 1m5 5x -1s ""; do
		test_must_fail "$MEMSIGHT" record -d "$d" -- true 2>err &&
		test_one_line err && grep "invalid duration" err || return 1
	done &&
	test_must_fail "$MEMSIGHT" record -m 1000 -- true 2>err &&
	test_one_line err && grep "power of two" err &&
	test_must_fail "$MEMSIGHT" record -g lbr -- true 2>err &&
	test_one_line err && grep "unknown call-graph mode .lbr." err
'

test_expect_success 'a file that is not a trace, for every analyzer command' '
	echo "hello" >notes.txt &&
	for c in info events report folded; do
		test_must_fail "$MEMSIGHT" $c notes.txt >out 2>err &&
		test_one_line err && grep "not a memsight trace" err && test ! -s out || return 1
	done
'

test_expect_success 'a perf.data file is named as perf'"'"'s, for every analyzer command' '
	printf "PERFILE2" >perf.data &&
	head -c 4096 /dev/zero >>perf.data &&
	for c in info report leaks folded; do
		test_must_fail "$MEMSIGHT" $c perf.data >out 2>err &&
		test_one_line err && grep "a perf.data file (perf record.s output), not a memsight trace" err &&
		test ! -s out || return 1
	done
'

# A mistyped -o must not cost anyone their source: every output replaces
# only what it could have written itself, or an empty file.
test_expect_success 'no output replaces a file it could not have written' '
	XOR=$TOP/samples/traces/xor-8m.trace &&
	echo "int main(void) { return 0; }" >victim.c &&
	cp victim.c orig.c &&
	test_must_fail "$MEMSIGHT" record -e brk -o victim.c -- true 2>err &&
	test_one_line err && grep "^memsight record: .victim.c. exists and is not a memsight trace, which this output would replace: remove it first, or give another name$" err &&
	test_must_fail "$MEMSIGHT" report --html victim.c "$XOR" >out 2>err &&
	test_one_line err && grep "is not an HTML page" err &&
	test_must_fail "$MEMSIGHT" rss --svg victim.c "$XOR" >out 2>err &&
	test_one_line err && grep "is not an SVG file" err &&
	test_must_fail "$MEMSIGHT" pprof -e faults -o victim.c "$XOR" 2>err &&
	test_one_line err && grep "is not a pprof profile" err &&
	test_must_fail "$MEMSIGHT" flamegraph -e faults -o victim.c "$XOR" 2>err &&
	test_one_line err && grep "is not an SVG file" err &&
	test_cmp orig.c victim.c &&
	echo "not a pid" >notpid &&
	test_must_fail "$MEMSIGHT" record -q -e brk --pidfile notpid -o p.trace -- true 2>err &&
	test_one_line err && grep "is not a pid file" err &&
	if recording_allowed; then
		: >empty.trace &&
		"$MEMSIGHT" record -q -e brk -o empty.trace -- true &&
		"$MEMSIGHT" info empty.trace >/dev/null &&
		cp empty.trace first.trace &&
		"$MEMSIGHT" record -q -e brk -o empty.trace -- true &&
		cmp first.trace empty.trace.old &&
		"$MEMSIGHT" record -q -e brk -f -o victim.c -- true &&
		"$MEMSIGHT" info victim.c >/dev/null && test ! -e victim.c.old
	fi &&
	"$MEMSIGHT" flamegraph -e faults -o f.svg "$XOR" 2>/dev/null &&
	"$MEMSIGHT" flamegraph -e faults -o f.svg "$XOR" 2>/dev/null
'

test_expect_success 'a missing file' '
	test_must_fail "$MEMSIGHT" report nosuch.trace 2>err &&
	test_one_line err && grep "cannot open .nosuch.trace.: No such file or directory" err
'

# As perf report reads perf.data: an analyzer given no trace reads
# ./memsight.trace, where record writes without -o; -i names one too.
test_expect_success 'no trace given: ./memsight.trace, or -i FILE; both, or neither there, one line' '
	mkdir dflt && cd dflt &&
	test_must_fail "$MEMSIGHT" faults 2>err &&
	test_one_line err &&
	grep "give a trace file: there is no ./memsight.trace here, where memsight record writes without -o (see memsight faults -h)" err &&
	cp "$TOP/samples/traces/xor-8m.trace" xor.trace &&
	"$MEMSIGHT" faults xor.trace >by-name &&
	"$MEMSIGHT" faults -i xor.trace >by-i &&
	test_cmp by-name by-i &&
	cp xor.trace memsight.trace &&
	"$MEMSIGHT" faults >by-default &&
	sed "s/memsight.trace/xor.trace/" by-default >by-default.renamed &&
	test_cmp by-name by-default.renamed &&
	"$MEMSIGHT" info | grep "^file: *memsight.trace " &&
	test_must_fail "$MEMSIGHT" leaks -i xor.trace xor.trace 2>err &&
	test_one_line err &&
	grep "give one trace file, as FILE or with -i" err
'

test_expect_success 'bad analyzer options' '
	"$BUILD/test-tool" write t.trace &&
	test_must_fail "$MEMSIGHT" folded -e bogus t.trace 2>err &&
	test_one_line err && grep "unknown event .bogus." err &&
	test_must_fail "$MEMSIGHT" folded -w furlongs t.trace 2>err &&
	test_one_line err && grep "unknown weight .furlongs." err &&
	test_must_fail "$MEMSIGHT" report -T many t.trace 2>err &&
	test_one_line err && grep "invalid value .many. for --top" err &&
	test_must_fail "$MEMSIGHT" folded --time 0.5,0.3 t.trace 2>err &&
	test_one_line err && grep "END (0.3 s) is not after START (0.5 s)" err &&
	test_must_fail "$MEMSIGHT" folded --time soon t.trace 2>err &&
	test_one_line err && grep "give START,END in seconds" err &&
	test_must_fail "$MEMSIGHT" events -e bogus "$TOP/samples/traces/xor-8m.trace" >out 2>err &&
	test_one_line err && grep "^memsight events: -e .bogus.: .*xor-8m.trace. has no event or group of that name (it holds brk, mmap, faults" err &&
	test ! -s out
'

# As the message says: a time alone is where the window starts.
test_expect_success '--time 10s is --time 10s, (from 10 s on)' '
	T=$TOP/samples/traces/xor-8m.trace &&
	"$MEMSIGHT" folded --time 0.01 "$T" >alone 2>/dev/null &&
	"$MEMSIGHT" folded --time 0.01, "$T" >comma 2>/dev/null &&
	test -s alone && test_cmp comma alone &&
	"$MEMSIGHT" folded "$T" >all 2>/dev/null && ! cmp -s all alone
'

test_expect_success 'flamegraph: no stacks, bad palette, unreadable input' '
	echo "nothing folded here" >plain &&
	test_must_fail "$MEMSIGHT" flamegraph plain >out 2>err &&
	grep "no stacks in plain" err && test ! -s out &&
	test_must_fail "$MEMSIGHT" flamegraph --color plaid plain 2>err &&
	test_one_line err && grep "unknown palette .plaid." err &&
	test_must_fail "$MEMSIGHT" flamegraph nosuch 2>err &&
	test_one_line err && grep "cannot open .nosuch." err
'

# As perf report reads perf.data: at a terminal (here /dev/null) no FILE
# is ./memsight.trace; a pipe or a file on standard input is read.
# flamegraph folds a trace through the analyzer: what that says is said
# under the name of the command the user ran.
test_expect_success 'flamegraph of a trace without the event: said by memsight flamegraph alone' '
	test_must_fail "$MEMSIGHT" flamegraph -e malloc "$TOP/samples/traces/xor-8m.trace" >out 2>err &&
	cat err && test -s err && ! grep -v "^memsight flamegraph: " err
'

test_expect_success 'flamegraph with no FILE: ./memsight.trace unless something is piped in' '
	mkdir -p fgdir && cd fgdir &&
	test_must_fail "$MEMSIGHT" flamegraph </dev/null >out 2>err &&
	test_one_line err && grep "no input: no FILE given, nothing piped in, and no ./memsight.trace here" err &&
	cp "$TOP/samples/traces/xor-8m.trace" memsight.trace &&
	"$MEMSIGHT" flamegraph </dev/null >t.svg 2>/dev/null && grep -q "xor_encoder" t.svg &&
	printf "a;b 3\n" | "$MEMSIGHT" flamegraph >p.svg && grep -q "<title>b (3 samples" p.svg &&
	cd ..
'

if "$BUILD/memsight-record" -q -e faults -o "$TRASH/.p.trace" -- true 2>/dev/null; then
	rm -f "$TRASH/.p.trace"
	test_expect_success 'command not found leaves no file behind' '
		mkdir cnf && cd cnf &&
		test_must_fail "$MEMSIGHT" record -o t.trace -- no-such-command-here 2>err &&
		test_one_line err && grep "command not found: .no-such-command-here." err &&
		test -z "$(ls -A | grep -v "^err$")"
	'

	# Followed with ptrace, the child that failed to exec stops at its
	# exit; the recorder hung there, waiting for the probes' guard.
	test_expect_success 'command not found under --leak-check: the same line, and an exit' '
		test_must_fail timeout -k 10 60 "$MEMSIGHT" record -e malloc --leak-check -o lc.trace -- no-such-command-here \
			2>err &&
		test_one_line err && grep "command not found: .no-such-command-here." err &&
		test ! -e lc.trace
	'

	test_expect_success 'unwritable output' '
		test_must_fail "$MEMSIGHT" record -o /nonexistent-dir/t.trace -- true 2>err &&
		test_one_line err && grep "cannot create ./nonexistent-dir/t.trace.: No such file or directory" err
	'

	test_expect_success 'an existing trace survives a failed start' '
		"$MEMSIGHT" record -q -e faults -o keep.trace -- true &&
		cp keep.trace before &&
		test_must_fail "$MEMSIGHT" record -o keep.trace -- no-such-command-here 2>err &&
		cmp before keep.trace
	'
else
	echo "# recording is not possible here; skipping the recorder's bad-input tests"
fi

test_done
