#!/bin/sh
# tests/bench/bench-box.sh: the box a production user records: a parallel
# build (make -j2 of memsight's own recorder and analyzer, from a copy of
# this tree: gcc, cc1, as, ld, make, sh, all Debian binaries built without
# frame pointers) recorded system-wide, every page fault, brk and mmap,
# with memsight in each stack mode beside perf record -a in its two. For
# each: the build's slowdown against running alone, the recorder's CPU
# and peak RSS, the bytes it wrote per second, the events it lost, and the
# share of the user stacks that reach main or a thread's start (the
# folded stacks hold __libc_start_call_main, start_thread or, for the
# dynamic loader's own work, _dl_start). Medians of ROUNDS runs, the modes
# taken in turn within each round. Asserts nothing (machines are noisy).
# A mode is a -g argument, with :HZ for a --deep-freq other than the
# default (dwarf,8192:0 is the default without deep-stacks samples).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-"fp dwarf,4096 dwarf,8192:0 dwarf,8192"}
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"
bench_workdir

bench_build_workload
perf_events=exceptions:page_fault_user,exceptions:page_fault_kernel,syscalls:sys_enter_brk,syscalls:sys_exit_brk
perf_events=$perf_events,syscalls:sys_enter_mmap,syscalls:sys_exit_mmap,syscalls:sys_enter_munmap,syscalls:sys_exit_munmap

# The recorder runs system-wide on its own; the build is timed apart, so
# the recorder's CPU and RSS are its own. Appends "secs cpu rss_kb" to
# $1.t and leaves the output in $1.out.
run() {
	name=$1
	shift
	/usr/bin/time -o rec.time -f "%U %S %M" "$@" >rec.log 2>&1 &
	rec=$!
	sleep 1
	s=$(date +%s.%N)
	./build.sh
	e=$(date +%s.%N)
	sleep 0.2
	kill -INT $(pgrep -P $rec) 2>/dev/null
	wait $rec
	tail -1 rec.time | awk -v s="$s" -v e="$e" '{ printf "%.3f %.2f %d\n", e - s, $1 + $2, $3 }' >>$name.t
}

: >alone.t
for r in $(seq $ROUNDS); do
	s=$(date +%s.%N); ./build.sh; e=$(date +%s.%N)
	echo "$s $e" | awk '{ printf "%.3f 0 0\n", $2 - $1 }' >>alone.t
	for m in $MODES; do
		case $m in
		*:*) run ms-$m "$b/memsight-record" -q -a -g ${m%%:*} --deep-freq ${m#*:} -o ms-$m.trace ;;
		*) run ms-$m "$b/memsight-record" -q -a -g $m -o ms-$m.trace ;;
		esac
		cp rec.log ms-$m.log
	done
	run pf-fp perf record -q -a -g -c 1 -e $perf_events -o pf-fp.data
	run pf-dwarf perf record -q -a --call-graph dwarf -c 1 -e $perf_events -o pf-dwarf.data
done

# The share of user stacks that reach main or a thread's start, of the
# page faults.
reach_ms() {
	"$b/memsight" folded --no-kernel -e faults "$1" 2>/dev/null | awk '
		{ n = $NF; if (index($0, ";") == 0) next; all += n }
		/;(__libc_start_call_main|start_thread|_dl_start);/ || /;(__libc_start_call_main|start_thread|_dl_start) [0-9]+$/ { ok += n }
		END { printf "%.1f", all ? 100 * ok / all : 0 }'
}
reach_pf() {
	perf script -i "$1" -F event,ip,sym,dso 2>/dev/null | awk '
		/^ *[a-z_]+:[a-z_]+:/ { if (ev) fin(); ev = /page_fault/; user = 0; ok = 0; next }
		NF == 0 { if (ev) fin(); ev = 0; next }
		ev && $0 !~ /kernel.kallsyms/ { user = 1; if ($2 ~ /^(__libc_start_call_main|start_thread|_dl_start)(\+0x[0-9a-f]+)?$/) ok = 1 }
		function fin() { if (user) { all++; good += ok } }
		END { if (ev) fin(); printf "%.1f", all ? 100 * good / all : 0 }'
}

a=$(cut -d" " -f1 alone.t | median)
echo "make -j2 of memsight's recorder and analyzer, recorded system-wide (faults, brk, mmap), $ROUNDS rounds, medians:"
printf "  %-40s %8s %8s %10s %8s %10s %10s %8s\n" mode build slowdown "rec cpu" "rec MB" "MB/s" lost "reach%"
printf "  %-40s %7.2fs\n" alone "$a"
for name in $(for m in $MODES; do echo ms-$m; done) pf-fp pf-dwarf; do
	t=$(cut -d" " -f1 $name.t | median) cpu=$(cut -d" " -f2 $name.t | median) kb=$(cut -d" " -f3 $name.t | median)
	case $name in
	ms-*) f=$name.trace
		# The records as stored, not the objects carried for elsewhere.
		bytes=$("$b/memsight" info $f | sed -n 's/^data: .* stored in \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p' |
			awk '{ print $1 * ($2 == "K" ? 1024 : $2 == "M" ? 1048576 : 1073741824) }')
		dur=$("$b/memsight" info $f | sed -n 's/^duration: *\([0-9.]*\) s.*/\1/p')
		lost=$("$b/memsight" info $f | sed -n 's/^lost: *\([0-9]*\).*/\1/p')
		reach=$(reach_ms $f)
		case $name in
		*:*) label="memsight -a -g ${name#ms-}"; label="${label%%:*} --deep-freq ${name#*:}" ;;
		*) label="memsight -a -g ${name#ms-}" ;;
		esac ;;
	pf-*) f=$name.data
		bytes=$(stat -c %s $f)
		dur=$t
		lost=$(perf_lost $f)
		reach=$(reach_pf $f)
		if [ $name = pf-fp ]; then label="perf -a -g"; else label="perf -a --call-graph dwarf"; fi ;;
	esac
	awk -v l="$label" -v t="$t" -v a="$a" -v cpu="$cpu" -v kb="$kb" -v bytes="$bytes" -v dur="$dur" -v lost="$lost" \
	    -v reach="$reach" 'BEGIN { printf "  %-40s %7.2fs %7.2fx %9.2fs %8.0f %10.1f %10s %7s%%\n", l, t, t / a, cpu, kb / 1024,
		(dur > 0 ? bytes / dur / 1048576 : 0), lost, reach }'
done
