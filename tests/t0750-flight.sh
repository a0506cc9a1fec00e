#!/bin/sh
# The flight recorder: a ring file that stays within its size and keeps
# the newest events with named stacks, survives kill -9 while it wraps,
# and saves snapshots when a trigger fires (a signal, a process's RSS, an
# OOM kill in a small memory cgroup).
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

RING=8M
RING_BYTES=$((8 << 20))

# The faults whose stack holds function F, in trace T.
under() {
	"$MEMSIGHT" folded -e faults "$2" 2>/dev/null | awk -v f="$1" '
		{ n = split($0, a, ";"); w = a[n]; sub(/.* /, "", w); sub(/ [0-9]+$/, "", a[n]) }
		{ for (i = 1; i <= n; i++) if (a[i] == f) { s += w; break } }
		END { print s + 0 }'
}

# Uncompressed, so that the 256 MiB of the middle phase make several times
# the ring's size of trace (stack dumps keep only what unwinding reads:
# about 500 bytes a fault).
test_expect_success 'a ring of 8 MiB over a run that writes several times as much' '
	"$MEMSIGHT" record --ring $RING --compression none -e faults -o ring.trace -- \
		"$SAMPLES/phases" 256 256 64 >truth 2>rec &&
	cat truth rec &&
	grep "^phase_last pages 64$" truth &&
	went=$(sed -n "s/.*ring of 8.0 MiB in [0-9]* segments: \([0-9.]*\) MiB went through it, the oldest overwritten$/\1/p" rec) &&
	test -n "$went" && test "${went%.*}" -ge 20
'

test_expect_success 'the file stays within its size' '
	size=$(stat -c %s ring.trace) &&
	echo "$size bytes" &&
	test "$size" -le $RING_BYTES
'

test_expect_success 'the last phase is all there, the first is gone' '
	test "$(under phase_last ring.trace)" = 64 &&
	test "$(under phase_first ring.trace)" = 0 &&
	test "$(under phase_middle ring.trace)" -gt 0
'

test_expect_success 'stacks are named though the process mapped its objects before the window' '
	"$MEMSIGHT" folded -e faults ring.trace >f &&
	{ grep -q "^phases;_start;.*;main;phase_last[; ]" f || { cut -c1-300 f; false; }; } &&
	! grep -q "phase_first" f
'

# The window's oldest segment restates the processes at its start, and
# is the next its recorder overwrites: a reader that finds that STATE
# chunk bad (here one byte changed; live, overwritten while it reads)
# starts the window at the next segment, whose STATE names the stacks,
# where a reader that kept the segment named none. Read as it is and while
# a recorder holds the file (a live ring, its restating chunks copied).
test_expect_success 'the oldest segment'"'"'s restated processes overwritten: the window starts at the next segment, named' '
	"$MEMSIGHT" info --dump ring.trace >dump &&
	off=$(awk "\$3 == \"DATA\" { exit } \$3 == \"META\" && \$5 == \"process\" { o = \$2 } END { print o }" dump) &&
	test -n "$off" && echo "oldest segment'"'"'s STATE at $off" &&
	cp ring.trace state.trace &&
	printf X | dd of=state.trace bs=1 seek=$((off + 40)) conv=notrunc 2>/dev/null &&
	! cmp -s ring.trace state.trace &&
	"$MEMSIGHT" folded -e faults state.trace >f 2>err &&
	flock -x state.trace "$MEMSIGHT" folded -e faults state.trace >live.f 2>live.err &&
	cat err live.err && grep "is still being recorded" live.err &&
	! grep "outside every mapping" err live.err &&
	test "$(under phase_last state.trace)" = 64 &&
	grep -q "^phases;_start;.*;main;phase_last[; ]" f && cmp f live.f
'

