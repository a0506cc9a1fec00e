#!/bin/sh
# tests/bench/bench-dwarf.sh: DWARF stacks, memsight against perf record
# --call-graph dwarf on the XOR encoder built without frame pointers, with
# every page fault, brk and mmap recorded, in one run, side by side. Prints
# ratios; asserts nothing (machines are noisy).
#
#   events lost         each tool's own count (perf: LOST_SAMPLES per event in --stats)
#   workload slowdown   elapsed time the sample reports for itself, median of RUNS, and
#                       the time added per event each tool kept (perf drops events, and a
#                       dropped one costs the workload nothing)
#   file bytes          trace (objects embedded) and perf.data; once, the trace with
#                       --stack-dump raw for reference
#   unwinding           memsight folded vs perf script on the same run, in samples per second,
#                       and the analyzer's peak memory
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
RUNS=${RUNS:-3}
MB=${MB:-64}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }

head -c $((MB << 20)) /dev/urandom >in.bin
xor=$b/samples/nofp/xor_encoder
events=syscalls:sys_enter_brk,syscalls:sys_exit_brk,syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,page-faults

elapsed() { sed -n 's/^xor_encoder: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }
. "$top/tests/bench/bench-lib.sh"

: >base.t; : >ms.t; : >perf.t; : >ms.lost; : >perf.lost; : >ms.cost; : >perf.cost; : >ms.bpe
# Each run starts with no dirty pages: otherwise the writeback of the
# previous run's file (perf.data is 280 MB) lands on the next one.
for i in $(seq "$RUNS"); do
	sync
	"$xor" in.bin >/dev/null 2>e && elapsed e >>base.t
	sync
	"$b/memsight" record -q -g dwarf -e brk,mmap,faults -o ms.trace -- "$xor" in.bin >/dev/null 2>e &&
		elapsed e >>ms.t
	"$b/memsight" info ms.trace >ms.info
	sed -n 's/^lost: *\([0-9]*\).*/\1/p' ms.info >>ms.lost
	# Per run: where ASLR puts the stack decides whether the dumps hold
	# the sample's random read buffer, so sizes differ by a third.
	awk -v b="$(stat -c %s ms.trace)" '/^samples:/ { print b / $2 }' ms.info >>ms.bpe
	# Time the recording added to this run, per event it kept.
	awk -v a="$(tail -1 base.t)" -v t="$(tail -1 ms.t)" '/^samples:/ { print (t - a) * 1000 / $2 }' ms.info >>ms.cost
	sync
	perf record -q -e $events -c 1 --call-graph dwarf -o perf.data -- "$xor" in.bin >/dev/null 2>e &&
		elapsed e >>perf.t
	perf_lost perf.data >>perf.lost
	perf report -i perf.data --stats 2>/dev/null |
		awk -v a="$(tail -1 base.t)" -v t="$(tail -1 perf.t)" '/ stats:$/ { ev = 1 }
			ev && /SAMPLE events:/ { n += $3 } END { if (n) print (t - a) * 1000 / n }' >>perf.cost
done
base=$(median <base.t); ms=$(median <ms.t); pf=$(median <perf.t)
ms_cost=$(median <ms.cost); pf_cost=$(median <perf.cost); ms_bpe=$(median <ms.bpe)
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

echo "losses per run: memsight $(tr '\n' ' ' <ms.lost)  perf $(tr '\n' ' ' <perf.lost)"
awk -v base="$base" -v ms="$ms" -v pf="$pf" -v mb="$ms_bytes" -v me="$ms_events" -v ml="$ms_lost" \
    -v pb="$pf_bytes" -v pe="$pf_events" -v pl="$pf_lost" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" \
    -v runs="$RUNS" -v size="$MB" -v rss="$(cat ms.rss)" -v srss="$(cat small.rss)" \
    -v sbytes="$(stat -c %s small.trace)" -v mc="$ms_cost" -v pc="$pf_cost" -v mbpe="$ms_bpe" \
    -v pinl="$(grep -c "(inlined)\$" perf.script)" -v rbpe="$raw_bpe" '
BEGIN {
	printf "XOR encoder without frame pointers, %d MiB input, faults+brk+mmap with dwarf stacks (8192 bytes), median of %d runs\n\n", size, runs
	printf "%-34s %12s %12s %12s\n", "", "alone", "memsight", "perf record"
	printf "%-34s %12.1f %12.1f %12.1f\n", "workload elapsed (ms)", base, ms, pf
	printf "%-34s %12s %11.2fx %11.2fx\n", "slowdown", "", ms / base, pf / base
	printf "%-34s %12s %12.2f %12.2f\n", "added us per event kept (median)", "", mc, pc
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
	printf "\nratios: slowdown memsight/perf %.2f (<= 1 wanted; perf pays nothing for the events it drops,\n", \
		(ms / base) / (pf / base)
	printf "        so also per event kept: %.2f); bytes per event memsight/perf %.3f (<= 0.25 wanted);\n", mc / pc, mbpe / (pb / pe)
	printf "        unwinding samples/s memsight/perf %.1fx (>= 10 wanted); memsight without inlined frames %.1fx\n", \
		(me / (t1 - t0)) / (pe / (t2 - t1)), (me / (t3 - t2)) / (pe / (t2 - t1))
}'
