#!/bin/sh
# memsight top: a view of a trace while it is recorded, read again every
# interval. At a terminal (Debian's tmux, driven with send-keys and read
# with capture-pane): the steady leak first by growth, at the rate the
# program made it; s sorts by size; v shows the next view; q gives the
# terminal back as it was; a recorder restarted on the path is followed.
# Elsewhere: one table per interval, the last one what the view's command
# prints of the finished trace. Above the view: the recorder (pid as
# started) and each process's RSS as the program itself reads it. A ring
# overwritten while watched reads whole at every refresh. A path's
# control bytes reach no terminal.
. "$(dirname "$0")/test-lib.sh"

# recording_wait TRACE: until a recorder holds TRACE, at most 10 s.
recording_wait() {
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" info "$1" 2>/dev/null | grep -q "^status: *being recorded"; do
		sleep 0.1; i=$((i + 1)); done
}

# last_table TABLES: top's last table in TABLES, the one it prints once
# the recording has ended, without its header and the blank line after.
last_table() {
	sed -n "/(recording ended)/,\$p" "$1" | sed "1d;\$d"
}
test_skip_unless_recording

S=$SAMPLES

test_expect_success 'bad input: a delay out of range, a trace that is not there: one line each' '
	test_must_fail "$MEMSIGHT" top -d 0 x.trace 2>err &&
	test_one_line err && grep "invalid delay .0. for -d: give seconds from 0.1 to 3600" err &&
	test_must_fail "$MEMSIGHT" top nosuch.trace </dev/null >out 2>err &&
	test_one_line err && grep "^memsight top: cannot open .nosuch.trace.: No such file or directory" err &&
	test ! -s out &&
	test_must_fail "$MEMSIGHT" top --view heap x.trace 2>err &&
	test_one_line err && grep "unknown view .heap. for --view: give leaks, faults, brk, reclaim or report" err &&
	test_must_fail "$MEMSIGHT" top --last 10q x.trace 2>err &&
	test_one_line err && grep "invalid --last .10q.: give seconds, 0 for all of the recording" err &&
	test_must_fail "$MEMSIGHT" top --max-cpu 101 x.trace 2>err &&
	test_one_line err && grep "invalid --max-cpu 101: give a percentage of one CPU from 1 to 100" err
'