# cpu_hop execs pinned to CPU 1, maps libz on another CPU, comes back to
# CPU 1 and faults there under libz: CPU 1's buffer fills first, and the
# other's, which holds libz's mapping, goes before it into the file. Taken
# a ring at a time, the exec read after libz's mapping wiped it from what
# each segment restates, and in 4 runs of 10 every stack in the window
# lost its frames from libz up.
test_expect_success 'a window named though the program'"'"'s exec and its library were written to two CPUs'"'"' rings' '
	if [ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] || ! taskset -c 1 true 2>/dev/null; then
		echo "# fewer than two CPUs to use here: skipped"; return 0
	fi &&
	for i in 1 2 3; do
		"$MEMSIGHT" record -q --ring $RING --compression none -e faults -o hop.trace -- \
			taskset -c 1 "$SAMPLES/cpu_hop" 40000 back >truth &&
		grep "^cpu_hop: from cpu 1 to cpu [0-9]* and back (now 1), 40000 pages touched" truth &&
		"$MEMSIGHT" info hop.trace | grep "^flight: .* overwritten before its window$" &&
		"$MEMSIGHT" folded -e faults hop.trace >f &&
		n=$(awk "/;main;inflateInit2_;hop_zalloc;touch_pages / { s += \$NF } END { print s + 0 }" f) &&
		all=$(awk "/;touch_pages / { s += \$NF } END { print s + 0 }" f) &&
		echo "run $i: $n of $all faults in touch_pages under inflateInit2_" &&
		test "$n" -gt 0 && test "$n" = "$all" || { cut -c1-200 f | grep touch_pages; return 1; }
	done
'

# Two bursts of faults 3.5 s apart, each several segments of trace, both in
# the ring: --last 1 reads only the segments that can hold the last second
# (the older ones are passed over), and says so, with what the whole
# window gives for it. rss_grow maps 8 MiB before the first burst and
# writes it with the second: what the ring restates tells its faults for
# anonymous memory, as the whole window does.
test_expect_success '--last on a ring reads only its recent segments, and gives what the whole window does' '
	"$MEMSIGHT" record -q --ring 32M --compression none -e faults -o recent.trace -- \
		sh -c "\"$SAMPLES/rss_grow\" 8 3500 0 early & \"$SAMPLES/phases\" 4 40 4; sleep 3.5; \"$SAMPLES/phases\" 4 40 4; wait" >truth &&
	test "$(grep -c "^phase_middle pages 10240$" truth)" = 2 && grep "^rss_grow: pid" truth &&
	cp recent.trace whole.trace && "$MEMSIGHT" archive whole.trace 2>/dev/null &&
	for v in faults folded; do
		"$MEMSIGHT" $v --last 1 recent.trace >r.$v 2>r.err &&
		"$MEMSIGHT" $v --last 1 whole.trace >w.$v 2>w.err &&
		cat r.err && grep "its segments older than --last were not read$" r.err &&
		! grep "not read" w.err &&
		sed "s/recent\.trace/T/" r.$v >r && sed "s/whole\.trace/T/" w.$v >w &&
		test -s r && cmp r w || return 1
	done &&
	grep -q ";main;phase_middle" r.folded &&
	pid=$(sed -n "s/^rss_grow: pid \([0-9]*\) .*/\1/p" truth | head -1) &&
	"$MEMSIGHT" faults --last 1 --pid $pid recent.trace >r.grow 2>/dev/null &&
	head -1 r.grow && ! grep -q "outside any known mapping" r.grow &&
	test "$(sed -n "1s/.* \([0-9]*\) anonymous.*/\1/p" r.grow)" -ge 2048 &&
	"$MEMSIGHT" faults recent.trace >/dev/null 2>all.err && ! grep "not read" all.err
'

test_expect_success 'info says what the window is and what was overwritten before it' '
	"$MEMSIGHT" info ring.trace >info &&
	cat info &&
	grep "^status:      complete$" info &&
	grep "^flight:      a ring of [0-9]* segments of .*; [0-9.]* MiB ([1-9][0-9]* records) overwritten before its window$" info &&
	grep "^file:        ring.trace (.*, format version 3)$" info
'

