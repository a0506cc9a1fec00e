#!/bin/sh
# tests/bench/bench-flight.sh: the flight recorder left running. A busy,
# build-like workload (gcc over the samples, ROUNDS times: many short
# processes) runs alone, then under the documented always-on recording (-a,
# faults, brk, mmap, oom, reclaim, rss and signals into a 256 MiB ring,
# with triggers, one snapshot taken by SIGUSR1 near the end), the same
# without the signals group and --trigger crash, then under
# perf record --overwrite (perf's flight-recorder mode) of the same events
# with a ring of the same size in memory. Prints the workload's slowdown and
# each recorder's CPU time and peak memory; asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
ROUNDS=${ROUNDS:-60}
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"
bench_workdir
ms= pf=
# Never leave a recorder running behind a failed run.
trap 'kill -INT $ms $pf 2>/dev/null; rm -rf "$w"' EXIT

cat >work.sh <<WORK
for r in \$(seq $ROUNDS); do
	for f in "$top"/samples/*.c; do gcc -O1 -c -o /dev/null "\$f" || exit 1; done
done
WORK
ncpu=$(nproc)
events=syscalls:sys_enter_brk,syscalls:sys_exit_brk,syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,syscalls:sys_enter_munmap,syscalls:sys_exit_munmap
events=$events,exceptions:page_fault_user,exceptions:page_fault_kernel,oom:mark_victim,kmem:rss_stat
events=$events,vmscan:mm_vmscan_direct_reclaim_begin,vmscan:mm_vmscan_direct_reclaim_end

wall() { /usr/bin/time -f %e -o w.time sh work.sh >/dev/null 2>&1; cat w.time; }
# "cpu_s peak_rss_kb" of a process still running.
usage() {
	awk -v hz=$(getconf CLK_TCK) '{ print ($14 + $15) / hz }' /proc/$1/stat | tr '\n' ' '
	sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$1/status
}

alone=$(wall)
echo "workload: gcc -O1 -c over the samples, $ROUNDS rounds, alone: ${alone} s"

# One always-on recording: "wall cpu_s peak_kb lost ring_bytes snapshot"
# into $1.res, with the groups $2 and the triggers after them.
ms_run() {
	name=$1 groups=$2
	shift 2
	rm -f ring.trace ring.*.trace
	"$b/memsight" record -q -a -e $groups --ring 256M "$@" --trigger signal --after 1 -o ring.trace 2>$name.err &
	ms=$!
	sleep 1
	mw=$(wall)
	grep -q VmHWM /proc/$ms/status 2>/dev/null || { echo "the recorder ended early:"; cat $name.err; exit 1; }
	kill -USR1 $ms
	sleep 3
	set -- $(usage $ms)
	kill -INT $ms
	wait $ms
	ms=
	"$b/memsight" info ring.trace >$name.info
	snap=$(ls ring.*.signal.trace 2>/dev/null | head -1)
	echo "$mw $1 $2 $(sed -n 's/^lost: *\([0-9]*\).*/\1/p' $name.info) $(stat -c %s ring.trace)" \
		"$([ -n "$snap" ] && stat -c %s "$snap" || echo 0)" >$name.res
}

ms_run ms faults,brk,mmap,oom,reclaim,rss,signals --trigger oom --trigger crash --trigger 'psi:some>20'
read ms_wall ms_cpu ms_kb ms_lost ring_bytes snap_bytes <ms.res
# The same without the signals of memory errors: what the group costs.
ms_run nosig faults,brk,mmap,oom,reclaim,rss --trigger oom --trigger 'psi:some>20'
read sig_wall sig_cpu sig_kb sig_lost x x <nosig.res

perf record -q -a -g --overwrite -m $((256 / ncpu))M -e $events -c 1 \
	-e signal:signal_deliver --filter "sig == 4 || sig == 5 || sig == 6 || sig == 7 || sig == 8 || sig == 11" \
	-o perf.data 2>pf.err &
pf=$!
sleep 1
pf_wall=$(wall)
set -- $(usage $pf)
pf_cpu=$1 pf_kb=$2
kill -INT $pf
wait $pf

awk -v a="$alone" -v mw="$ms_wall" -v mc="$ms_cpu" -v mk="$ms_kb" -v ml="$ms_lost" \
    -v ring="$ring_bytes" -v sb="$snap_bytes" -v snap=$([ "$snap_bytes" != 0 ] && echo 1 || echo 0) \
    -v sw="$sig_wall" -v sc="$sig_cpu" -v sk="$sig_kb" -v sl="$sig_lost" \
    -v pw="$pf_wall" -v pc="$pf_cpu" -v pk="$pf_kb" -v pb=$(stat -c %s perf.data) 'BEGIN {
	printf "memsight --ring 256M: workload %.2f s (%.3fx alone), recorder CPU %.2f s (%.1f%% of the run), peak RSS %.0f MB, " \
	       "%d lost, ring file %.0f MB, snapshot %s %.1f MB\n", mw, mw / a, mc, 100 * mc / mw, mk / 1024, ml, ring / 1048576, snap ? "saved," : "MISSING,", sb / 1048576
	printf "perf record --overwrite (256 MB of rings): workload %.2f s (%.3fx alone), recorder CPU %.2f s (%.1f%% of the run), peak RSS %.0f MB, " \
	       "perf.data %.0f MB\n", pw, pw / a, pc, 100 * pc / pw, pk / 1024, pb / 1048576
	printf "the same without signals and --trigger crash: workload %.2f s (%.3fx alone), recorder CPU %.2f s, " \
	       "peak RSS %.0f MB, %d lost\n", sw, sw / a, sc, sk / 1024, sl
	printf "slowdown memsight / perf: %.3f; recorder CPU memsight / perf: %.2f; with signals / without: workload %.3f, " \
	       "recorder CPU %.2f\n", (mw / a) / (pw / a), mc / pc, mw / sw, mc / sc }'