# alloc_zoo grow N: a 1 MiB block once, then 64 bytes leaked every 10 ms.
test_expect_success 'not at a terminal: a table per interval until the recording ends, the last one leaks of the trace' '
	{ "$MEMSIGHT" record -q -e malloc -o pipe.trace -- "$S/alloc_zoo" grow 300 >/dev/null 2>&1 & } &&
	rec=$! &&
	recording_wait pipe.trace &&
	"$MEMSIGHT" top --max-cpu 100 -d 0.5 -T 2 pipe.trace >tables 2>err &&
	wait &&
	cat tables err &&
	test "$(grep -c "^memsight top [0-9:]*: .pipe.trace. being recorded; every 0.5 s, leaks by growth$" tables)" -ge 2 &&
	grep -q "^recorder: pid $rec, [0-9.]*% of a CPU, [0-9.]* [KM]iB resident; trace [0-9.]* [KM]*i*B, 0 events lost so far$" tables &&
	test "$(grep -c "^memsight top [0-9:]*: .pipe.trace. (recording ended)" tables)" = 1 &&
	tail -1 tables | grep -q "^$" &&
	last_table tables >last &&
	"$MEMSIGHT" leaks --sort growth -T 2 pipe.trace >want 2>/dev/null &&
	test_cmp want last &&
	grep -q "^# LIVE: the recording is still going" tables &&
	! grep -q "$(printf "\033")" tables &&
	test_must_fail "$MEMSIGHT" top --view brk pipe.trace >out 2>err &&
	test_one_line err && grep "^memsight top: .pipe.trace. has no brk events: record them with .memsight record -e brk." err &&
	cp pipe.trace "odd$(printf "\033[31m")name.trace" &&
	"$MEMSIGHT" top -n 1 "odd$(printf "\033[31m")name.trace" >odd 2>&1 &&
	grep -q "^memsight top [0-9:]*: .odd?\[31mname.trace. (recording ended)" odd &&
	! grep -q "$(printf "\033")" odd
'

# A linear trace is followed: top's view command reads it once and then,
# each refresh, only what was written since (MEMSIGHT_READ_STATS counts
# the replays, the chunks read and the looks at the file). What the
# recorder writes as it ends starts a new command, whose first look reads
# the trace whole. Its recorder killed with -9, what it wrote is read to
# its end and shown as the last table, as leaks reads it: once top has
# shown three tables, however slow the machine. The tables' file is made
# before top starts: a count of a file not yet made is empty, and the
# wait would end at once.
# followed_looks TRACE: of top's live tables (in tables), what
# MEMSIGHT_READ_STATS said of TRACE: at least three, each one replay,
# each look the first (the command started again) or one more than the
# refresh before, at least two of them later looks, never more chunks
# read than the file holds (a ring's window may have moved on meanwhile).
followed_looks() {
	sed -n "/(recording ended)/q;p" tables | sed -n "s/^read .$1.: //p" >stats &&
	cat stats &&
	test "$(wc -l <stats)" -ge 3 &&
	! grep -v "^1 replay, [0-9]* data chunks read of the [0-9]* it holds\(, as it grew, in [0-9]* looks\(, the window moved on [0-9]* times\{0,1\}\)\{0,1\}\)\{0,1\}$" stats &&
	awk '{ k = 1; for (i = 1; i < NF; i++) if ($(i + 1) ~ /^looks/) k = $i
		if ((k != 1 && k != prev + 1) || $3 > $9) bad = 1; grown += k > 1; prev = k }
		END { exit bad || grown < 2 }' stats
}
# top_followed TRACE TOP-OPTIONS...: top on TRACE until its recording (a
# job of this shell) ends, its refreshes followed as followed_looks says;
# its last table, without the read statistics, in last.
top_followed() {
	t=$1 && shift &&
	MEMSIGHT_READ_STATS=1 "$MEMSIGHT" top "$@" --max-cpu 100 -d 0.5 -T 2 "$t" >tables 2>err &&
	wait &&
	cat err &&
	followed_looks "$t" &&
	last_table tables | grep -v "^read " >last
}

test_expect_success 'a linear trace is read once as it grows: one replay, one more look a refresh' '
	{ "$MEMSIGHT" record -q -e malloc -o follow.trace -- "$S/alloc_zoo" grow 600 >/dev/null 2>&1 & } &&
	recording_wait follow.trace &&
	top_followed follow.trace &&
	"$MEMSIGHT" leaks --sort growth -T 2 follow.trace >want 2>/dev/null &&
	test_cmp want last
'

# The faults view counts the last seconds (--last): followed, the view's
# command replays the processes' maps on as the trace grows and reads the
# window's samples again at each refresh, never the whole trace.
test_expect_success 'a linear trace'"'"'s faults of the last seconds: followed, one replay, one more look a refresh' '
	{ "$MEMSIGHT" record -q -e faults -o ffollow.trace -- "$S/rss_grow" 16 300 5000 >/dev/null 2>&1 & } &&
	recording_wait ffollow.trace &&
	top_followed ffollow.trace --view faults --last 2 &&
	"$MEMSIGHT" faults --last 2 -T 2 ffollow.trace >want 2>/dev/null &&
	test_cmp want last
'

# A ring is followed too, in its newest segment: a steady leak in a
# 64 MiB ring stays in its first segment, and each refresh reads only what
# was written since the last.
test_expect_success 'a ring its recorder writes slowly: followed in its newest segment, one more look a refresh' '
	{ "$MEMSIGHT" record -q --ring 64M -e malloc -o rfollow.trace -- "$S/alloc_zoo" grow 600 >/dev/null 2>&1 & } &&
	recording_wait rfollow.trace &&
	top_followed rfollow.trace &&
	"$MEMSIGHT" leaks --sort growth -T 2 rfollow.trace >want 2>/dev/null &&
	test_cmp want last
'

# A recorder that overwrites the segment top read last (it went round the
# ring between two looks) leaves nothing to read on from: the view's
# command starts again on the window as it now stands, then follows that.
# rss_grow writes 128 MiB after 2 s, every fault recorded, stored
# uncompressed: about 16 MiB through an 8 MiB ring of three 2.3 MiB
# segments. top, stopped after its first table (before the faults, in the
# first segment), looks again only once the window has moved on, so the
# recorder has gone round the ring past what top read.
test_expect_success 'a ring whose recorder overtakes top: the command starts again and follows on' '
	{ "$MEMSIGHT" record -q --ring 8M --compression none -e faults/1 -o rnext.trace -- \
		"$S/rss_grow" 128 2000 2500 >/dev/null 2>&1 & } &&
	recording_wait rnext.trace &&
	: >tables &&
	{ MEMSIGHT_READ_STATS=1 "$MEMSIGHT" top --max-cpu 100 -d 0.5 -T 2 rnext.trace >tables 2>err & } &&
	top=$! &&
	i=0 && while [ $i -lt 100 ] && ! grep -q "being recorded" tables; do sleep 0.1; i=$((i + 1)); done &&
	kill -STOP $top &&
	i=0 && n=0 && while [ $i -lt 300 ] && [ "$n" = 0 ]; do
		sleep 0.1; i=$((i + 1))
		n=$("$MEMSIGHT" info rnext.trace 2>/dev/null | sed -n "s/^flight: .* (\([0-9]*\) records) overwritten.*/\1/p")
		n=${n:-0}; done &&
	kill -CONT $top &&
	wait &&
	cat err &&
	echo "$n records overwritten after $i waits" &&
	followed_looks rnext.trace &&
	last_table tables | grep -v "^read " >last &&
	awk "NR > 1 && !/as it grew/ { again = 1 } END { exit !again }" stats &&
	"$MEMSIGHT" info rnext.trace | grep "^flight: .* [1-9][0-9.]* MiB (.*) overwritten before its window" &&
	"$MEMSIGHT" faults --last 10 -T 2 rnext.trace >want 2>/dev/null &&
	test_cmp want last
'

# A ring whose recorder begins segments no faster than top looks is read
# on into each: the view's command goes on, and once the window has moved
# on, the blocks allocated before it leave the table, as a reading of the
# window alone never saw them. alloc_zoo keeps 50 blocks of 1 KiB at the
# ring's start; then two loop_leaks, a malloc each every millisecond, fill
# a 5 MiB ring of two 2.2 MiB segments, stored uncompressed, so that the
# window first moves on some 4 s in, past alloc_zoo's segment. A live
# view shows what is 2 s old, so alloc_zoo's blocks are shown from about
# then: a look that lists them and the next one, in the same replay, that
# reads on past the window's move and lists them no more. Which looks
# those are depends on the machine's speed; that there are two does not.
test_expect_success 'a ring whose window moves on while followed: read on, the blocks from before it dropped' '
	{ "$MEMSIGHT" record -q --ring 5M --compression none -e malloc -o ronward.trace -- sh -c \
		"\"$S/alloc_zoo\" realloc 50 >/dev/null; \"$S/loop_leak\" 6000 1 & \"$S/loop_leak\" 6000 1; wait" \
		>/dev/null 2>&1 & } &&
	recording_wait ronward.trace &&
	MEMSIGHT_READ_STATS=1 "$MEMSIGHT" top --max-cpu 100 -d 0.5 -T 2 ronward.trace >tables 2>err &&
	wait &&
	cat err &&
	sed -n "/(recording ended)/q;/^read .ronward.trace.: \|^# memsight leaks of \|alloc_zoo)$/p" tables >seen &&
	cat seen &&
	awk "function look_end() {
			if (looks++ && moved > was && replays == was_replays && had && !has) dropped = 1
			was = moved; was_replays = replays; had = has }
		/^read / { if (NR > 1) look_end(); replays = \$3; moved = /moved on/ ? \$(NF - 1) : 0; has = 0; next }
		/alloc_zoo)$/ { has = 1 }
		END { look_end(); exit !dropped }" seen &&
	last_table tables | grep -v "^read " >last &&
	"$MEMSIGHT" leaks --sort growth -T 2 ronward.trace >want 2>/dev/null &&
	test_cmp want last
