#!/bin/sh
# tests/bench/bench-wholebox.sh: a whole box, not one process. A system-wide
# recording (-a) of brk, mmap and every page fault while a build-like
# workload runs many short-lived processes (gcc, cc1, as over the samples,
# ROUNDS times), with frame-pointer and with DWARF stacks; then the analyzer
# (memsight folded) beside perf script on perf record -a of the same
# workload. Prints samples per second and peak memory; asserts nothing
# (machines are noisy).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
ROUNDS=${ROUNDS:-10}
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"
bench_workdir

cat >work.sh <<WORK
for r in \$(seq $ROUNDS); do
	for f in "$top"/samples/*.c; do gcc -O1 -c -o /dev/null "\$f" || exit 1; done
done
WORK
events=syscalls:sys_enter_brk,syscalls:sys_exit_brk,syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,page-faults
procs=$(( $(ls "$top"/samples/*.c | wc -l) * ROUNDS * 4 ))
echo "workload: gcc -O1 -c over the samples, $ROUNDS rounds (about $procs processes); recorded system-wide"

for g in fp dwarf; do
	"$b/memsight" record -q -a -g $g -e brk,mmap,faults -o $g.trace -- sh work.sh
	"$b/memsight" info $g.trace >$g.info
	n=$(sed -n 's/^samples: *//p' $g.info)
	lost=$(sed -n 's/^lost: *\([0-9]*\).*/\1/p' $g.info)
	"$b/memsight" folded $g.trace >/dev/null 2>&1 # the objects' cache, as perf's ~/.debug
	set -- $(measure "$b/memsight" folded $g.trace)
	ms_s=$1 ms_kb=$2
	set -- $(MEMSIGHT_UNWIND_STATS=1 "$b/memsight" folded $g.trace 2>&1 >/dev/null |
		sed -n 's/^unwind: \([0-9]*\) address spaces, \([0-9]*\) objects opened, \([0-9]*\) spaces.*/\1 \2 \3/p') 0 0 0

	if [ $g = fp ]; then cg=-g; else cg="--call-graph dwarf"; fi
	perf record -q -a $cg -e $events -c 1 -o $g.data -- sh work.sh >/dev/null 2>&1
	pn=$(perf script -i $g.data -F event 2>/dev/null | wc -l)
	perf script -i $g.data >/dev/null 2>&1 # perf's build-id cache
	set -- $(measure perf script -i $g.data) "$@"
	pf_s=$1 pf_kb=$2
	shift 2
	awk -v g=$g -v n="$n" -v lost="$lost" -v mb=$(($(stat -c %s $g.trace) >> 20)) -v s="$ms_s" -v kb="$ms_kb" \
	    -v sp="$1" -v ob="$2" -v wh="$3" -v pn="$pn" -v pmb=$(($(stat -c %s $g.data) >> 20)) -v ps="$pf_s" -v pkb="$pf_kb" 'BEGIN {
		printf "%s: memsight %d samples (%d lost, %d MB): folded %.2f s, %.0f samples/s, peak %.0f MB; " \
		       "%d address spaces, %d objects opened, %d spaces unwound by libdw whole\n", g, n, lost, mb, s, n / s, kb / 1024, sp, ob, wh
		printf "%s: perf record -a %d samples (%d MB): perf script %.2f s, %.0f samples/s, peak %.0f MB\n",
		       g, pn, pmb, ps, pn / ps, pkb / 1024
		printf "%s: samples/s memsight / perf script: %.1f\n", g, (n / s) / (pn / ps) }'
	rm -f $g.data
done
