#!/bin/sh
# The guard mode (record --guard): errors that never crash under glibc's
# malloc fault where they happen, in a block served from a slot between
# inaccessible pages, and memsight errors names each with its kind, access,
# offset and stacks, held to the truth samples/quiet_errors prints. Then the
# recoverable mode, the default rate's odds, a service guarded by its own
# preload and recorded with -p, and the bundled samples guarded at every
# allocation: no false report, no leak table changed.
. "$(dirname "$0")/test-lib.sh"

S=$SAMPLES
LIB=$BUILD/libmemsight-sample.so

test_expect_success 'without the guard, none of the errors crashes' '
	for m in uaf overflow underflow thread realloc; do
		"$S/quiet_errors" $m >$m.plain; rc=$?
		test $rc = 7 || { echo "$m ended $rc"; return 1; }
	done
'

test_expect_success 'a bad --guard rate is one clear line' '
	test_must_fail "$MEMSIGHT" record --guard=0 -- true 2>err &&
	test_one_line err && grep "invalid --guard .0.: give N" err &&
	test_must_fail "$MEMSIGHT" record --guard -a 2>err &&
	test_one_line err && grep "^memsight record: --guard starts a command" err
'

test_skip_unless_recording

truth() { sed -n "s/^quiet_errors: $2 //p" "$1"; }

# errors --json: count=N, and for the first entry KEY=VALUE lines and each
# stack as its functions, space-separated (frames, alloc, free).
entry() {
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("count=%d" % len(d["errors"]))
print("guarded=%d" % d.get("guard", {}).get("allocations", -1))
for e in d["errors"][:1]:
    for k in ("kind", "signal", "access", "guard", "recovered", "proven", "where"):
        if k in e:
            print("%s=%s" % (k, e[k]))
    if "block" in e:
        print("size=%d offset=%d" % (e["block"]["size"], e["block"]["offset"]))
        print("from_address=%d" % (e["address"] - e["block"]["address"]))
    for k, name in (("frames", "frames"), ("alloc_frames", "alloc"), ("free_frames", "free")):
        if k in e:
            print("%s=%s" % (name, " ".join(f.get("function") or "?" for f in e[k])))
' "$1"
}

has() { grep -q -x -- "$2" $1.entry || { echo "no '$2' in $1.entry"; return 1; }; }
stack_starts() { grep -q "^$2=$3" $1.entry || { echo "$2 stack does not start '$3'"; return 1; }; }

# Record MODE with the guard at every allocation (and OPTS); the truth in
# MODE.truth, the recorder's exit status in MODE.rc, the entry in
# MODE.entry, checked against the truth's kind, access, size and offset.
guarded() {
	m=$1 && shift &&
	{ "$MEMSIGHT" record -q --guard=1 "$@" -o $m.trace -- "$S/quiet_errors" $m >$m.truth 2>$m.err; echo $? >$m.rc; } &&
	"$MEMSIGHT" errors --json $m.trace >$m.json 2>$m.err2 &&
	json_valid errors $m.json &&
	entry $m.json >$m.entry &&
	cat $m.truth $m.rc $m.entry &&
	has $m count=1 && has $m guard=True && has $m signal=SIGSEGV &&
	has $m "kind=$(truth $m.truth kind)" && has $m "access=$(truth $m.truth access)" &&
	has $m "size=$(truth $m.truth size) offset=$(truth $m.truth offset)" &&
	has $m "from_address=$(truth $m.truth offset)"
}

test_expect_success 'without the guard, a recording sees no error' '
	"$MEMSIGHT" record -q -e malloc,faults,signals -o plain.trace -- "$S/quiet_errors" uaf >/dev/null 2>&1; rc=$? &&
	test $rc = 7 &&
	"$MEMSIGHT" errors plain.trace 2>/dev/null >text &&
	grep "^# memsight errors of .plain.trace.: no memory errors recorded$" text &&
	! grep "guard" text
'

test_expect_success 'a read 24 bytes into a freed 32-byte block: use after free, with the three stacks' '
	guarded uaf &&
	test "$(cat uaf.rc)" = 139 && ! grep -q "^quiet_errors: done" uaf.truth &&
	has uaf proven=True &&
	stack_starts uaf frames "read_word use_after_free main" &&
	stack_starts uaf free "free drop_block use_after_free main" &&
	stack_starts uaf alloc "malloc make_block use_after_free main" &&
	"$MEMSIGHT" errors uaf.trace 2>/dev/null >text &&
	grep "^use after free at " text &&
	grep "^	read of 0x[0-9a-f]*, 24 bytes into a block of 32 B freed [0-9.]* ms before$" text &&
	grep "^	caught by memsight.s guard$" text &&
	grep "^# the guard served [1-9][0-9]* allocations\{0,1\} from its slots (one in 1 asked, 64 slots)" text
