#!/bin/sh
# memsight errors: one program per memory error that really ends it, each
# recorded with -e malloc,faults,signals, and its entry held to the truth
# the program printed: the kind, the block, the offset or distance, and the
# faulting, allocating and freeing stacks. Then the same from a ring's
# snapshot saved by --trigger crash, and the gate's exit status.
. "$(dirname "$0")/test-lib.sh"

S=$SAMPLES

test_expect_success 'errors needs the signals group, and says how to record it' '
	test_must_fail "$MEMSIGHT" errors "$TOP/samples/traces/xor-8m.trace" 2>err &&
	cat err &&
	test_one_line err &&
	grep "has no signal events: record them with .memsight record -e signals." err
'

test_skip_unless_recording

truth() { sed -n "s/^mem_errors: $2 //p" "$1"; }

# errors --json's first entry: KEY=VALUE lines, and each stack as the
# functions of its frames, space-separated (frames, alloc, free).
entry() {
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("count=%d" % len(d["errors"]))
for e in d["errors"][:1]:
    for k in ("kind", "signal", "address", "distance", "recursion", "stack_depth_bytes", "proven", "access", "where",
              "detector", "check", "abort"):
        if k in e:
            print("%s=%s" % (k, e[k]))
    if "block" in e:
        print("block=%d size=%d offset=%d" % (e["block"]["address"], e["block"]["size"], e["block"]["offset"]))
    for k, name in (("frames", "frames"), ("alloc_frames", "alloc"), ("free_frames", "free")):
        if k in e:
            print("%s=%s" % (name, " ".join(f.get("function") or "?" for f in e[k])))
' "$1"
}

# Record MODE; its truth in MODE.truth, its entry in MODE.entry.
record_mode() {
	"$MEMSIGHT" record -e malloc,faults,signals -o $1.trace -- "$S/mem_errors" $1 >$1.truth 2>$1.err
	grep -q "the command was killed by SIG" $1.err || { cat $1.truth $1.err; return 1; }
	"$MEMSIGHT" errors --json $1.trace >$1.json 2>$1.err2 &&
	json_valid errors $1.json &&
	entry $1.json >$1.entry &&
	cat $1.truth $1.entry
}

has() { grep -q -x -- "$2" $1.entry || { echo "no '$2' in $1.entry"; return 1; }; }
# The first suspect of errors --json's first entry: address, size, and
# the functions of its allocating stack.
suspect() {
	/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["errors"][0]["suspects"][0]
print(s["address"], s["size"], " ".join(f.get("function") or "?" for f in s["alloc_frames"][:4]))
' "$1"
}
stack_starts() { grep -q "^$2=$3" $1.entry || { echo "$2 stack does not start '$3'"; return 1; }; }

test_expect_success 'use after free: a read 16 bytes into a freed 1 MiB block, with the three stacks' '
	record_mode uaf &&
	has uaf count=1 && has uaf kind=use-after-free && has uaf signal=SIGSEGV && has uaf access=read &&
	has uaf proven=True &&
	has uaf "block=$(($(truth uaf.truth block))) size=$(truth uaf.truth size) offset=$(truth uaf.truth offset)" &&
	has uaf "address=$(($(truth uaf.truth block) + 16))" &&
	stack_starts uaf frames "read_at use_after_free main" &&
	stack_starts uaf alloc "malloc make_block use_after_free main" &&
	stack_starts uaf free "free drop_block use_after_free main" &&
	"$MEMSIGHT" errors uaf.trace >uaf.text 2>/dev/null &&
	grep "^use after free at +[0-9.]*s: pid [0-9]* tid [0-9]* (mem_errors), SIGSEGV$" uaf.text &&
	grep "^	read of 0x[0-9a-f]*, 16 bytes into a block of 1.0 MiB freed [0-9.]* ms before$" uaf.text
'

