#!/bin/sh
# The recorder against odd outputs, a full disk, exec and signals: each
# defect found by trying it the way a careless operator or a full disk would.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES

# -o must never replace what is not a regular file: the recorder writes a
# temporary file and renames it over the output.
test_expect_success '-o naming a device node is refused, and the node stays' '
	mknod devnull c 1 3 &&
	test_must_fail "$MEMSIGHT" record -q -o devnull -- sh -c "touch started" 2>err &&
	test_one_line err &&
	grep "^memsight record: .devnull. is a device, which a trace would replace: give the path of a regular file" err &&
	test -c devnull && test ! -e started &&
	test -z "$(ls -A | grep "^\.devnull\.")"
'

test_expect_success '-o naming a FIFO is refused at once, not waited on' '
	mkfifo fifo &&
	timeout -s KILL 20 "$MEMSIGHT" record -q -o fifo -- true 2>err; rc=$? &&
	test $rc = 1 &&
	test_one_line err && grep "is a FIFO, which a trace would replace" err &&
	test -p fifo && test -z "$(ls -A | grep "^\.fifo\.")"
'

test_expect_success '-o naming a directory, a symlink, nothing or -: refused before the command starts' '
	mkdir dir && ln -s dir link &&
	for o in dir link "" -; do
		test_must_fail "$MEMSIGHT" record -q -o "$o" -- sh -c "touch started" 2>err &&
		test_one_line err && test ! -e started || return 1
	done &&
	test -d dir && test -L link
'

test_expect_success 'a temporary file a killed recorder left is removed by the next one; other files stay' '
	printf "MEMSIGHT-not-finished" >.stale.trace.AbCdEf &&
	printf "some file of the user" >.stale.trace.XyZ123 &&
	"$MEMSIGHT" record -q -o stale.trace -- true &&
	test ! -e .stale.trace.AbCdEf && test -e .stale.trace.XyZ123
'

# A full disk: stop at once, close the trace, say exactly what was not
# written, leave the command alone.
if mkdir small && mount -t tmpfs -o size=3m tmpfs small 2>/dev/null; then
	head -c $((32 << 20)) /dev/urandom >in.bin
	test_expect_alone 'a full disk stops the recording at once; the trace is complete and counts what was not written' '
		{ "$MEMSIGHT" record -a -g dwarf -e faults --compression none -d 30 -o small/full.trace -- \
			sh -c "for i in 1 2 3 4 5 6 7 8; do $S/xor_encoder in.bin >/dev/null; done; echo finished" \
			>out 2>err; rc=$?; } &&
		cat out err && test $rc = 1 &&
		grep "^finished$" out &&
		grep "^memsight record: cannot write .small/full.trace.: the disk is full; recording stopped after" err &&
		n=$(sed -n "s/^memsight record: NOT WRITTEN \([0-9]*\) of [0-9]* records: the disk holding the trace filled.*/\1/p" err) &&
		test "$n" -gt 0 &&
		! grep "0 events lost" err &&
		"$MEMSIGHT" info small/full.trace >info &&
		grep "^status:      complete$" info &&
		grep "^not written: $n records" info &&
		"$MEMSIGHT" report small/full.trace >/dev/null
	'
	umount small
else
	echo "# cannot mount a small tmpfs here: skipping the full-disk test"
fi

test_expect_success 'exec through a wrapper: the heap is measured from the new image, not the shell' '
	"$MEMSIGHT" record -q -e brk -o exec.trace -- sh -c "exec $S/loop_leak 100" >/dev/null &&
	"$MEMSIGHT" report exec.trace >report &&
	grow=$(awk "/== brk: heap growth ==/ { on = 1 } on && \$2 == \"loop_leak\" { print \$4; exit }" report) &&
	echo "heap growth $grow" && test -n "$grow" && test "$grow" -lt $((64 << 20))
'

test_expect_success 'exec through a wrapper: the shell blocks are released by the exec, not leaked' '
	"$MEMSIGHT" record -q -e malloc -o execm.trace -- sh -c "exec $S/loop_leak 50" >/dev/null &&
	"$MEMSIGHT" leaks execm.trace >leaks &&
	cat leaks &&
	grep "^# memsight leaks of .execm.trace.: 200 bytes in 50 allocations outstanding from 1 stack$" leaks &&
	grep "^# [0-9]* allocations made before an exec were released by it" leaks
