#!/bin/sh
# tests/bench/bench-dwarf.sh: DWARF stacks, memsight against perf record
# --call-graph dwarf on the XOR encoder built without frame pointers, with
# every page fault, brk and mmap recorded, in one run, side by side. Prints
# ratios; asserts nothing (machines are noisy).
#
#   events lost         each tool's own count (perf: LOST_SAMPLES per event in --stats)
#   workload slowdown   elapsed time the sample reports for itself, median of RUNS; the
#                       ratios between tools are the median of each round's ratio, as the
#                       runs of one round are close in time and this machine's speed drifts;
#                       and the time added per event each tool kept (perf drops events, and the
#                       kernel skips copying a dropped one); also perf with rings that hold
#                       the whole run, which keeps every event as memsight does
#   recorder cost       CPU time of the recorder itself (its own and its threads', less
#                       the workload's, which it reports) and wall time until its file is
#                       complete: end-of-run work (embedding objects, perf's build-ids) counts
#   file bytes          trace (objects embedded) and perf.data; once, the trace with
#                       --stack-dump raw for reference
#   unwinding           memsight folded vs perf script on the same run, in samples per second,
#                       and the analyzer's peak memory
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
# A multiple of 4, so that each order of the tools (below) comes up as often.
RUNS=${RUNS:-12}
MB=${MB:-64}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
# The analyzer's cache of decoded objects starts empty and goes with the
# run; the first analysis below fills it, as perf record fills ~/.debug.
MEMSIGHT_CACHE_DIR=$w/cache
export MEMSIGHT_CACHE_DIR
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }

head -c $((MB << 20)) /dev/urandom >in.bin
xor=$b/samples/nofp/xor_encoder
events=syscalls:sys_enter_brk,syscalls:sys_exit_brk,syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,page-faults

elapsed() { sed -n 's/^xor_encoder: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }
# The recorder's CPU seconds: what time(1) counted for it and its
# children ($1: "user system wall"), less the workload's own report.
tool_cpu() { awk -v w="$(sed -n 's/^xor_encoder: cpu \([0-9.]*\) ms$/\1/p' e)" '{ print $1 + $2 - w / 1000 }' "$1"; }
. "$top/tests/bench/bench-lib.sh"

# perf with rings that hold the whole run, so that it keeps every event as
# memsight does: the like-for-like cost. perf reads its rings only when
# half full, and the run's samples take 4.4 MB per MiB of input, so 8 MiB
# of ring per MiB of input, rounded up to a power of two.
big=1; while [ $big -lt $((MB * 8)) ]; do big=$((big * 2)); done

: >base.t; : >ms.t; : >perf.t; : >big.t; : >ms.cpu; : >perf.cpu; : >ms.wall; : >perf.wall; : >ms.lost; : >perf.lost; : >big.lost; : >ms.cost; : >perf.cost; : >ms.bpe
run_alone() { "$xor" in.bin >/dev/null 2>e && elapsed e >>base.t; }
run_ms() {
	/usr/bin/time -f "%U %S %e" -o ms.time \
		"$b/memsight" record -q -g dwarf -e brk,mmap,faults -o ms.trace -- "$xor" in.bin >/dev/null 2>e &&
		elapsed e >>ms.t && tool_cpu ms.time >>ms.cpu && awk '{ print $3 }' ms.time >>ms.wall
	"$b/memsight" info ms.trace >ms.info
	sed -n 's/^lost: *\([0-9]*\).*/\1/p' ms.info >>ms.lost
	# Per run: where ASLR puts the stack decides whether the dumps hold
	# the sample's random read buffer, so sizes differ by a third.
	awk -v b="$(stat -c %s ms.trace)" '/^samples:/ { print b / $2 }' ms.info >>ms.bpe
}
run_perf() {
	/usr/bin/time -f "%U %S %e" -o perf.time \
		perf record -q -e $events -c 1 --call-graph dwarf -o perf.data -- "$xor" in.bin >/dev/null 2>e &&
		elapsed e >>perf.t && tool_cpu perf.time >>perf.cpu && awk '{ print $3 }' perf.time >>perf.wall
	perf_lost perf.data >>perf.lost
	perf report -i perf.data --stats 2>/dev/null |
		awk '/ stats:$/ { ev = 1 } ev && /SAMPLE events:/ { n += $3 } END { print n }' >perf.n
}
run_big() {
	perf record -q -m ${big}M -e $events -c 1 --call-graph dwarf -o big.data -- "$xor" in.bin >/dev/null 2>e &&
		elapsed e >>big.t
	perf_lost big.data >>big.lost
	rm -f big.data big.data.old
}
# Each run starts with no dirty pages: otherwise the writeback of the
# previous run's file (perf.data is 280 MB) lands on the next one. The
# order turns each round, so no tool always follows the same one.
for i in $(seq "$RUNS"); do
	case $((i % 4)) in
	1) order="alone ms perf big" ;; 2) order="ms perf big alone" ;;
	3) order="perf big alone ms" ;; 0) order="big alone ms perf" ;;
	esac
	for t in $order; do
		sync
		run_$t
	done
	# Time the recording added to this round, per event each tool kept.
	a=$(tail -1 base.t)
	awk -v a="$a" -v t="$(tail -1 ms.t)" '/^samples:/ { print (t - a) * 1000 / $2 }' ms.info >>ms.cost
	awk -v a="$a" -v t="$(tail -1 perf.t)" '{ if ($1) print (t - a) * 1000 / $1 }' perf.n >>perf.cost
