#!/bin/sh
# tests/bench/bench-kmem.sh: memsight against perf record -a -g on the same
# system-wide kernel memory tracepoints (kmem, reclaim and page faults)
# during one fixed file-heavy workload (copying /usr/include through tar
# and deleting the copy, ROUNDS times), side by side. Prints ratios;
# asserts nothing (machines are noisy).
#
#   recorder CPU    user+system seconds of the recorder process itself
#   bytes           trace or perf.data size
#   events / lost   as each tool reports them
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
ROUNDS=${ROUNDS:-3}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"

TPS=kmem:kmalloc,kmem:kfree,kmem:kmem_cache_alloc,kmem:kmem_cache_free,kmem:mm_page_alloc,kmem:mm_page_free
TPS=$TPS,kmem:mm_page_free_batched,percpu:percpu_alloc_percpu,percpu:percpu_free_percpu
for e in direct_reclaim_begin direct_reclaim_end memcg_reclaim_begin memcg_reclaim_end kswapd_wake \
	kswapd_sleep wakeup_kswapd; do
	TPS=$TPS,vmscan:mm_vmscan_$e
done
TPS=$TPS,vmscan:mm_shrink_slab_start,vmscan:mm_shrink_slab_end,page-faults,major-faults

workload() {
	for i in $(seq "$ROUNDS"); do
		mkdir x && tar cf - /usr/include 2>/dev/null | tar xf - -C x && rm -rf x
	done
}

# cpu_of PID: user+system seconds the process has used so far.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# run_recorder NAME CMD...: start the recorder, run the workload, stop it
# with SIGINT; its CPU goes to NAME.cpu.
run_recorder() {
	name=$1
	shift
	"$@" 2>"$name.err" &
	pid=$!
	sleep 1
	workload
	# The helper behind the front door is the recorder: the newest child.
	rec=$(pgrep -n -P $pid 2>/dev/null || echo $pid)
	cpu_of "$rec" >"$name.cpu"
	kill -INT $rec
	wait $pid
}

t0=$(date +%s.%N); workload; t1=$(date +%s.%N)
run_recorder ms "$b/memsight" record -a -e kmem,reclaim,faults -d 3600 -o ms.trace
run_recorder pf perf record -a -g -c 1 -e "$TPS" -o perf.data
count_outputs
ms_cpu=$(cat ms.cpu); pf_cpu=$(cat pf.cpu)

awk -v base="$(awk -v a="$t0" -v b="$t1" "BEGIN { print b - a }")" -v mc="$ms_cpu" -v pc="$pf_cpu" -v mb="$ms_bytes" -v me="$ms_events" \
    -v ml="$ms_lost" -v pb="$pf_bytes" -v pe="$pf_events" -v pl="$pf_lost" -v rounds="$ROUNDS" '
BEGIN {
	printf "system-wide kmem + reclaim + faults, fp stacks, during %d tar copies of /usr/include (%.1f s alone)\n\n", rounds, base
	printf "%-30s %14s %14s\n", "", "memsight", "perf record"
	printf "%-30s %14.2f %14.2f\n", "recorder CPU (s)", mc, pc
	printf "%-30s %14d %14d\n", "events recorded", me, pe
	printf "%-30s %14d %14d\n", "file bytes", mb, pb
	printf "%-30s %14.1f %14.1f\n", "bytes per event", mb / (me ? me : 1), pb / (pe ? pe : 1)
	printf "%-30s %14d %14d\n", "events lost", ml, pl
	printf "\nratios: recorder CPU memsight/perf %.2f (<= 1 wanted); bytes memsight/perf %.3f (<= 0.5 wanted)\n",
		mc / (pc ? pc : 1), mb / (pb ? pb : 1)
}'
grep -h "LOST\|lost" ms.err pf.err | head -4