'

test_expect_success 'a command killed by a signal: said so, in info and in the exit status' '
	{ "$MEMSIGHT" record -o killed.trace -- sh -c "kill -9 \$\$" 2>err; test $? = 137; } &&
	grep "^memsight record: the command was killed by SIGKILL$" err &&
	"$MEMSIGHT" info killed.trace | grep "^command:     killed by SIGKILL, " &&
	{ "$MEMSIGHT" record -q -o three.trace -- sh -c "exit 3"; test $? = 3; } &&
	"$MEMSIGHT" info three.trace | grep "^command:     exit status 3, " &&
	"$MEMSIGHT" record -q -d 300ms -o ended.trace -- sleep 10 &&
	"$MEMSIGHT" info ended.trace | grep "^command:     killed by SIGTERM (at the end of the recording), "
'

# The recorder is the oldest process with its command line: the command's
# child has that line too until it executes, and a signal there kills it.
test_expect_success 'SIGUSR1, SIGUSR2, SIGALRM and SIGPIPE leave a recording running; it ends with its trailer' '
	"$MEMSIGHT" record -e faults -o sig.trace -- sleep 1.5 2>err &
	pid=$! &&
	rp= &&
	for i in $(seq 100); do
		rp=$(pgrep -o -f "memsight-record -e faults -o sig.trace") && break
		sleep 0.02
	done &&
	test -n "$rp" &&
	sleep 0.3 &&
	for s in USR1 USR2 ALRM PIPE; do kill -$s $rp || return 1; done &&
	wait $pid &&
	cat err &&
	grep "^memsight record: SIGUSR1 from pid [0-9]* ignored: it asks a ring (--ring) for a snapshot" err &&
	"$MEMSIGHT" info sig.trace | grep -x "status:      complete"
'

test_expect_success 'SIGQUIT and SIGXCPU end a recording cleanly, as SIGTERM does' '
	for s in QUIT XCPU; do
		"$MEMSIGHT" record -q -e faults -o $s.trace -- sleep 30 &
		pid=$! &&
		rp= &&
		for i in $(seq 100); do
			rp=$(pgrep -o -f "memsight-record -q -e faults -o $s.trace") && break
			sleep 0.02
		done &&
		test -n "$rp" && sleep 0.3 &&
		kill -$s $rp &&
		{ wait $pid; true; } &&
		"$MEMSIGHT" info $s.trace | grep -x "status:      complete" || return 1
	done
'