done
base=$(median <base.t); ms=$(median <ms.t); pf=$(median <perf.t); bg=$(median <big.t)
ms_cost=$(median <ms.cost); pf_cost=$(median <perf.cost); ms_bpe=$(median <ms.bpe)
# Per round, memsight's time against perf's and against perf keeping all.
r_pf=$(paste ms.t perf.t | awk '{ print $1 / $2 }' | median)
r_bg=$(paste ms.t big.t | awk '{ print $1 / $2 }' | median)
ms_cpu=$(median <ms.cpu); pf_cpu=$(median <perf.cpu); ms_wall=$(median <ms.wall); pf_wall=$(median <perf.wall)
count_outputs

# For reference, once: the same recording with every byte of the dumps kept.
"$b/memsight" record -q -g dwarf --stack-dump raw -e brk,mmap,faults -o raw.trace -- "$xor" in.bin >/dev/null 2>&1
raw_bpe=$("$b/memsight" info raw.trace | awk -v b="$(stat -c %s raw.trace)" '/^samples:/ { print b / $2 }')

# The analyzer's memory against the trace's size: a recording of a quarter
# of the input, folded the same way.
head -c $((MB << 18)) in.bin >small.bin
"$b/memsight" record -q -g dwarf -e brk,mmap,faults -o small.trace -- "$xor" small.bin >/dev/null 2>&1
/usr/bin/time -f %M -o small.rss "$b/memsight" folded small.trace >/dev/null 2>&1