test_expect_success 'use after free through the allocator'"'"'s own uprobes: the same entry' '
	"$MEMSIGHT" record -q --malloc-via uprobes -e malloc,faults,signals -o uafu.trace -- "$S/mem_errors" uaf \
		>uafu.truth 2>/dev/null;
	"$MEMSIGHT" errors --json uafu.trace >uafu.json 2>/dev/null &&
	entry uafu.json >uafu.entry && cat uafu.entry &&
	has uafu kind=use-after-free &&
	has uafu "block=$(($(truth uafu.truth block))) size=$(truth uafu.truth size) offset=16" &&
	stack_starts uafu alloc "malloc make_block use_after_free main" &&
	stack_starts uafu free "free drop_block use_after_free main"
'

test_expect_success 'heap overflow: a write 8 bytes past the end of a block, past its mapping' '
	record_mode overflow &&
	has overflow kind=heap-overflow && has overflow access=write &&
	has overflow "distance=$(truth overflow.truth distance)" &&
	has overflow "block=$(($(truth overflow.truth block))) size=$(truth overflow.truth size) offset=$(($(truth overflow.truth size) + 8))" &&
	stack_starts overflow frames "write_at heap_overflow main" &&
	stack_starts overflow alloc "malloc make_block heap_overflow main"
'

test_expect_success 'stack overflow: recursion to the guard gap, its frames folded, the stack as deep as its limit' '
	record_mode recursion &&
	has recursion kind=stack-overflow && has recursion signal=SIGSEGV &&
	n=$(sed -n "s/^recursion=//p" recursion.entry) && test "$n" -ge 20 &&
	stack_starts recursion frames "recurse recurse recurse" &&
	depth=$(sed -n "s/^stack_depth_bytes=//p" recursion.entry) &&
	lim=$(ulimit -s) &&
	{ test "$lim" = unlimited || { test "$depth" -le $((lim * 1024)) && test "$depth" -gt $((lim * 1024 - 65536)); }; } &&
	"$MEMSIGHT" errors recursion.trace >recursion.text 2>/dev/null &&
	grep "; the stack [0-9.]* [KMG]iB deep, from the highest stack pointer the thread showed$" recursion.text &&
	grep "in the guard gap below the thread.s stack; $n frames of recurse in a row in the recorded stack" recursion.text &&
	grep "^		\.\.\. the same frame [0-9]* more times$" recursion.text
'

test_expect_success 'a NULL dereference: the address, 24 bytes past NULL' '
	record_mode null &&
	has null kind=null-pointer && has null "address=$(($(truth null.truth address)))" &&
	stack_starts null frames "read_value main"
'

test_expect_success 'a double free glibc aborts on: both freeing stacks and the allocating one' '
	record_mode doublefree &&
	has doublefree count=1 && has doublefree kind=double-free && has doublefree signal=SIGABRT &&
	has doublefree "block=$(($(truth doublefree.truth block))) size=$(truth doublefree.truth size) offset=0" &&
	stack_starts doublefree frames "free drop_block double_free main" &&
	stack_starts doublefree free "free drop_block double_free main" &&
	stack_starts doublefree alloc "malloc make_block double_free main" &&
	"$MEMSIGHT" errors doublefree.trace 2>/dev/null | grep "^	free of 0x[0-9a-f]*, a block of 64 B freed [0-9.]* ms before; the allocator aborted$"
'

# glibc aborts through malloc_printerr, from the check that failed.
test_expect_success 'an overflow over the top chunk: heap corruption that glibc found, in _int_malloc, not a signal sent' '
	record_mode topsize &&
	has topsize count=1 && has topsize kind=heap-corruption && has topsize signal=SIGABRT &&
	has topsize "detector=glibc'"'"'s malloc" && has topsize check=_int_malloc &&
	"$MEMSIGHT" errors topsize.trace 2>/dev/null >text &&
	grep "^heap corruption at " text &&
	grep "^	glibc.s malloc found its heap corrupted (its check in _int_malloc): SIGABRT from abort()" text &&
	grep "^	1. 100 B at $(truth topsize.truth block), the highest live block of the heap the thread allocates from" text &&
	suspect topsize.json >suspect &&
	cat suspect &&
	grep -x "$(($(truth topsize.truth block))) 100 malloc make_block top_size main" suspect