# A ring that never went round holds the whole recording. Its first
# segment, begun before the command ran, has no processes to restate and
# starts with DATA: it is the window's oldest, not one being overwritten.
# The 32 MiB of the middle phase write several of the 16 MiB ring's
# 2.3 MiB segments (fewer faults, where the kernel maps huge pages). Its
# 8,192 faults come in some 50 ms: with 4 KiB dumps and 64 MiB of the
# kernel's ring a CPU they fit whole however slowly the recorder drains (the
# sanitized one, on a busy machine, lost half of them from 8 KiB dumps in
# 32 MiB), and 4 KiB reach these shallow stacks' main.
test_expect_success 'a ring that has not gone round: every fault from the start, none said overwritten' '
	"$MEMSIGHT" record --ring 16M --compression none -g dwarf,4096 -m 16384 -e faults -o whole.trace -- \
		"$SAMPLES/phases" 64 32 64 >truth 2>rec &&
	cat truth rec &&
	grep "^memsight record: ring of 16.0 MiB in [0-9]* segments: \([3-9]\|1[0-5]\)[0-9.]* MiB went through it, none of it overwritten$" rec &&
	"$MEMSIGHT" info whole.trace >info &&
	grep "^flight: .*; 0 B (0 records) overwritten before its window$" info &&
	test "$(under phase_first whole.trace)" -ge 64 &&
	test "$(under phase_middle whole.trace)" -gt 0 &&
	test "$(under phase_last whole.trace)" = 64
'

test_expect_success 'archive of a copy: a linear trace of the window, with its objects' '
	cp ring.trace copy.trace &&
	"$MEMSIGHT" archive copy.trace &&
	"$MEMSIGHT" info copy.trace >info &&
	grep "^flight:      the window of a ring; [0-9.]* MiB ([1-9][0-9]* records) had been overwritten before it$" info &&
	grep "^file:        copy.trace (.*, format version 2)$" info &&
	grep "^embedded:    [1-9]" info &&
	test "$(under phase_last copy.trace)" = 64
'

# Renamed over, a live ring goes on in a deleted file: everything recorded
# afterwards would be lost.
test_expect_success 'archive of a ring a recorder still writes: refused in place, written elsewhere with -o' '
	"$MEMSIGHT" record --ring $RING -e faults -o live.trace -- "$SAMPLES/phases" 16 100000 16 >/dev/null 2>&1 &
	rec=$! &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" info live.trace 2>/dev/null | grep -q "^flight:"; do
		sleep 0.1; i=$((i + 1)); done &&
	ino=$(stat -c %i live.trace) &&
	test_must_fail "$MEMSIGHT" archive live.trace 2>err &&
	cat err &&
	test_one_line err &&
	grep "^memsight archive: .live.trace. is being recorded (a recorder holds it): archive a copy of it, or write the archive elsewhere with -o FILE$" err &&
	"$MEMSIGHT" archive -o window.trace live.trace &&
	test "$(stat -c %i live.trace)" = "$ino" &&
	ph=$(pgrep -P $rec -x phases) &&
	kill -INT $rec && wait $rec;
	kill -9 $ph;
	"$MEMSIGHT" info live.trace | grep "^status:      complete$" &&
	"$MEMSIGHT" info window.trace >info &&
	grep "^flight:      the window of a ring" info &&
	grep "^embedded:    [1-9]" info &&
	test "$(stat -c %i live.trace)" = "$ino" &&
	test_must_fail "$MEMSIGHT" archive -o "$SAMPLES" live.trace 2>err &&
	test_one_line err
'

test_expect_success 'kill -9 while the ring wraps leaves a file that reads up to its last good chunk' '
	"$MEMSIGHT" record --ring $RING --compression none -e faults -o killed.trace -- \
		"$SAMPLES/phases" 16 100000 16 >/dev/null 2>&1 &
	rec=$! &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" info killed.trace 2>/dev/null | grep -q "MiB ([1-9][0-9]* records) overwritten"; do
		sleep 0.1; i=$((i + 1)); done &&
	ph=$(pgrep -P $rec -x phases) &&
	kill -9 $rec && wait $rec ; kill -9 $ph ;
	size=$(stat -c %s killed.trace) && test "$size" -le $RING_BYTES &&
	"$MEMSIGHT" info killed.trace >info &&
	cat info &&
	grep "^status:      has no trailer: a ring still being written, or whose recorder was killed" info &&
	grep "MiB ([1-9][0-9]* records) overwritten before its window$" info &&
	test "$(under phase_middle killed.trace)" -gt 0
