#!/bin/sh
# tests/bench/bench-top.sh: what watching a recording with memsight top
# costs, in one run. Prints figures and ratios; asserts nothing (machines
# are noisy).
#
#   malloc churn (alloc_zoo churn N, every call recorded): the program's own
#     elapsed time recorded unwatched and recorded with `memsight top -d 1`
#     reading the same trace (into a pipe, until the recording ends); top's
#     CPU (its leaks children included) per refresh, and the trace's bytes
#   a steady leak (alloc_zoo grow 500, 5 s): top's CPU per refresh on a trace
#     that grows slowly, the case top is for
#   a parallel build (make -j2 of memsight's recorder and analyzer, from a
#     copy of this tree) recorded system-wide with the default events: the
#     build's time alone, recorded, and recorded with top (its faults view)
#     watching; top's CPU per refresh and as a share of one CPU
#   a 1 GiB ring filled by malloc churn: top's CPU for one refresh, which
#     reads the ring's whole window (RING, RING_N: its size, the calls); and
#     the ring full, then written slowly: each refresh reads what is new
#   a ring whose recorder begins segments while top watches (MOVING_RING):
#     each refresh reads on into the new segments, against one whole read
#
# Each round runs the two in turn, in a turning order; figures are medians.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
RUNS=${RUNS:-3}
N=${N:-100000}
. "$top/tests/bench/bench-lib.sh"
bench_workdir