'

test_expect_success 'a free that finds the next chunk'"'"'s size overwritten names the block being freed first' '
	record_mode nextsize &&
	has nextsize count=1 && has nextsize kind=heap-corruption && has nextsize check=_int_free &&
	suspect nextsize.json >suspect &&
	cat suspect &&
	grep -x "$(($(truth nextsize.truth block))) 2000 malloc make_block next_size main" suspect &&
	"$MEMSIGHT" errors nextsize.trace 2>/dev/null |
		grep "^	1. 2.0 KiB at $(truth nextsize.truth block), being freed when the allocator looked"
'

test_expect_success 'a non-canonical pointer is a wild pointer, and abort() is said as the process'"'"'s own' '
	record_mode wild &&
	has wild count=1 && has wild kind=wild-pointer && has wild signal=SIGSEGV &&
	grep -q "^where=a non-canonical address" wild.entry &&
	record_mode abort &&
	has abort count=1 && has abort kind=signal && has abort abort=True &&
	"$MEMSIGHT" errors abort.trace 2>/dev/null | grep "^	SIGABRT from the process.s own abort()$"
'

test_expect_success 'free of an interior pointer: the offset into the live block' '
	record_mode interior &&
	has interior count=1 && has interior kind=invalid-free && has interior signal=SIGABRT &&
	has interior "block=$(($(truth interior.truth block))) size=$(truth interior.truth size) offset=$(truth interior.truth offset)" &&
	stack_starts interior frames "free drop_block interior_free main" &&
	stack_starts interior alloc "malloc make_block interior_free main"
'

test_expect_success 'an error-free program: "no memory errors recorded", exit 0 with --fail, no fault said to stop short for the stack page it came before; 3 for an error' '
	"$MEMSIGHT" record -q -e malloc,faults,signals -o none.trace -- "$S/mem_errors" none >none.truth &&
	grep "^mem_errors: kind none$" none.truth &&
	"$MEMSIGHT" errors --fail none.trace >none.text 2>none.err &&
	grep "^# memsight errors of .none.trace.: no memory errors recorded$" none.text &&
	{ ! grep "no stack bytes" none.err || { cat none.err; false; }; } &&
	{ "$MEMSIGHT" errors --fail uaf.trace >/dev/null 2>&1; test $? = 3; }
'

test_expect_success 'a SIGSEGV the process handled and went on after (a JVM'"'"'s null check) is no crash' '
	"$MEMSIGHT" record -q -e malloc,faults,signals -o handled.trace -- "$S/mem_errors" handled >handled.truth &&
	grep "^mem_errors: recovered yes$" handled.truth &&
	"$MEMSIGHT" errors --fail handled.trace >handled.text 2>/dev/null &&
	cat handled.text &&
	grep "^# memsight errors of .handled.trace.: no memory errors recorded$" handled.text &&
	grep "^# and 1 signal that processes handled, no crash following" handled.text &&
	"$MEMSIGHT" errors --all --json handled.trace >handled.json 2>/dev/null &&
	json_valid errors handled.json &&
	entry handled.json >handled.entry && cat handled.entry &&
	has handled kind=null-pointer && has handled address=24 &&
	grep "\"handled\":true,\"recovered\":true" handled.json
'

# With signals alone, nothing is seen of the process after its handler:
# no crash followed, so it was none; a handler that gives up raises the
# signal again, and that is the crash.
test_expect_success 'with -e signals alone, a handled SIGSEGV is no crash; errors --fail exits 0' '
	"$MEMSIGHT" record -q -e signals -o sigonly.trace -- "$S/mem_errors" handled >/dev/null &&
	"$MEMSIGHT" errors --fail sigonly.trace >sigonly.text 2>/dev/null &&
	cat sigonly.text &&
	grep "^# memsight errors of .sigonly.trace.: no memory errors recorded$" sigonly.text &&
	"$MEMSIGHT" errors --all sigonly.trace | grep "handled: the process.s own handler took it, and no crash followed" &&
	{ "$MEMSIGHT" record -q -e signals -o nullonly.trace -- "$S/mem_errors" null >/dev/null 2>&1; true; } &&
	{ "$MEMSIGHT" errors --fail nullonly.trace >/dev/null 2>&1; test $? = 3; }