'

test_expect_success 'a linear trace whose recorder is killed with -9 while followed: read to its end' '
	{ "$MEMSIGHT" record -q -e malloc -o killed.trace -- "$S/alloc_zoo" grow 3000 >/dev/null 2>&1 & } &&
	rec=$! &&
	recording_wait killed.trace &&
	: >tables &&
	{ "$MEMSIGHT" top --max-cpu 100 -d 0.5 -T 2 killed.trace >tables 2>err & } &&
	top=$! &&
	i=0 && while [ $i -lt 600 ] && [ "$(grep -c "being recorded; every" tables)" -lt 3 ]; do
		sleep 0.1; i=$((i + 1)); done &&
	zoo=$(pgrep -P $rec -x alloc_zoo) &&
	kill -9 $rec && kill $zoo &&
	wait $top &&
	cat tables err &&
	echo "$(grep -c "being recorded; every" tables) live tables after $i waits" &&
	test "$(grep -c "being recorded; every" tables)" -ge 3 &&
	last_table tables >last &&
	"$MEMSIGHT" leaks --sort growth -T 2 killed.trace >want 2>/dev/null &&
	test_cmp want last &&
	grep -q "steady_leak" last
'

# rss_grow 16 1000 6000 recorded into rings of one page, where no sample
# with its stack dump fits: its faults are lost as it writes, then it holds
# still for 6 s, when the kernel has no next event to report them with.
# Ten tables 0.3 s apart all come while it holds or before: each says how
# many are lost so far, never fewer than the one before nor more than the
# finished trace counts, and the last one, read while the program still
# holds, all of them (the recorder writes what the kernel counts). Of the
# finished trace, top's table and what it says on stderr are the faults
# view's own.
test_expect_success 'lost events: counted on the recorder'"'"'s line at every refresh, said after the last table' '
	{ "$MEMSIGHT" record -q -m 1 -o lossy.trace -- "$S/rss_grow" 16 1000 6000 >/dev/null 2>&1 & } &&
	recording_wait lossy.trace &&
	"$MEMSIGHT" top --max-cpu 100 -d 0.3 -n 10 -T 1 lossy.trace >ltables 2>lerr &&
	wait &&
	grep "^memsight top\|^recorder" ltables && cat lerr &&
	test "$(grep -c "^memsight top [0-9:]*: .lossy.trace. being recorded" ltables)" = 10 &&
	all=$("$MEMSIGHT" info lossy.trace | sed -n "s/^lost: *\([0-9]*\).*/\1/p") &&
	test "$all" -gt 0 &&
	sed -n "s/^recorder: .*, \([0-9]*\) events lost so far$/\1/p" ltables >counts &&
	test "$(wc -l <counts)" = 10 &&
	perl -e "my \$prev = 0;
		while (<STDIN>) { chomp; die qq{\$_ after \$prev\n} if \$_ < \$prev; die qq{\$_ of \$ARGV[0]\n} if \$_ > \$ARGV[0];
			\$prev = \$_ }
		die qq{the last table, read while the program held still, counts \$prev of \$ARGV[0]\n} unless \$prev == \$ARGV[0]" \
		"$all" <counts &&
	"$MEMSIGHT" top -n 1 -T 1 lossy.trace >lended 2>lerr &&
	sed "1d;\$d" lended >llast &&
	"$MEMSIGHT" faults --last 10 -T 1 lossy.trace >lwant 2>lwerr &&
	test_cmp lwant llast &&
	sed "s/^memsight faults: /memsight top: /" lwerr >lwerr.top &&
	test_cmp lwerr.top lerr &&
	grep -q "^memsight top: warning: $all events were lost while recording" lerr