test_expect_success 'every view of a recording that lost events says so, once' '
	dd if=/dev/zero of=in32.bin bs=1M count=32 2>/dev/null &&
	"$MEMSIGHT" record -q -m 1 -e faults,brk,mmap -o lossy.trace -- "$S/xor_encoder" in32.bin >/dev/null &&
	"$MEMSIGHT" info lossy.trace | grep "^lost: *[1-9]" &&
	for v in faults folded brk mmaps pprof; do
		case $v in pprof) "$MEMSIGHT" pprof -o lossy.pb.gz lossy.trace >/dev/null 2>err ;;
		*) "$MEMSIGHT" $v lossy.trace >/dev/null 2>err ;; esac
		test "$(grep -c "events were lost while recording .lossy.trace. (" err)" = 1 || { echo "$v:"; cat err; return 1; }
	done &&
	dd if=/dev/zero of=in1.bin bs=1M count=1 2>/dev/null &&
	"$MEMSIGHT" record -q -e faults -o whole.trace -- "$S/xor_encoder" in1.bin >/dev/null &&
	"$MEMSIGHT" info whole.trace | grep "^lost: *0$" &&
	"$MEMSIGHT" faults whole.trace >/dev/null 2>err &&
	! grep "were lost" err
'

# A recorded program controls the paths of what it maps. Here it maps a
# library that has no build-id (so the recorder looks for one itself),
# then puts a FIFO, and then a link to a root-only file, at its path.
test_expect_success 'a program that swaps a FIFO or a link in at a mapped file'"'"'s path holds up nothing' '
	cat >swap.c <<-\EOF &&
	#include <dlfcn.h>
	#include <stdio.h>
	#include <sys/stat.h>
	#include <unistd.h>
	int main(int argc, char **argv)
	{
		if (!dlopen(argv[1], RTLD_NOW)) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		unlink(argv[1]);
		if (argc > 2 ? symlink(argv[2], argv[1]) : mkfifo(argv[1], 0600))
			return 1;
		return 0;
	}
	EOF
	cc -o swap swap.c -ldl &&
	echo "int lib_fn(int x) { return x + 1; }" >lib.c &&
	cc -shared -fPIC -Wl,--build-id=none -o nobid.so lib.c &&
	! readelf -n nobid.so | grep "Build ID" &&
	cp nobid.so swapped.so &&
	timeout -s KILL 60 "$MEMSIGHT" record -q -o fifo.trace -- ./swap "$PWD/swapped.so" &&
	test -p swapped.so &&
	"$MEMSIGHT" info fifo.trace | grep "^status: *complete$" &&
	cc -shared -fPIC -o secret.so lib.c && chmod 600 secret.so &&
	rm swapped.so && cp nobid.so swapped.so &&
	timeout -s KILL 60 "$MEMSIGHT" record -q -o link.trace -- ./swap "$PWD/swapped.so" "$PWD/secret.so" &&
	test -L swapped.so &&
	"$MEMSIGHT" info link.trace | grep "^status: *complete$" &&
	bid=$(readelf -n secret.so | sed -n "s/.*Build ID: //p") &&
	test -n "$bid" &&
	"$MEMSIGHT" archive link.trace 2>err &&
	"$MEMSIGHT" info link.trace >info &&
	cat info &&
	! grep -i "$bid" info
'

# The kernel releases each tracepoint and uprobe event after a grace
# period, one at a time: a recorder that returned before that would leave
# a process and uprobe definitions behind, and the next recording started
# at once would wait on them.
test_expect_alone 'when record returns, its events are closed and its uprobes gone' '
	uprobes=/sys/kernel/tracing/uprobe_events &&
	[ -r $uprobes ] || uprobes=/sys/kernel/debug/tracing/uprobe_events &&
	for via in wrapper uprobes; do
		"$MEMSIGHT" record -q -e malloc --malloc-via $via -o closed-$via.trace -- true &
		pid=$! &&
		wait $pid &&
		! pgrep -f "memsight-record .*-o closed-$via.trace" &&
		! grep "memsight_$pid[_/]" $uprobes || return 1
	done
'

test_expect_alone 'a recorder killed with SIGKILL leaves no uprobe definitions behind' '
	uprobes=/sys/kernel/tracing/uprobe_events &&
	[ -r $uprobes ] || uprobes=/sys/kernel/debug/tracing/uprobe_events &&
	for via in wrapper uprobes; do
		"$MEMSIGHT" record -q -e malloc --malloc-via $via -o killed-$via.trace -- sleep 29.5 &
		pid=$! &&
		i=0 && while [ $i -lt 100 ] && ! grep -q "memsight_$pid[_/]" $uprobes; do sleep 0.05; i=$((i + 1)); done &&
		grep "memsight_$pid[_/]" $uprobes &&
		kill -9 $pid && { wait $pid; :; } &&
		# The command lives on with the events it inherited (its exec
		# may come just after the kill): its end lets them go.
		i=0 && while [ $i -lt 200 ] && grep -q "memsight_$pid[_/]" $uprobes; do
			pkill -f "^sleep 29.5$"; sleep 0.05; i=$((i + 1))
		done &&
		! grep "memsight_$pid[_/]" $uprobes || return 1
	done
'

test_expect_success '--pidfile holds the recorder'"'"'s pid while it records; SIGINT through it ends the trace cleanly' '
	"$MEMSIGHT" record -q -e faults --pidfile rec.pid -o pf.trace -- sleep 30 &
	n=0; while ! test -s rec.pid && test $n -lt 100; do sleep 0.1; n=$((n + 1)); done &&
	pid=$(cat rec.pid) &&
	grep -q memsight-record /proc/$pid/cmdline &&
	kill -INT $pid &&
	wait &&
	test ! -e rec.pid &&
	"$MEMSIGHT" info pf.trace | grep -x "status:      complete"
'

test_done
