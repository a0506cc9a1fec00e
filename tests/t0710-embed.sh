#!/bin/sh
# Traces that travel: objects embedded at the end of a recording (--embed)
# or afterwards (memsight archive) give the original names and stacks when
# the binary is rebuilt or gone; without them, the unresolved table, never a
# wrong name.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

build_app() { cc -O2 -g -fomit-frame-pointer -fno-inline -o bin/app "$@" "$TOP/samples/fib_leak.c" -pthread; }

test_expect_success 'record the same program three ways: embedded minimal (default), full, and none' '
	mkdir bin &&
	build_app &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o min.trace -- bin/app 20 >truth &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed full -o full.trace -- bin/app 20 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o none.trace -- bin/app 20 >/dev/null &&
	cp none.trace archived.trace &&
	"$MEMSIGHT" archive archived.trace 2>err &&
	grep "^memsight archive: .archived.trace. now carries 3 objects" err &&
	test "$(stat -c %a archived.trace)" = 600 &&
	"$MEMSIGHT" info min.trace >info &&
	cat info &&
	grep "^embedded:    3 objects" info &&
	grep "^  minimal .* $PWD/bin/app$" info &&
	grep "^  minimal .* /usr/lib/x86_64-linux-gnu/libc.so.6$" info &&
	"$MEMSIGHT" info full.trace | grep "^  full .* $PWD/bin/app$" &&
	"$MEMSIGHT" info none.trace | grep "^embedded:    0 objects"
'

test_expect_success 'the binary rebuilt with other code: embedded objects give the original names' '
	build_app -Dfibonacci=other_name -Dchild=other_child &&
	for t in min full archived; do
		"$MEMSIGHT" folded -e malloc -w leaked $t.trace >$t.folded 2>$t.err &&
		cat $t.folded &&
		grep ";start_thread;child;fibonacci;calloc 163840$" $t.folded &&
		! grep other_ $t.folded || return 1
	done
'

test_expect_success 'without embedded objects: the unresolved table, never the new names' '
	"$MEMSIGHT" leaks none.trace >leaks 2>err &&
	cat leaks err &&
	grep "^163840 bytes in 20 allocations from stack" leaks &&
	! grep other_ leaks &&
	grep "frames unnamed in .$PWD/bin/app.: the file here has another build-id than the recorded" err
'

test_expect_success 'the binary gone: embedded objects still unwind and name it' '
	rm bin/app &&
	"$MEMSIGHT" folded -e malloc -w leaked min.trace >gone.folded 2>err &&
	grep ";start_thread;child;fibonacci;calloc 163840$" gone.folded &&
	! grep "stopped early" err
'

test_expect_success 'bad archive input: one line each' '
	test_must_fail "$MEMSIGHT" archive --embed sometimes min.trace 2>err &&
	test_one_line err && grep "unknown --embed mode .sometimes." err &&
	test_must_fail "$MEMSIGHT" archive no-such.trace 2>err &&
	test_one_line err && grep "no-such.trace" err &&
	head -c 3000 min.trace >cut.trace &&
	test_must_fail "$MEMSIGHT" archive cut.trace 2>err &&
	test_one_line err && grep "is not complete" err &&
	test_must_fail "$MEMSIGHT" record --embed sometimes -- true 2>err &&
	test_one_line err && grep "unknown --embed mode" err
'

test_done