zoo=$b/samples/alloc_zoo
zel() { sed -n 's/^alloc_zoo: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }

# watched TRACE ARGS: record alloc_zoo ARGS into TRACE with top reading it;
# the program's elapsed ms, top's CPU seconds and its tables, in w.fig.
watched() {
	t=$1 && shift
	rm -f "$t"
	"$b/memsight" record -q -e malloc -o "$t" -- "$zoo" "$@" >/dev/null 2>e.w &
	rec=$!
	i=0 && while [ $i -lt 100 ] && ! "$b/memsight" info "$t" 2>/dev/null | grep -q "^status: *being recorded"; do
		sleep 0.05; i=$((i + 1)); done
	/usr/bin/time -f "%U %S" -o top.time "$b/memsight" top -d 1 "$t" >tables 2>/dev/null
	wait $rec
	echo "$(zel e.w) $(awk '{ print $1 + $2 }' top.time) $(grep -c '^memsight top' tables)" >w.fig
}

: >u.ms && : >w.ms && : >w.cpu
for r in $(seq "$RUNS"); do
	order="u w" && [ $((r % 2)) = 0 ] && order="w u"
	for who in $order; do
		if [ "$who" = u ]; then
			"$b/memsight" record -q -e malloc -o u.trace -- "$zoo" churn "$N" >/dev/null 2>e.u
			zel e.u >>u.ms
		else
			watched w.trace churn "$N"
			read -r ms cpu n <w.fig
			echo "$ms" >>w.ms
			echo "$cpu $n" | awk '{ printf "%.3f\n", $2 ? $1 / $2 : 0 }' >>w.cpu
			echo "round $r: watched $ms ms, top $cpu s CPU over $n refreshes" >&2
		fi
	done
done
u=$(median <u.ms) wm=$(median <w.ms) c=$(median <w.cpu)
echo "malloc churn $N (every call), the program's elapsed ms, medians of $RUNS:"
echo "  recorded:              $u"
echo "  recorded, top watching: $wm ($(echo "$wm $u" | awk '{ printf "%.2fx", $1 / $2 }'))"
echo "  top's CPU per refresh: $c s; trace $(stat -c %s w.trace) bytes"

: >g.cpu
for r in $(seq "$RUNS"); do
	watched g.trace grow 500
	read -r ms cpu n <w.fig
	echo "$cpu $n" | awk '{ printf "%.3f\n", $2 ? $1 / $2 : 0 }' >>g.cpu
done
echo "steady leak (grow 500, 5 s): top's CPU per refresh $(median <g.cpu) s; trace $(stat -c %s g.trace) bytes"

bench_build_workload
# box u|w: the build recorded with -a, watched by top or not; appends the
# build's seconds to box.WHO and, watched, top's CPU seconds, its tables
# and its wall seconds to box.top.
box() {
	rm -f box.trace
	"$b/memsight-record" -q -a -o box.trace &
	rec=$!
	i=0 && while [ $i -lt 100 ] && ! "$b/memsight" info box.trace 2>/dev/null | grep -q "^status: *being recorded"; do
		sleep 0.05; i=$((i + 1)); done
	if [ "$1" = w ]; then
		/usr/bin/time -f "%U %S %e" -o top.time "$b/memsight" top -d 1 box.trace >tables 2>/dev/null &
		tp=$!
	fi
	s=$(date +%s.%N); ./build.sh; e=$(date +%s.%N)
	kill -INT $rec
	wait $rec
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>box.$1
	if [ "$1" = w ]; then
		wait $tp
		echo "$(awk '{ print $1 + $2, $3 }' top.time) $(grep -c '^memsight top' tables)" >>box.top
	fi
}
: >box.a && : >box.u && : >box.w && : >box.top
for r in $(seq "$RUNS"); do
	s=$(date +%s.%N); ./build.sh; e=$(date +%s.%N)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>box.a
	order="u w" && [ $((r % 2)) = 0 ] && order="w u"
	for who in $order; do box $who; done
	echo "round $r: alone $(tail -1 box.a) s, recorded $(tail -1 box.u) s, watched $(tail -1 box.w) s; top $(tail -1 box.top)" >&2
done
a=$(median <box.a) u=$(median <box.u) wb=$(median <box.w)
echo "make -j2 recorded with -a (default events), seconds, medians of $RUNS:"
echo "  alone:                  $a"
echo "  recorded:               $u ($(echo "$u $a" | awk '{ printf "%.2fx", $1 / $2 }'))"
echo "  recorded, top watching: $wb ($(echo "$wb $a" | awk '{ printf "%.2fx", $1 / $2 }'); $(echo "$wb $u" | awk '{ printf "%.2fx", $1 / $2 }') of unwatched)"
echo "  top's CPU per refresh: $(awk '{ printf "%.3f\n", $3 ? $1 / $3 : 0 }' box.top | median) s, \
$(awk '{ printf "%.1f\n", $2 ? 100 * $1 / $2 : 0 }' box.top | median)% of one CPU; trace $(stat -c %s box.trace) bytes"

# A ring of RING (default 1G) that malloc churn (every call, RING_N calls)
# filled, and the same ring written slowly after: top refreshes a ring by
# reading what its recorder wrote since the last refresh, and its whole
# window again when the recorder has overwritten what it read last. Of
# churn, which begins a segment about every second (56 MiB of 1 GiB), one
# whole read of the finished ring is measured. A
# steady leak after the churn (alloc_zoo grow, 64 bytes every 10 ms) stays
# in its segment: top's CPU for its first refresh (a whole read), and the
# view's command's for each of ten refreshes 1 s apart after its first
# (a whole read of the window among them, where the leak has filled the
# segment the churn left and begun another: counted). One run each.
RING=${RING:-1G}
RING_N=${RING_N:-2000000}
rm -f ring.trace
"$b/memsight" record -q --ring "$RING" -e malloc -o ring.trace -- "$zoo" churn "$RING_N" >/dev/null 2>&1
/usr/bin/time -f "%U %S %e" -o ring.time "$b/memsight" top -n 1 ring.trace >ring.tables 2>/dev/null
read -r ru rs re <ring.time
echo "a ring of $RING filled by malloc churn $RING_N ($(stat -c %s ring.trace) bytes, \
$("$b/memsight" info ring.trace 2>/dev/null | sed -n 's/^samples: *//p') samples in its window):"
echo "  top's CPU per refresh: $(echo "$ru $rs" | awk '{ printf "%.1f", $1 + $2 }') s ($re s of wall time); \
at --max-cpu 10, a refresh every $(echo "$ru $rs" | awk '{ printf "%.0f", 10 * ($1 + $2) }') s"

rm -f ring.trace
"$b/memsight" record -q --ring "$RING" -e malloc -o ring.trace -- \
	sh -c "'$zoo' churn $((RING_N / 5)) >/dev/null 2>&1; '$zoo' grow 6000 >/dev/null 2>&1" &
rec=$!
# Until the churn has ended and the steady leak runs (a grandchild of the
# recorder's: another run's may be ending).
leak=
i=0 && while [ $i -lt 600 ] && [ -z "$leak" ]; do
	sleep 0.1; i=$((i + 1))
	leak=$(pgrep -P "$(pgrep -P $rec -x sh)" -f "^$zoo grow 6000\$")
done
/usr/bin/time -f "%U %S" -o ring1.time "$b/memsight" top -n 1 ring.trace >/dev/null 2>&1
# The view's command's CPU, its children's included, from /proc: what
# the follower used between top's second table and its twelfth is ten
# refreshes.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }
tables_wait() {
	while [ "$(grep -c "^memsight top" ring.tables)" -lt "$1" ] && kill -0 "$tp" 2>/dev/null; do sleep 0.05; done
}
# refreshes_cpu TRACE: top on TRACE for 13 tables 1 s apart, into
# ring.tables; in per, the view's command's CPU for each of the ten
# refreshes between its second table and its twelfth.
refreshes_cpu() {
	: >ring.tables
	MEMSIGHT_READ_STATS=1 "$b/memsight" top -n 13 --max-cpu 100 -d 1 "$1" >ring.tables 2>/dev/null &
	tp=$!
	tables_wait 2
	fp=$(pgrep -P "$tp" -f "^memsight-analyze leaks") && c2=$(cpu_of "$fp")
	tables_wait 12
	c12=$(cpu_of "$fp")
	wait $tp
	per=$(echo "$c12 $c2" | awk '{ printf "%.3f", ($1 - $2) / 10 }')
}
refreshes_cpu ring.trace
kill -INT $rec 2>/dev/null
kill $leak 2>/dev/null
wait $rec
echo "the same ring, full, then a steady leak written into it (of $(grep -c "being recorded" ring.tables) live tables, \
$(grep "^read " ring.tables | grep -vc "as it grew") read the window whole):"
echo "  top's first refresh: $(awk '{ print $1 + $2 }' ring1.time) s of CPU (a whole read); each after it: \
$per s"

# A ring whose recorder begins segments while top watches, as a busy
# service's flight recorder does: a ring of MOVING_RING (default 32M)
# stored uncompressed, six loop_leak processes each leaking a block every
# millisecond for 30 s. Once the ring is full, top reads on into each
# segment the recorder begins, the leak table dropping the blocks from
# before the window: the view's command's CPU for each of ten refreshes
# 1 s apart, against one whole read of the same window (what each refresh
# cost when the command started again on every segment). One run.
MOVING_RING=${MOVING_RING:-32M}
leak=$b/samples/loop_leak
rm -f moving.trace
"$b/memsight" record -q --ring "$MOVING_RING" --compression none -e malloc -o moving.trace -- \
	sh -c "for i in 1 2 3 4 5 6; do '$leak' 30000 1 & done; wait" >/dev/null 2>&1 &
rec=$!
# Until the window has moved on once.
i=0 && while [ $i -lt 600 ] && ! "$b/memsight" info moving.trace 2>/dev/null | grep -q " [1-9][0-9.]* [KM]iB (.*) overwritten"; do
	sleep 0.1; i=$((i + 1)); done
refreshes_cpu moving.trace
/usr/bin/time -f "%U %S" -o moving.time "$b/memsight" top -n 1 moving.trace >/dev/null 2>&1
kill -INT $rec 2>/dev/null
wait $rec
echo "a ring of $MOVING_RING whose recorder begins segments while top watches (its window moved on \
$(sed -n "s/^read .*moved on \([0-9]*\) time.*/\1/p" ring.tables | tail -1) times in \
$(grep -c "being recorded" ring.tables) live tables; $(grep "^read " ring.tables | grep -vc "as it grew") read it whole):"
echo "  each refresh, read on: $per s of CPU; \
one whole read of the window: $(awk '{ print $1 + $2 }' moving.time) s"