'

test_expect_success 'report lists the errors first, in text and in its HTML page' '
	"$MEMSIGHT" report uaf.trace >report 2>/dev/null &&
	head -1 report | grep "^# memsight errors of .uaf.trace.: 1 memory error$" &&
	grep "^# memsight report of " report &&
	"$MEMSIGHT" report none.trace 2>/dev/null | head -1 | grep "^# memsight report of " &&
	"$MEMSIGHT" report --html uaf.html uaf.trace 2>err &&
	grep "wrote .uaf.html.: the memory errors, the report, the leaks and" err &&
	grep -q "<nav><a href=\"#errors\">memory errors</a>" uaf.html &&
	grep -q "^use after free at " uaf.html &&
	if CHROMIUM=$(command -v chromium); then
		"$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$TRASH/chromium" --virtual-time-budget=3000 \
			--dump-dom "file://$TRASH/uaf.html" 2>/dev/null >uaf.dom &&
		grep -q "<td id=\"sum-errors\">1 use-after-free</td>" uaf.dom
	fi &&
	"$MEMSIGHT" report --html none.html none.trace 2>err &&
	grep "wrote .none.html.: the report, the leaks" err && ! grep -q "id=\"errors\"" none.html
'

test_expect_success 'without malloc, the kinds a mapping tells: a NULL dereference' '
	"$MEMSIGHT" record -q -e faults,signals -o nullonly.trace -- "$S/mem_errors" null >/dev/null 2>&1;
	"$MEMSIGHT" errors --json nullonly.trace >nullonly.json 2>/dev/null &&
	entry nullonly.json >nullonly.entry && cat nullonly.entry &&
	has nullonly kind=null-pointer && has nullonly address=24
'

test_expect_success 'a ring snapshot saved by --trigger crash holds the error' '
	mkdir ring && rm -f ring/* &&
	"$MEMSIGHT" record --ring 64M --trigger crash:mem_errors --after 0.2 -e malloc,faults,signals -o ring/r.trace \
		-- "$S/mem_errors" uaf >ring.truth 2>ring.err;
	cat ring.err &&
	grep "trigger crash: pid [0-9]* tid [0-9]* (mem_errors) got SIGSEGV" ring.err &&
	snap=$(ls ring/r.*.crash.trace) && test -n "$snap" &&
	"$MEMSIGHT" errors --json "$snap" >ring.json 2>/dev/null &&
	entry ring.json >ring.entry && cat ring.entry &&
	has ring kind=use-after-free &&
	has ring "block=$(($(truth ring.truth block))) size=$(truth ring.truth size) offset=16" &&
	stack_starts ring free "free drop_block use_after_free main"
'

test_expect_success 'a signal the process handles fires no crash trigger' '
	mkdir ring2 &&
	"$MEMSIGHT" record --ring 64M --trigger crash --after 0.2 -e faults,signals -o ring2/r.trace \
		-- "$S/mem_errors" handled >ring2.truth 2>ring2.err &&
	cat ring2.err &&
	grep "^mem_errors: recovered yes$" ring2.truth &&
	! grep "trigger crash" ring2.err &&
	! ls ring2/r.*.crash.trace 2>/dev/null
'

test_expect_success 'crash triggers: a bad COMM and a missing group are refused' '
	test_must_fail "$MEMSIGHT" record --ring 8M --trigger crash:waytoolongacommname -e signals -o x.trace -- true 2>err &&
	test_one_line err && grep "invalid trigger .crash:waytoolongacommname.: give crash, or crash:COMM" err &&
	test_must_fail "$MEMSIGHT" record --ring 8M --trigger crash -e faults -o x.trace -- true 2>err &&
	test_one_line err && grep "watches the signals events, which are not recorded: add signals to -e" err
'

test_done