'

test_expect_success 'a write one byte past a 100-byte block: heap overflow, at once' '
	guarded overflow &&
	stack_starts overflow frames "write_byte main" &&
	stack_starts overflow alloc "malloc make_block main" &&
	"$MEMSIGHT" errors overflow.trace 2>/dev/null | grep "^	write of 0x[0-9a-f]*, 0 bytes past the end of a live block of 100 B at 0x"
'

test_expect_success 'a write 8 bytes before a 64-byte block: heap underflow' '
	guarded underflow &&
	stack_starts underflow frames "write_word main" &&
	stack_starts underflow alloc "malloc make_block main" &&
	"$MEMSIGHT" errors underflow.trace 2>/dev/null | grep "^	write of 0x[0-9a-f]*, 8 bytes before the start of a live block of 64 B at 0x"
'

test_expect_success 'a use after free in another thread' '
	guarded thread &&
	stack_starts thread frames "read_word reader" &&
	stack_starts thread free "free drop_block main" &&
	stack_starts thread alloc "malloc make_block main" &&
	tid=$(/usr/bin/python3 -c "import json,sys; e=json.load(open(sys.argv[1]))[\"errors\"][0]; print(e[\"tid\"] != e[\"pid\"])" thread.json) &&
	test "$tid" = True
'

test_expect_success 'a guarded block grown by realloc, then read through its old pointer' '
	guarded realloc &&
	stack_starts realloc frames "read_word main" &&
	stack_starts realloc free "realloc main" &&
	stack_starts realloc alloc "malloc make_block main"
'

test_expect_success 'recoverable: each error reported once, and the program runs to its end with its own code' '
	for m in uaf overflow underflow thread realloc; do
		mkdir -p recover && (cd recover && guarded $m --guard-recover) || return 1
		test "$(cat recover/$m.rc)" = 7 || { echo "$m: exit $(cat recover/$m.rc)"; return 1; }
		grep -q "^quiet_errors: done $m" recover/$m.truth &&
		grep -q "^memsight guard: .*recovered: the program goes on at 0x" recover/$m.err &&
		grep -q -x "recovered=True" recover/$m.entry || return 1
	done &&
	"$MEMSIGHT" errors recover/uaf.trace 2>/dev/null >text &&
	grep "^	caught by memsight.s guard, which opened the page: the process went on$" text
'

# One guarded allocation in 5000 by default, each thread counting down a
# uniform draw with that mean: over 100,000 errors on fresh blocks, 20
# caught on average (the bounds are more than 3 standard deviations out).
test_expect_success 'at the default rate, a repeated error is caught about once in 5000' '
	"$MEMSIGHT" record -q --guard-recover -o loop.trace -- "$S/quiet_errors" loop 100000 >truth 2>err; rc=$? &&
	test $rc = 7 &&
	"$MEMSIGHT" errors --json loop.trace >loop.json 2>/dev/null &&
	json_valid errors loop.json &&
	entry loop.json >loop.entry &&
	n=$(sed -n "s/^count=//p" loop.entry) && g=$(sed -n "s/^guarded=//p" loop.entry) &&
	echo "caught $n of 100000, the guard served $g" &&
	test $n -ge 6 && test $n -le 40 && test $n = $g &&
	test $(grep -c "^memsight guard: use after free, recovered" err) = $n &&
	/usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"guard\"] == {\"allocations\": $g, \"rate\": 5000, \"recover\": True}, d[\"guard\"]