'

# Two alloc_zoo grow, each keeping 1 MiB and 64 bytes a call: the leak
# table sums each process's stacks, and the HEAP column is that sum; the
# last table's sums are what each program says it leaked. A process has a
# row while it runs: top starts once the trace holds the programs'
# stacks, and one program runs 4 s (a sanitized recorder on a busy
# machine wrote its first ones after 1.5 s, a second before its chunk's
# age sends it, and a program of 2.5 s had no row in any table).
test_expect_success 'leaks of several processes: each one'"'"'s outstanding bytes, in the table and in the HEAP column' '
	{ "$MEMSIGHT" record -q -e malloc -o heap.trace -- sh -c "\"$S/alloc_zoo\" grow 400 & \"$S/alloc_zoo\" grow 150 & wait" \
		>heap.truth 2>/dev/null & } &&
	recording_wait heap.trace &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" leaks heap.trace 2>/dev/null | grep -q "(pid [0-9]* alloc_zoo)\$"; do
		sleep 0.1; i=$((i + 1)); done &&
	"$MEMSIGHT" top --max-cpu 100 -d 0.3 -T 3 heap.trace >htables 2>herr &&
	wait &&
	cat htables herr heap.truth &&
	grep -q "^ *PID COMM  *RSS  *CHANGE  *FAULTS/s  *HEAP$" htables &&
	perl -e "
		sub fmt { my (\$v, \$u) = (shift, 0); return \"\$v B\" if \$v < 1024;
			while (\$v >= 1024 && \$u < 4) { \$v /= 1024; \$u++ } sprintf(\"%.1f %s\", \$v, (qw(B KiB MiB GiB TiB))[\$u]) }
		local \$/ = undef; my @t = split /^(?=memsight top )/m, <STDIN>; my \$rows = 0;
		for my \$t (@t) {
			my %sum; \$sum{\$2} = \$1 while \$t =~ /^#\t(\d+) bytes in \d+ allocations? \(pid (\d+) alloc_zoo\)\$/mg;
			# No list by process: one process holds the header'"'"'s total.
			my (\$all) = \$t =~ /^# memsight leaks of .*: (\d+) bytes in \d+ allocations? outstanding/m;
			if (\$t !~ /^# outstanding by process:\$/m) { \$sum{\$1} = \$all while \$t =~ /^ *(\d+) alloc_zoo /mg }
			while (\$t =~ /^ *(\d+) alloc_zoo .* (\S+ \S+)\$/mg) {
				die qq{pid \$1: HEAP \$2, the table says } . fmt(\$sum{\$1} // 0) . qq{\n} if !\$sum{\$1} || \$2 ne fmt(\$sum{\$1});
				\$rows++;
			}
		}
		die qq{no row with a HEAP\n} unless \$rows;
		print qq{\$rows rows agree\n}" <htables &&
	sed -n "/(recording ended)/,\$p" htables >hlast &&
	perl -ne "if (/^alloc_zoo: leaked (\d+) bytes in (\d+) allocations from \w+ \(pid (\d+)\)\$/) { \$b{\$3} += \$1; \$n{\$3} += \$2 }
		END { printf qq{#\t%d bytes in %d allocations (pid %d alloc_zoo)\n}, \$b{\$_}, \$n{\$_}, \$_
			for sort { \$b{\$b} <=> \$b{\$a} } keys %b }" heap.truth >hwant &&
	grep "(pid [0-9]* alloc_zoo)\$" hlast | grep "^#" >hgot &&
	test_cmp hwant hgot
'

# The program grows for half a minute: the read is of a ring still being
# written however slow the machine, and SIGINT then ends the recording.
test_expect_success 'a ring its recorder still writes: read as it stands, the steady leak growing' '
	{ "$MEMSIGHT" record -q --ring 8M -e malloc -o ring.trace -- "$S/alloc_zoo" grow 3000 >/dev/null 2>&1 & } &&
	rec=$! &&
	# Until the leak'"'"'s stack says whether it grows (within 0.1 s of the
	# first sample leaks cannot tell): a later read holds all this one
	# did, and more.
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" top -n 1 -T 1 ring.trace 2>/dev/null |
		grep -A1 "^[0-9]* bytes in [0-9]* allocations from stack" | grep -q "growing"; do
		sleep 0.1; i=$((i + 1)); done
	"$MEMSIGHT" top -n 1 -T 1 ring.trace >ring.out 2>&1; rc=$?
	kill -INT $rec; wait
	test $rc = 0 && cat ring.out &&
	grep "^memsight top [0-9:]*: .ring.trace. being recorded; " ring.out &&
	test "$(grep -c "^memsight top" ring.out)" = 1 &&
	grep -A3 "^[0-9]* bytes in [0-9]* allocations from stack" ring.out | grep -q "steady_leak+0x" &&
	grep -A1 "^[0-9]* bytes in [0-9]* allocations from stack" ring.out | grep -q "growing"
'

# rss_grow 16 3000 3000: waits 3 s, writes 16 MiB page by page, prints
# its RSS as /proc/self/status counts it, holds it 3 s. Recorded with the
# default events, top shows the faults view, and above it the process:
# its RSS as the program read it, grown by the 16 MiB since top first saw
# it, no faults while it holds.
test_expect_success 'the default events: the faults view, the recorder, the process'"'"'s RSS, its change, its faults' '
	{ "$MEMSIGHT" record -q -o faults.trace -- "$S/rss_grow" 16 3000 3000 >rss.truth 2>/dev/null & } &&
	rec=$! &&
	recording_wait faults.trace &&
	"$MEMSIGHT" top --max-cpu 100 -d 0.5 -T 2 faults.trace >ftables 2>ferr &&
	wait &&
	cat ftables ferr rss.truth &&
	test "$(grep -c "^memsight top [0-9:]*: .faults.trace. being recorded; every 0.5 s, faults of the last 10 s$" ftables)" -ge 2 &&
	grep -q "^recorder: pid $rec, [0-9.]*% of a CPU, [0-9.]* [KM]iB resident; trace " ftables &&
	pid=$(sed -n "\$s/^rss_grow: pid \([0-9]*\) .*/\1/p" rss.truth) &&
	want=$(sed -n "\$s/^rss_grow: pid [0-9]* anon \([0-9]*\) file \([0-9]*\) shmem \([0-9]*\)$/\1 \2 \3/p" rss.truth |
		perl -ane "printf \"%.1f MiB\", (\$F[0] + \$F[1] + \$F[2]) / 1048576") &&
	echo "rss_grow $pid holds $want" &&
	grep "^ *$pid rss_grow  *$want  *+\(1[6-9]\|[2-9][0-9]\)\.[0-9] MiB  *0$" ftables &&
	last_table ftables >flast &&
	"$MEMSIGHT" faults --last 10 -T 2 faults.trace >fwant 2>/dev/null &&
	test_cmp fwant flast
'

# A ring of 8 MiB that alloc_zoo churn overwrites several times a second:
# every refresh reads the window as it stood, never a chunk half
# rewritten, and the last table is leaks of the ring the recorder left.
test_expect_success 'a ring overwritten while watched: every refresh whole, the last one leaks of the final window' '
	{ "$MEMSIGHT" record -q --ring 8M -e malloc -o wrap.trace -- "$S/alloc_zoo" churn 150000 >/dev/null 2>&1 & } &&
	recording_wait wrap.trace &&
	"$MEMSIGHT" top --max-cpu 100 -d 0.2 -T 2 wrap.trace >wtables 2>werr &&
	wait &&
	grep "^memsight top\|^recorder" wtables && cat werr &&
	test "$(grep -c "^memsight top [0-9:]*: .wrap.trace. being recorded" wtables)" -ge 2 &&
	test "$(grep -c "^recorder: .*, [0-9]* events lost in its window$" wtables)" = "$(grep -c "being recorded" wtables)" &&
	"$MEMSIGHT" info wrap.trace >winfo 2>/dev/null &&
	grep "^flight: .* [1-9][0-9.]* MiB (.*) overwritten before its window" winfo &&
	last_table wtables >wlast &&
	"$MEMSIGHT" leaks --sort growth -T 2 wrap.trace >wwant 2>wwerr &&
	test_cmp wwant wlast &&
	grep -q "^memsight leaks: .wrap.trace. is a ring of" wwerr &&
	sed "s/^memsight leaks: /memsight top: /" wwerr >wwerr.top &&
	test_cmp wwerr.top werr &&
	# Reading 8 MiB of churn takes a good part of a CPU second: at the
	# default --max-cpu, top waits until its CPU time is a tenth of the
	# time gone by, about nine times the read (less the read'"'"'s wall time,
	# more on a busy machine; plus top'"'"'s own CPU).
	"$MEMSIGHT" top -n 1 -d 0.2 -T 2 wrap.trace >stretched &&
	head -1 stretched &&
	every=$(sed -n "1s/.*; every \([0-9.]*\) s, leaks by growth; stretched from 0.2 s to keep under 10% of a CPU (a read takes \([0-9.]*\) s)$/\1 \2/p" stretched) &&
	perl -e "my (\$w, \$c) = @ARGV; exit !(defined \$c && \$w >= 5 * \$c && \$w <= 10 * \$c + 0.5)" $every
'

if ! command -v tmux >/dev/null; then
	test_expect_success 'tmux is installed (make test-deps installs it)' 'false'
else
	# A server of this test's own, gone with it.
	TMUX_TMPDIR=$TRASH
	export TMUX_TMPDIR
	# A view read when the server goes may still be writing its cache.
	trap 'tmux kill-server 2>/dev/null; rm -rf "$TRASH" 2>/dev/null || { sleep 0.5; rm -rf "$TRASH"; }' EXIT
	screen() { tmux capture-pane -p -t top; }
	# The first stack's first line on the screen, once one is there.
	first_stack() { screen | grep -m1 "^[0-9]* bytes in [0-9]* allocations* from stack"; }

	test_expect_success 'at a terminal: the growing stack first, at its rate; s sorts by size; q leaves the screen as it was' '
		tmux new-session -d -s top -x 150 -y 45 \
			"echo before top; \"$MEMSIGHT\" top --max-cpu 100 -d 0.5 -T 2 term.trace; echo top exited \$?; sleep 60" &&
		{ "$MEMSIGHT" record -q -e malloc -o term.trace -- "$S/alloc_zoo" grow 500 >truth 2>elapsed & } &&
		i=0 && while [ $i -lt 100 ] && ! screen | grep -m1 -A3 "^[0-9]* bytes in" | grep -q "steady_leak+0x"; do
			sleep 0.1; i=$((i + 1)); done &&
		screen >growth.screen &&
		cat growth.screen &&
		grep "^memsight top [0-9:]*: .term.trace. being recorded; every 0.5 s, leaks by growth$" growth.screen &&
		grep -m1 -A3 "^[0-9]* bytes in" growth.screen | grep -q "steady_leak+0x" &&
		tmux send-keys -t top s &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "by size$"; do sleep 0.1; i=$((i + 1)); done &&
		sleep 0.3 && screen >size.screen && cat size.screen &&
		grep -m1 -A3 "^[0-9]* bytes in" size.screen | grep -q "init_tables+0x" &&
		tmux send-keys -t top s &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "by growth$"; do sleep 0.1; i=$((i + 1)); done &&
		# v: the next view this trace has events for (malloc: report),
		# and back.
		tmux send-keys -t top v &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "^# memsight report of .term.trace."; do
			sleep 0.1; i=$((i + 1)); done &&
		screen >report.screen && cat report.screen &&
		grep -q "^memsight top [0-9:]*: .term.trace. being recorded; every 0.5 s, report of the last 10 s$" report.screen &&
		grep -q "^q quits, p pauses, v shows leaks, f filters, + - more or fewer stacks, up down Enter fold one, e folds all$" report.screen &&
		tmux send-keys -t top v &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "leaks by growth$"; do sleep 0.1; i=$((i + 1)); done &&
		# -: one stack fewer; f and a name no process has: no stack;
		# f and an empty line: all again.
		tmux send-keys -t top - &&
		i=0 && while [ $i -lt 50 ] && [ "$(screen | grep -c "^[0-9]* bytes in [0-9]* allocations* from stack")" != 1 ]; do
			sleep 0.1; i=$((i + 1)); done &&
		tmux send-keys -t top + f &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "^keep pids or names"; do sleep 0.1; i=$((i + 1)); done &&
		tmux send-keys -t top n o x x BSpace Enter &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "^# memsight leaks of .term.trace.: 0 bytes"; do
			sleep 0.1; i=$((i + 1)); done &&
		screen >filter.screen && cat filter.screen &&
		grep -q "every 0.5 s, leaks by growth; only nox$" filter.screen &&
		! grep -q "from stack" filter.screen &&
		tmux send-keys -t top f Enter &&
		i=0 && while [ $i -lt 50 ] && [ "$(screen | grep -c "^[0-9]* bytes in [0-9]* allocations* from stack")" != 2 ]; do
			sleep 0.1; i=$((i + 1)); done &&
		screen | grep -q "leaks by growth$" &&
		# e: every stack folded to its first lines and how many more;
		# down and Enter: the second whole again, and it is the one
		# drawn selected (reverse video); e: all whole.
		tmux send-keys -t top e &&
		i=0 && while [ $i -lt 50 ] && [ "$(screen | grep -c "^[[:space:]]*\.\.\. [0-9]* more$")" != 2 ]; do
			sleep 0.1; i=$((i + 1)); done &&
		screen >folded.screen && cat folded.screen &&
		grep -q "e unfolds all$" folded.screen &&
		grep -A4 "^[0-9]* bytes in [0-9]* allocations from stack" folded.screen | grep -q "^[[:space:]]*steady_leak+0x" &&
		grep -A4 "^[0-9]* bytes in [0-9]* allocations from stack" folded.screen | grep -q "^[[:space:]]*\.\.\. 4 more$" &&
		! grep -q "__libc_start_main" folded.screen &&
		tmux send-keys -t top Down Enter &&
		i=0 && while [ $i -lt 50 ] && [ "$(screen | grep -c "^[[:space:]]*\.\.\. [0-9]* more$")" != 1 ]; do
			sleep 0.1; i=$((i + 1)); done &&
		screen >one.screen && cat one.screen &&
		sed -n "/^1048576 bytes in 1 allocation from stack/,\$p" one.screen | grep -q "__libc_start_main" &&
		! sed -n "/^1048576 bytes in 1 allocation from stack/,\$p" one.screen | grep -q "more$" &&
		tmux capture-pane -p -e -t top | grep "$(printf "\033")\[7m" | grep -q "^.*1048576 bytes in 1 allocation from stack" &&
		tmux send-keys -t top e &&
		i=0 && while [ $i -lt 50 ] && screen | grep -q "more$"; do sleep 0.1; i=$((i + 1)); done &&
		test "$(screen | grep -c "__libc_start_main")" = 2 &&
		# p: the table stays as it was (the header alone says when the
		# recording ends); a narrower window is drawn again at its width
		# at once, still paused; p again goes on.
		tmux send-keys -t top p &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "leaks by growth; PAUSED$"; do sleep 0.1; i=$((i + 1)); done &&
		screen | sed 1d >paused1 && sleep 1.2 && screen | sed 1d >paused2 && test_cmp paused1 paused2 &&
		tmux resize-window -t top -x 60 &&
		i=0 && while [ $i -lt 50 ] && [ "$(screen | awk "length > 60" | wc -l)" != 0 -o "$(screen | grep -c "^		malloc+0x")" = 0 ] ||
			! screen | head -1 | grep -q "^memsight top"; do sleep 0.1; i=$((i + 1)); done &&
		screen >narrow.screen && cat narrow.screen &&
		test "$(awk "length > 60" narrow.screen | wc -l)" = 0 &&
		grep -q "^q quits, p resumes, v shows report, s sorts by size, f f" narrow.screen &&
		grep -q "^memsight top [0-9:]*: .term.trace. " narrow.screen &&
		tmux resize-window -t top -x 150 &&
		tmux send-keys -t top p &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "leaks by growth$"; do sleep 0.1; i=$((i + 1)); done &&
		wait &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "(recording ended)"; do sleep 0.1; i=$((i + 1)); done &&
		sleep 0.3 && screen >end.screen && cat end.screen truth elapsed &&
		# The rate it shows at the end, against what the program did:
		# its bytes over its time.
		rate=$(grep -m1 -A1 "^[0-9]* bytes in [0-9]* allocations from stack" end.screen |
			sed -n "s/.*growing \([0-9.]*\) KiB\/s.*/\1/p") &&
		bytes=$(sed -n "s/^alloc_zoo: leaked \([0-9]*\) bytes in 500 allocations from steady_leak.*/\1/p" truth) &&
		ms=$(sed -n "s/^alloc_zoo: elapsed \([0-9.]*\) ms$/\1/p" elapsed) &&
		echo "shown $rate KiB/s; the program: $bytes bytes in $ms ms" &&
		perl -e "my (\$r, \$b, \$ms) = @ARGV; my \$t = \$b / \$ms * 1000 / 1024; exit !(abs(\$r - \$t) <= 0.2 * \$t)" \
			"$rate" "$bytes" "$ms" &&
		tmux send-keys -t top q &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "^top exited"; do sleep 0.1; i=$((i + 1)); done &&
		screen >after.screen && cat after.screen &&
		sed -n 1p after.screen | grep -qx "before top" &&
		sed -n 2p after.screen | grep -qx "top exited 0" &&
		! grep -q "memsight top" after.screen
	'

	# One recording ends, another starts on the same path (a ring, as a
	# service restarted would): top goes on, with the new process.
	test_expect_success 'at a terminal: a recorder restarted on the same path is followed' '
		tmux kill-session -t top &&
		"$MEMSIGHT" record -q --ring 8M -e malloc -o again.trace -- "$S/alloc_zoo" grow 50 >first.truth 2>/dev/null &&
		tmux new-session -d -s top -x 150 -y 45 "\"$MEMSIGHT\" top --max-cpu 100 -d 0.3 -T 2 again.trace; sleep 60" &&
		i=0 && while [ $i -lt 50 ] && ! screen | grep -q "(recording ended)"; do sleep 0.1; i=$((i + 1)); done &&
		screen >first.screen && cat first.screen &&
		{ "$MEMSIGHT" record -q --ring 8M -e malloc -o again.trace -- "$S/alloc_zoo" grow 300 >second.truth 2>/dev/null & } &&
		rec=$! &&
		i=0 && while [ $i -lt 100 ] && ! screen | grep -q "^recorder: pid $rec,"; do sleep 0.1; i=$((i + 1)); done &&
		pid=$(sed -n "s/^alloc_zoo: leaked .* from steady_leak (pid \([0-9]*\))$/\1/p" first.truth) &&
		i=0 && while [ $i -lt 100 ] && { ! screen | grep -q "(pid [0-9]* alloc_zoo)" ||
			screen | grep -q "(pid $pid alloc_zoo)"; }; do sleep 0.1; i=$((i + 1)); done &&
		screen >second.screen && cat second.screen &&
		wait &&
		grep -q "^memsight top [0-9:]*: .again.trace. being recorded; every 0.3 s, leaks by growth$" second.screen &&
		grep -q "^recorder: pid $rec," second.screen &&
		new=$(sed -n "s/^alloc_zoo: leaked .* from steady_leak (pid \([0-9]*\))$/\1/p" second.truth) &&
		test "$new" != "$pid" &&
		grep -q "(pid $new alloc_zoo)" second.screen && ! grep -q "(pid $pid alloc_zoo)" second.screen &&
		grep -q "^ *$new alloc_zoo " second.screen
	'
fi

test_done
