#!/bin/sh
# tests/bench/bench-faults.sh: page faults through the exceptions
# tracepoints (the default where the kernel has them, with each fault's
# kind) against the page-faults software event (what a kernel without them
# gets: the recorder is pointed at a copy of tracefs that lacks them), on
# the XOR encoder built without frame pointers, -e faults, default call
# graph. Prints the workload's slowdown against running alone and the
# bytes per fault of each, medians of RUNS; asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
RUNS=${RUNS:-8}
MB=${MB:-64}
. "$top/tests/bench/bench-lib.sh"
bench_workdir

tracefs=/sys/kernel/tracing
[ -d $tracefs/events ] || tracefs=/sys/kernel/debug/tracing
[ -d $tracefs/events/exceptions ] || { echo "this kernel has no exceptions tracepoints: nothing to compare"; exit 1; }
mkdir -p fakefs/events
cp $tracefs/events/header_page fakefs/events/

head -c $((MB << 20)) /dev/urandom >in.bin
xor=$b/samples/nofp/xor_encoder
elapsed() { sed -n 's/^xor_encoder: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }
: >alone.t; : >tp.t; : >sw.t; : >tp.bpf; : >sw.bpf
# bytes per fault sample of a trace
bpf() { "$b/memsight" info "$1" | awk -v b="$(stat -c %s "$1")" '$1 ~ /^(page-faults|exceptions:page_fault_(user|kernel))$/ { n += $3 } END { print b / n }'; }
for r in $(seq $RUNS); do
	"$xor" in.bin >/dev/null 2>e && elapsed e >>alone.t
	"$b/memsight" record -q -e faults -o tp.trace -- "$xor" in.bin >/dev/null 2>e && elapsed e >>tp.t && bpf tp.trace >>tp.bpf
	MEMSIGHT_TRACEFS=$w/fakefs "$b/memsight" record -q -e faults -o sw.trace -- "$xor" in.bin >/dev/null 2>e.sw &&
		elapsed e.sw >>sw.t && bpf sw.trace >>sw.bpf
done
a=$(median <alone.t)
echo "XOR encoder, $MB MiB, -e faults, $RUNS runs, medians:"
awk -v a="$a" -v tp="$(median <tp.t)" -v sw="$(median <sw.t)" -v tb="$(median <tp.bpf)" -v sb="$(median <sw.bpf)" 'BEGIN {
	printf "  alone                         %8.1f ms\n", a
	printf "  exceptions tracepoints        %8.1f ms  slowdown %.2f  %6.1f bytes/fault\n", tp, tp / a, tb
	printf "  page-faults software event    %8.1f ms  slowdown %.2f  %6.1f bytes/fault\n", sw, sw / a, sb
	printf "  tracepoints / software event: time %.2f, bytes %.2f\n", tp / sw, tb / sb }'