# Each analysis three times, the median kept: the first run of each also
# reads its files into the page cache.
secs() { s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { print e - s }'; }
/usr/bin/time -f %M -o ms.rss "$b/memsight" folded ms.trace >ms.folded 2>/dev/null
perf script -i perf.data >perf.script 2>/dev/null
: >ms.a; : >pf.a; : >ni.a
for i in 1 2 3; do
	secs "$b/memsight" folded ms.trace >>ms.a
	secs perf script -i perf.data >>pf.a
	# Both show inlined functions as frames of their own (perf script
	# marks them "(inlined)"), so that is the like-for-like time; without
	# them, for what finding them costs.
	secs "$b/memsight" folded --no-inline ms.trace >>ni.a
done
t0=0; t1=$(median <ms.a); t2=$(awk -v a="$t1" -v b="$(median <pf.a)" 'BEGIN { print a + b }')
t3=$(awk -v a="$t2" -v b="$(median <ni.a)" 'BEGIN { print a + b }')

echo "losses per run: memsight $(tr '\n' ' ' <ms.lost)  perf $(tr '\n' ' ' <perf.lost)  perf -m ${big}M $(tr '\n' ' ' <big.lost)"
awk -v base="$base" -v ms="$ms" -v pf="$pf" -v bg="$bg" -v big="$big" -v bl="$(median <big.lost)" -v mb="$ms_bytes" -v me="$ms_events" -v ml="$ms_lost" \
    -v pb="$pf_bytes" -v pe="$pf_events" -v pl="$pf_lost" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" \
    -v runs="$RUNS" -v size="$MB" -v rss="$(cat ms.rss)" -v srss="$(cat small.rss)" \
    -v sbytes="$(stat -c %s small.trace)" -v mc="$ms_cost" -v pc="$pf_cost" -v mbpe="$ms_bpe" \
    -v r_pf="$r_pf" -v r_bg="$r_bg" -v mcpu="$ms_cpu" -v pcpu="$pf_cpu" -v mwall="$ms_wall" -v pwall="$pf_wall" \
    -v pinl="$(grep -c "(inlined)\$" perf.script)" -v rbpe="$raw_bpe" '
BEGIN {
	printf "XOR encoder without frame pointers, %d MiB input, faults+brk+mmap with dwarf stacks (8192 bytes), median of %d runs\n\n", size, runs
	printf "%-34s %12s %12s %12s\n", "", "alone", "memsight", "perf record"
	printf "%-34s %12.1f %12.1f %12.1f\n", "workload elapsed (ms)", base, ms, pf
	printf "%-34s %12s %11.2fx %11.2fx\n", "slowdown", "", ms / base, pf / base
	printf "%-34s %12s %12s %11.2fx   (%.1f ms; rings of %d MiB, median %d events lost)\n", \
		"  perf keeping every event", "", "", bg / base, bg, big, bl
	printf "%-34s %12s %12.2f %12.2f\n", "added us per event kept (median)", "", mc, pc
	printf "%-34s %12s %12.2f %12.2f\n", "recorder CPU, whole run (s)", "", mcpu, pcpu
	printf "%-34s %12s %12.2f %12.2f\n", "recording until file complete (s)", "", mwall, pwall
	printf "%-34s %12s %12d %12d\n", "events recorded (last run)", "", me, pe
	printf "%-34s %12s %12d %12d\n", "events lost (last run)", "", ml, pl
	printf "%-34s %12s %12d %12d\n", "file bytes", "", mb, pb
	printf "%-34s %12s %12.1f %12.1f\n", "bytes per event (median of runs)", "", mbpe, pb / pe
	printf "%-34s %12s %12.1f\n", "  the same with --stack-dump raw", "", rbpe
	printf "\n%-34s %12s %12.3f %12.3f\n", "unwind + symbolize (s)", "", t1 - t0, t2 - t1
	printf "%-34s %12s %12.0f %12.0f\n", "samples per second", "", me / (t1 - t0), pe / (t2 - t1)
	printf "%-34s %12s %12.3f\n", "  the same with --no-inline (s)", "", t3 - t2
	printf "%-34s %12s %12s %12d\n", "  inlined frames perf script shows", "", "", pinl
	printf "%-34s %12s %12d   (%d KiB on a %.1f MB trace)\n", "analyzer peak RSS (KiB)", "", rss, srss, sbytes / 1e6
	printf "\nratios: slowdown memsight/perf %.2f (<= 1 wanted; perf skips copying the events it drops, so also\n", \
		r_pf
	printf "        per event kept: %.2f, and against perf keeping every event: %.2f);\n", mc / pc, r_bg
	printf "        bytes per event memsight/perf %.3f (<= 0.25 wanted);\n", mbpe / (pb / pe)
	printf "        unwinding samples/s memsight/perf %.1fx (>= 10 wanted); memsight without inlined frames %.1fx\n", \
		(me / (t1 - t0)) / (pe / (t2 - t1)), (me / (t3 - t2)) / (pe / (t2 - t1))
}'