assert all(e[\"kind\"] == \"use-after-free\" and e[\"block\"][\"offset\"] == 24 for e in d[\"errors\"])
" loop.json
'

# A service started with the wrapper and the guard by hand, recorded later:
# its blocks are sampled, the guarded ones reported whatever the sampling
# says; one block was allocated before the recording began.
test_expect_success '-p on a service that runs with the guard: one error with its stacks, one from the pool alone' '
	mkfifo in &&
	{ LD_PRELOAD=$LIB MEMSIGHT_GUARD=1,recover "$S/quiet_errors" serve <in >serve.out 2>serve.err & } &&
	exec 8>in &&
	i=0 && while [ $i -lt 50 ] && ! grep -q "^quiet_errors: pid" serve.out; do sleep 0.1; i=$((i + 1)); done &&
	pid=$(truth serve.out pid) &&
	{ "$MEMSIGHT" record -e malloc,faults,signals -p $pid --pidfile rec.pid -o p.trace 2>rec 8>&- & } &&
	i=0 && while [ $i -lt 200 ] && ! test -s rec.pid; do sleep 0.1; i=$((i + 1)); done &&
	sleep 0.3 && printf "uaf\nearly\n" >&8 &&
	exec 8>&- &&
	wait &&
	cat rec serve.out serve.err &&
	grep -q "malloc: the process runs with the allocation sampler" rec &&
	grep -q "^quiet_errors: served early" serve.out &&
	"$MEMSIGHT" errors p.trace 2>/dev/null >text &&
	cat text &&
	grep "^# memsight errors of .p.trace.: 2 memory errors$" text &&
	grep "^# the guard served [1-9][0-9]* allocations\{0,1\} from its slots (at the rate the process ran with)" text &&
	grep "^	read of 0x[0-9a-f]*, 24 bytes into a block of 32 B freed" text &&
	grep "^	read of 0x[0-9a-f]*, in a guarded slot freed before; the block.s allocation was not recorded$" text &&
	"$MEMSIGHT" leaks p.trace 2>/dev/null | grep "^# memsight leaks of .p.trace.: 0 bytes in 0 allocations outstanding"
'

# The leak table with what varies from run to run taken out: addresses,
# pids, times.
leak_table() {
	"$MEMSIGHT" leaks "$1" 2>/dev/null | grep -v "^#" | sed "s/0x[0-9a-f]*//g; s/(pid [0-9]* /(/; s/	made .*//"
}

test_expect_success 'the bundled samples guarded at every allocation: no false report, every leak table the same' '
	for cmd in "cxx_leak" "cxx_threads" "fib_leak" "loop_leak" "inline_alloc" "alloc_zoo churn 500" \
		   "alloc_zoo memalign 20" "alloc_zoo nested 20" "alloc_zoo realloc 20" "alloc_zoo reach 20" \
		   "alloc_zoo fork 20" "alloc_zoo threads 4 50" \
		   "leak_cases tree" "leak_cases realloc" "leak_cases interior"; do
		set -- $cmd && n=$(echo "$cmd" | tr " " _) && p=$1 && shift &&
		"$MEMSIGHT" record -q -e malloc -o $n.plain.trace -- "$S/$p" "$@" >$n.plain.out 2>/dev/null; a=$?
		"$MEMSIGHT" record -q --guard=1 -o $n.guard.trace -- "$S/$p" "$@" >$n.guard.out 2>/dev/null; b=$?
		test $a = $b || { echo "$cmd: exit $a, guarded $b"; return 1; }
		leak_table $n.plain.trace >$n.plain.leaks && leak_table $n.guard.trace >$n.guard.leaks &&
		test_cmp $n.plain.leaks $n.guard.leaks &&
		"$MEMSIGHT" errors $n.guard.trace 2>/dev/null >$n.errors &&
		grep -q "^# memsight errors of .*: no memory errors recorded" $n.errors &&
		grep "^# the guard served" $n.errors || { echo "$cmd"; cat $n.errors; return 1; }
	done &&
	PYTHONHASHSEED=0 "$MEMSIGHT" record -q --guard=1 -o py.trace -- /usr/bin/python3 -c "import json; print(len(json.dumps([{\"a\": i} for i in range(20000)])))" >py.out &&
	"$MEMSIGHT" errors py.trace 2>/dev/null >py.errors &&
	cat py.errors &&
	grep "^# memsight errors of .py.trace.: no memory errors recorded" py.errors &&
	grep "^# the guard served [1-9][0-9]* allocations from its slots" py.errors
'

# A guarded block is no root of the leak check: the guard keeps no pointer
# to it, and what a slot holds outside its block is dead data.
test_expect_success '--leak-check under the guard: lost and reachable as without it' '
	for m in tree cycle interior; do
		"$MEMSIGHT" record -q -e malloc --leak-check -o lc.$m.plain.trace -- "$S/leak_cases" $m >/dev/null 2>&1
		"$MEMSIGHT" record -q --guard=1 --leak-check -o lc.$m.guard.trace -- "$S/leak_cases" $m >/dev/null 2>&1
		"$MEMSIGHT" leaks lc.$m.plain.trace 2>/dev/null | sed -n "s/^# leak check of .*): //p" >lc.$m.plain &&
		"$MEMSIGHT" leaks lc.$m.guard.trace 2>/dev/null | sed -n "s/^# leak check of .*): //p" >lc.$m.guard &&
		cat lc.$m.guard && grep -q "definitely lost" lc.$m.plain &&
		test_cmp lc.$m.plain lc.$m.guard &&
		"$MEMSIGHT" errors lc.$m.guard.trace 2>/dev/null | grep -q "^# the guard served [1-9]" || return 1
	done
'

test_done
