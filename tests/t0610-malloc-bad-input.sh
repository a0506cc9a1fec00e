#!/bin/sh
# The malloc group when things go wrong: no allocator, a wrong -O, a
# target that exits, a recorder killed with SIGKILL.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES
# The uprobes recorder PID defined (its groups are memsight_PID and
# memsight_PID_N): other tests may record beside this one.
probes() { n=$(grep -c "memsight_$1[_/]" /sys/kernel/tracing/uprobe_events 2>/dev/null); echo "${n:-0}"; }
# A recorder killed outright leaves its probes to the child that watches
# for that, which removes them once the kernel has let go of the events
# (each waits out a grace period). Wait up to 10 s for recorder $1's to
# go.
probes_gone() {
	i=0
	while [ "$(probes $1)" != 0 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	echo "probes of $1 now $(probes $1)"
	[ "$(probes $1)" = 0 ]
}

if cc -static -O1 -o static_loop "$TOP/samples/loop_leak.c" 2>/dev/null; then
	# -p once the program runs: until its exec, the pid is a child of
	# this shell, which maps libc.
	test_expect_success '-p of a process that maps no allocator points to -O' '
		./static_loop 1 5000 >/dev/null &
		pid=$! &&
		i=0 && while [ $i -lt 100 ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" != static_loop ]; do
			sleep 0.05; i=$((i + 1)); done &&
		test_must_fail "$MEMSIGHT" record -e malloc -o t.trace -p $pid 2>err;
		rc=$?; kill $pid; test $rc = 0 &&
		test_one_line err &&
		grep "process $pid maps no allocator (no libc.so): give the object that holds its malloc with -O" err &&
		test ! -e t.trace
	'

	test_expect_success '-O of a static executable finds its own malloc' '
		"$MEMSIGHT" record -q -e malloc -O ./static_loop -o st.trace -- ./static_loop 100 >truth &&
		"$MEMSIGHT" leaks st.trace >leaks &&
		grep -A4 "^400 bytes in 100 allocations from stack" leaks | grep "^		leak+0x"
	'
else
	echo "# no static libc here (libc6-dev): skipping the static-executable tests"
fi

test_expect_success '-O of a file without malloc' '
	test_must_fail "$MEMSIGHT" record -e malloc -O /bin/true -o t.trace -- true 2>err &&
	test_one_line err &&
	grep "./bin/true. has no malloc function: give the allocator.s object to -O" err &&
	test_must_fail "$MEMSIGHT" record -e malloc -O /etc/hostname -o t.trace -- true 2>err &&
	test_one_line err && grep "is not an ELF object" err &&
	test_must_fail "$MEMSIGHT" record -e malloc -O /nonexistent.so -o t.trace -- true 2>err &&
	test_one_line err && grep "cannot open allocator object ./nonexistent.so." err &&
	test ! -e t.trace
'

test_expect_success 'bad sizes and sampling' '
	test_must_fail "$MEMSIGHT" record -e malloc -z 100 -Z 10 -- true 2>err &&
	test_one_line err && grep "no allocation could match" err &&
	test_must_fail "$MEMSIGHT" record -e malloc -s 0 -- true 2>err &&
	test_one_line err && grep "invalid sampling" err
'

test_expect_success 'a target that exits during the recording leaves a complete trace and no probe' '
	rm -f truth &&
	{ "$S/alloc_zoo" wait 8 50 >truth & } &&
	pid=$! &&
	while ! grep -q waiting truth; do sleep 0.05; done &&
	{ "$MEMSIGHT" record -q -e malloc -o exit.trace -p $pid -d 30 & } &&
	rec=$! && wait $rec &&
	"$MEMSIGHT" info exit.trace | grep -x "status:      complete" &&
	probes_gone $rec
'

test_expect_success 'SIGKILL of the recorder: the trace reads to its last chunk, and its probes go' '
	"$MEMSIGHT" record -e malloc -o killed.trace -- "$S/alloc_zoo" grow 3000 >/dev/null 2>&1 &
	rec=$! &&
	# Killed once the trace holds some of the leak, however slow the
	# machine; the command then goes on alone and is ended too, by its
	# pid: other tests run the same command beside this one.
	i=0 && while [ $i -lt 300 ] && ! "$MEMSIGHT" leaks killed.trace 2>/dev/null | grep -q "steady_leak+0x"; do
		sleep 0.1; i=$((i + 1))
	done &&
	test "$(probes $rec)" -gt 0 &&
	zoo=$(pgrep -P $rec -x alloc_zoo) &&
	kill -9 $rec && wait $rec;
	kill $zoo;
	"$MEMSIGHT" info killed.trace >info 2>err &&
	grep "^status:      ends at byte [0-9]* without a trailer" info &&
	grep "without a trailer" err &&
	"$MEMSIGHT" leaks killed.trace >leaks 2>/dev/null &&
	grep "steady_leak+0x" leaks &&
	probes_gone $rec
'

test_expect_success 'leaks on a trace without allocation events says how to record them' '
	test_must_fail "$MEMSIGHT" leaks "$TOP/samples/traces/xor-8m.trace" 2>err &&
	test_one_line err && grep "record them with .memsight record -e malloc." err
'

test_done