'

test_expect_success 'SIGUSR1 saves one snapshot, beside the ring, that holds what came before it' '
	rm -f ring.*.trace truth &&
	{ "$MEMSIGHT" record --ring $RING --trigger signal --after 0.3 --compression none -e faults -o ring.trace -- \
		"$SAMPLES/phases" 256 256 64 3000 >truth 2>rec & } &&
	rec=$! &&
	i=0 && while [ $i -lt 100 ] && ! grep -q "^phase_last" truth; do sleep 0.1; i=$((i + 1)); done &&
	kill -USR1 $rec && wait $rec &&
	cat rec &&
	ls ring.*.signal.trace >snaps && test $(wc -l <snaps) = 1 &&
	snap=$(cat snaps) &&
	grep "^memsight record: snapshot .\./$snap.: trigger signal (SIGUSR1 from pid [0-9]*)" rec &&
	"$MEMSIGHT" info $snap >info &&
	cat info &&
	grep "^flight:      a snapshot of a ring, saved by trigger signal (SIGUSR1 from pid [0-9]*) at " info &&
	grep "^file:        .*format version 2)$" info &&
	test "$(under phase_last $snap)" = 64 &&
	test "$(under phase_first $snap)" = 0
'

test_expect_success 'two restarts keep the evidence of both: the rings before them, newest first' '
	rm -f keep.*trace &&
	for w in one two three; do
		"$MEMSIGHT" record -q --ring $RING -e faults -o keep.trace -- echo $w >/dev/null || return 1
	done &&
	"$MEMSIGHT" info keep.trace | grep "^recorded by: .* -- echo three$" &&
	"$MEMSIGHT" info keep.previous.trace | grep "^recorded by: .* -- echo two$" &&
	"$MEMSIGHT" info keep.previous.1.trace | grep "^recorded by: .* -- echo one$" &&
	for f in keep.trace keep.previous.trace keep.previous.1.trace; do
		"$MEMSIGHT" info $f | grep -x "status:      complete" || return 1
	done &&
	for w in four five; do
		"$MEMSIGHT" record -q --ring $RING --max-snapshots 2 -e faults -o keep.trace -- echo $w >/dev/null || return 1
	done &&
	ls keep.*trace >kept &&
	cat kept &&
	test "$(wc -l <kept)" = 3 &&
	"$MEMSIGHT" info keep.previous.1.trace | grep "^recorded by: .* -- echo three$"
'

# SIGUSR1 is sent once the ring is being recorded: until the recorder
# takes it through its signalfd, the signal would end it (the sanitized
# build, starting on a busy machine, can take longer than a fixed pause).
test_expect_success 'snapshots are pruned by what the ring wrote, not by their names; a dead snapshot'"'"'s temp file goes' '
	rm -f prune.* .prune.* &&
	: >prune.29991231T235959Z.signal.trace &&
	touch -d "2001-01-01" prune.29991231T235959Z.signal.trace &&
	: >.prune.snapshot.Xy12Ab &&
	{ "$MEMSIGHT" record --ring $RING --trigger signal --after 0.1 --max-snapshots 1 -e faults -o prune.trace -- \
		sleep 2 2>rec & } &&
	rec=$! &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" info prune.trace 2>/dev/null | grep -q "^status: *being recorded"; do
		sleep 0.1; i=$((i + 1)); done &&
	kill -USR1 $rec && wait $rec &&
	cat rec &&
	snap=$(sed -n "s/^memsight record: snapshot .\.\/\(prune\.[^ ]*\.signal\.trace\).*/\1/p" rec) &&
	test -n "$snap" && test -f "$snap" &&
	! test -e prune.29991231T235959Z.signal.trace &&
	! test -e .prune.snapshot.Xy12Ab
'

