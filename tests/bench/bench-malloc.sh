#!/bin/sh
# tests/bench/bench-malloc.sh: the malloc family on a malloc/free-heavy
# workload (alloc_zoo churn), side by side in one run:
#   alone; memsight record -e malloc (stacks on every allocation);
#   perf record of the same uprobes, defined in uprobe_events with the same
#   fetchargs, without stacks; bpftrace counting allocation stacks; heaptrack;
#   memsight's sampler preloaded with no recorder, and recorded with
#   --sample-bytes 512K. Then a real program (Python building JSON strings):
#   alone, sampled, every call, heaptrack.
# Prints slowdowns, bytes per event and lost events. Asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
N=${N:-20000}
RUNS=${RUNS:-3}
w=$(mktemp -d)
zoo=$b/samples/alloc_zoo
libc=$(ldd "$zoo" | sed -n 's/.*libc.so.6 => \([^ ]*\).*/\1/p')
ue=/sys/kernel/tracing/uprobe_events
cleanup() {
	for e in malloc malloc_ret calloc calloc_ret realloc realloc_ret free; do echo "-:benchperf/$e" >>$ue; done 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT
cd "$w" || exit 1

elapsed() { sed -n 's/^alloc_zoo: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }
. "$top/tests/bench/bench-lib.sh"
off() { nm -D --defined-only "$libc" | awk -v f="$1" '$3 == f || $3 ~ "^"f"@@" { print "0x" $1; exit }'; }

# perf's uprobes: the same functions and fetchargs, in uprobe_events.
{
	echo "p:benchperf/malloc $libc:$(off malloc) size=%di:u64"
	echo "r:benchperf/malloc_ret $libc:$(off malloc) ret=\$retval:u64"
	echo "p:benchperf/calloc $libc:$(off calloc) nmemb=%di:u64 size=%si:u64"
	echo "r:benchperf/calloc_ret $libc:$(off calloc) ret=\$retval:u64"
	echo "p:benchperf/realloc $libc:$(off realloc) ptr=%di:u64 size=%si:u64"
	echo "r:benchperf/realloc_ret $libc:$(off realloc) ret=\$retval:u64"
	echo "p:benchperf/free $libc:$(off free) ptr=%di:u64"
} >>$ue || { echo "cannot define uprobes in $ue"; exit 1; }
pe="-e benchperf:malloc -e benchperf:malloc_ret -e benchperf:calloc -e benchperf:calloc_ret"
pe="$pe -e benchperf:realloc -e benchperf:realloc_ret -e benchperf:free"

: >base.t; : >ms.t; : >perf.t; : >bt.t; : >ht.t; : >lib.t; : >ss.t
for i in $(seq "$RUNS"); do
	"$zoo" churn $N >/dev/null 2>e && elapsed e >>base.t
	LD_PRELOAD=$b/libmemsight-sample.so "$zoo" churn $N >/dev/null 2>e && elapsed e >>lib.t
	"$b/memsight" record -q -e malloc --sample-bytes 512K -o ss.trace -- "$zoo" churn $N >/dev/null 2>e &&
		elapsed e >>ss.t
	"$b/memsight" record -q -e malloc -o ms.trace -- "$zoo" churn $N >/dev/null 2>e && elapsed e >>ms.t
	perf record -q $pe -o perf.data -- "$zoo" churn $N >/dev/null 2>e && elapsed e >>perf.t
	if command -v heaptrack >/dev/null; then
		heaptrack -o heaptrack.data "$zoo" churn $N >heaptrack.out 2>&1 && elapsed heaptrack.out >>ht.t
		rm -f heaptrack.data*
	fi
done
if command -v bpftrace >/dev/null; then
	for i in $(seq "$RUNS"); do
		bpftrace -q -c "$zoo churn $N" -e "uprobe:$libc:malloc,uprobe:$libc:calloc,uprobe:$libc:realloc { @[ustack] = count(); } uprobe:$libc:free { @f = count(); }" >bt.out 2>&1
		elapsed bt.out >>bt.t
	done
fi
base=$(median <base.t); ms=$(median <ms.t); pf=$(median <perf.t)
bt=$(median <bt.t); ht=$(median <ht.t); lib=$(median <lib.t); ss=$(median <ss.t)

"$b/memsight" record -e malloc -o ms.trace -- "$zoo" churn $N >/dev/null 2>ms.err
perf record $pe -o perf.data -- "$zoo" churn $N >/dev/null 2>perf.err
count_outputs

awk -v base="$base" -v ms="$ms" -v pf="$pf" -v bt="${bt:-0}" -v ht="${ht:-0}" -v lib="$lib" -v ss="$ss" \
    -v mb="$ms_bytes" -v me="$ms_events" \
    -v ml="$ms_lost" -v pb="$pf_bytes" -v pe="$pf_events" -v pl="$pf_lost" -v n="$N" -v runs="$RUNS" '
BEGIN {
	printf "alloc_zoo churn %d (malloc/calloc/realloc/free heavy), median of %d runs\n\n", n, runs
	printf "%-40s %12s %10s\n", "", "elapsed ms", "slowdown"
	printf "%-40s %12.1f %9.2fx\n", "alone", base, 1
	printf "%-40s %12.1f %9.2fx\n", "memsight record -e malloc (stacks)", ms, ms / base
	printf "%-40s %12.1f %9.2fx\n", "perf record, same uprobes, no stacks", pf, pf / base
	if (bt > 0) printf "%-40s %12.1f %9.2fx\n", "bpftrace, ustack counts", bt, bt / base
	if (ht > 0) printf "%-40s %12.1f %9.2fx\n", "heaptrack", ht, ht / base
	printf "%-40s %12.1f %9.2fx\n", "sampler preloaded, nothing recording", lib, lib / base
	printf "%-40s %12.1f %9.2fx\n", "memsight --sample-bytes 512K (stacks)", ss, ss / base
	printf "\n%-40s %12s %12s\n", "", "memsight", "perf"
	printf "%-40s %12d %12d\n", "events", me, pe
	printf "%-40s %12d %12d\n", "file bytes", mb, pb
	printf "%-40s %12.1f %12.1f\n", "bytes per event", mb / me, pb / pe
	printf "%-40s %12d %12d\n", "lost", ml, pl
	printf "\nratios: slowdown memsight/perf %.2f (<= 1.10 wanted); bytes/event memsight/perf %.3f (<= 0.25 wanted)\n", \
		ms / pf, (mb / me) / (pb / pe)
}'

# A real program: Python building JSON strings (many small allocations).
py='import json
s = [json.dumps({"id": i, "name": "item%d" % i, "tags": ["a", "b", "c"], "v": [i] * 10}) for i in range(20000)]
print(len(s))'
wall() { /usr/bin/time -f %e -o w.time "$@" >/dev/null 2>&1; cat w.time; }
: >p0.t; : >p1.t; : >p2.t; : >p3.t
for i in $(seq "$RUNS"); do
	wall python3 -c "$py" >>p0.t
	wall "$b/memsight" record -q -e malloc --sample-bytes 512K -o py.trace -- python3 -c "$py" >>p1.t
	wall "$b/memsight" record -q -e malloc -o py.trace -- python3 -c "$py" >>p2.t
	command -v heaptrack >/dev/null && { wall heaptrack -o ht.data python3 -c "$py" >>p3.t; rm -f ht.data*; }
done
awk -v a=$(median <p0.t) -v s=$(median <p1.t) -v e=$(median <p2.t) -v h="$(median <p3.t)" 'BEGIN {
	printf "\npython3 building 20000 JSON strings, median wall of the whole run (start-up included)\n"
	printf "%-40s %8.2f s %9.2fx\n", "alone", a, 1
	printf "%-40s %8.2f s %9.2fx\n", "memsight --sample-bytes 512K", s, s / a
	printf "%-40s %8.2f s %9.2fx\n", "memsight -e malloc (every call)", e, e / a
	if (h > 0) printf "%-40s %8.2f s %9.2fx\n", "heaptrack", h, h / a }'
