#!/bin/sh
# Leak tables that can be trusted on real programs: no phantom leaks from
# lost events, every call counted once, the runtime's own allocations
# suppressed, other allocators seen.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$BUILD/samples

for g in dwarf fp none; do
	test_expect_success "C++ new in many threads, delete in another (-g $g): nothing lost, nothing leaked" '
		"$MEMSIGHT" record -q -e malloc -g '$g' -o cx.trace -- "$S/cxx_threads" 200 1000 50 >truth &&
		grep "^cxx_threads: leaked 0 bytes in 0 allocations$" truth &&
		"$MEMSIGHT" info cx.trace >info &&
		grep "^lost: *0$" info &&
		"$MEMSIGHT" leaks --json --fail-over 0 cx.trace >leaks.json &&
		grep "\"incomplete\":false,\"lost\":0,\"leaked_bytes\":0," leaks.json &&
		"$MEMSIGHT" leaks cx.trace >leaks &&
		cat leaks &&
		grep "^# memsight leaks of .cx.trace.: 0 bytes in 0 allocations outstanding from 0 stacks$" leaks &&
		! grep INCOMPLETE leaks
	'
done

# One page of ring, drained every few milliseconds, cannot hold a burst of
# uprobe samples: the recording loses events, and says so everywhere.
test_expect_success 'a recording that lost events: leaks says INCOMPLETE, marks the stacks, and the gate exits 4' '
	"$MEMSIGHT" record -e malloc -m 1 -o lossy.trace -- "$S/cxx_threads" 100 1000 50 >truth 2>rec.err &&
	cat rec.err &&
	grep "^memsight record: LOST [1-9][0-9]* events" rec.err &&
	"$MEMSIGHT" leaks lossy.trace >leaks &&
	head -5 leaks &&
	grep "^# INCOMPLETE: events were lost while recording" leaks &&
	"$MEMSIGHT" leaks --json lossy.trace >leaks.json &&
	grep "\"incomplete\":true,\"lost\":[1-9][0-9]*," leaks.json &&
	{ "$MEMSIGHT" leaks --fail-over 100000000 lossy.trace >/dev/null 2>err; test $? = 4; } &&
	test_one_line err &&
	grep "the trace is incomplete (events were lost): cannot tell whether the leaks pass --fail-over" err
'

test_expect_success 'a complete trace still gates with 3 and passes with 0' '
	"$MEMSIGHT" record -q -e malloc -o loop.trace -- "$S/loop_leak" 100 >truth &&
	"$MEMSIGHT" leaks --fail-over 400 loop.trace >/dev/null &&
	{ "$MEMSIGHT" leaks --fail-over 399 loop.trace >/dev/null 2>err; test $? = 3; }
'

test_done