# Without stacks: 64 MiB written at once is some 33,000 records in a
# fraction of a second, and with a dump each a slow recorder (the
# sanitized build, on a busy machine) lost half of them, the crossing
# among them, and fired at 35 MiB.
test_expect_success 'the RSS trigger fires once, when the process passes the size' '
	rm -f ring.*.trace &&
	"$MEMSIGHT" record -g none --ring $RING --trigger "rss:rss_grow>32M" --after 0.2 -e rss,faults -o ring.trace -- \
		"$SAMPLES/rss_grow" 64 100 500 >truth 2>rec &&
	cat truth rec &&
	pid=$(sed -n "1s/^rss_grow: pid \([0-9]*\) .*/\1/p" truth) &&
	ls ring.*.rss.trace >snaps && test $(wc -l <snaps) = 1 &&
	"$MEMSIGHT" info $(cat snaps) >info &&
	rss=$(sed -n "s/^flight:      a snapshot of a ring, saved by trigger rss (pid $pid (rss_grow) RSS \([0-9]*\) bytes, over 33554432) at .*/\1/p" info) &&
	echo "fired at $rss" &&
	test "$rss" -gt $((32 << 20)) && test "$rss" -lt $((33 << 20))
'

memcg_32mib memsight-flight
if [ -n "$CG" ]; then
	test_expect_alone 'an OOM kill in a 32 MiB cgroup, a system-wide ring: the snapshot holds the kill and the growth' '
		rm -f sys.*.trace &&
		{ "$MEMSIGHT" record -a --ring 16M --trigger oom --after 0.5 -e oom,faults -o sys.trace 2>rec & } &&
		rec=$! && sleep 1 &&
		{ sh -c "echo \$\$ >$CG/cgroup.procs && exec $SAMPLES/mem_hog" >truth 2>&1; test $? = 137; } &&
		i=0 && while [ $i -lt 100 ] && ! grep -q "snapshot .*trigger oom" rec; do sleep 0.1; i=$((i + 1)); done &&
		kill -INT $rec && wait $rec &&
		cat truth rec &&
		pid=$(sed -n "s/^mem_hog: pid \([0-9]*\) comm mem_hog$/\1/p" truth) && test -n "$pid" &&
		ls sys.*.oom.trace >snaps && test $(wc -l <snaps) = 1 &&
		snap=$(cat snaps) &&
		"$MEMSIGHT" info $snap | grep "^flight:      a snapshot of a ring, saved by trigger oom (victim pid $pid) at " &&
		"$MEMSIGHT" oom $snap >oom.txt &&
		grep "^OOM kill at .*: victim pid $pid (mem_hog)" oom.txt &&
		"$MEMSIGHT" folded -e faults --pid $pid $snap >f &&
		grep "^mem_hog;.*main;grow [0-9]*$" f
	'
	rmdir $CG 2>/dev/null
fi

test_expect_success 'a ring too small for two segments, or too large: one clear line' '
	test_must_fail "$MEMSIGHT" record --ring 1M -o small.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "a ring of 1024 KiB is too small: .* give at least [0-9]* KiB" err &&
	! test -e small.trace &&
	test_must_fail "$MEMSIGHT" record --ring 900000G -o big.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "a ring of [0-9]* KiB is too large: at most 16 segments of 4194300 KiB" err &&
	! test -e big.trace
'

test_expect_success 'an unknown trigger, or one whose events are not recorded: one clear line' '
	test_must_fail "$MEMSIGHT" record --ring 8M --trigger swapstorm -o t.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "unknown trigger .swapstorm.: use oom, rss:PID_OR_COMM>SIZE, psi:some|full>PCT, reclaim>MS, crash.:COMM. or signal" err &&
	test_must_fail "$MEMSIGHT" record --ring 8M --trigger oom -e faults -o t.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "trigger oom watches the oom events, which are not recorded: add oom to -e" err &&
	test_must_fail "$MEMSIGHT" record --ring 8M --trigger "rss:x>lots" -e rss -o t.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "invalid trigger .rss:x>lots.: give rss:PID>SIZE or rss:COMM>SIZE" err &&
	test_must_fail "$MEMSIGHT" record --trigger signal -o t.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "trigger saves snapshots of a ring: give --ring SIZE too" err &&
	! test -e t.trace
'

test_done
