#!/bin/sh
# tests/bench/bench-record.sh: memsight against perf on the XOR encoder with
# every page fault, brk and mmap recorded with frame-pointer stacks, in one
# run, side by side. Prints ratios; asserts nothing (machines are noisy).
#
#   workload slowdown   elapsed time the sample reports for itself, median of RUNS
#   bytes per event     trace or perf.data size / events recorded
#   lost events         as each tool reports them
#   analysis speed      memsight folded + flamegraph vs perf script on the same run
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
RUNS=${RUNS:-5}
MB=${MB:-64}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }

head -c $((MB << 20)) /dev/urandom >in.bin
xor=$b/samples/xor_encoder

elapsed() { sed -n 's/^xor_encoder: elapsed \([0-9.]*\) ms$/\1/p' "$1"; }
. "$top/tests/bench/bench-lib.sh"

: >base.t; : >ms.t; : >perf.t
for i in $(seq "$RUNS"); do
	"$xor" in.bin >/dev/null 2>e && elapsed e >>base.t
	"$b/memsight" record -q -g fp -o ms.trace -- "$xor" in.bin >/dev/null 2>e && elapsed e >>ms.t
	perf record -q -e syscalls:sys_enter_brk,syscalls:sys_enter_mmap,page-faults -c 1 -g -o perf.data \
		-- "$xor" in.bin >/dev/null 2>e && elapsed e >>perf.t
done
base=$(median <base.t); ms=$(median <ms.t); pf=$(median <perf.t)

"$b/memsight" record -g fp -o ms.trace -- "$xor" in.bin >/dev/null 2>ms.err
perf record -e syscalls:sys_enter_brk,syscalls:sys_enter_mmap,page-faults -c 1 -g -o perf.data \
	-- "$xor" in.bin >/dev/null 2>perf.err
count_outputs

t0=$(date +%s.%N)
"$b/memsight" folded ms.trace 2>/dev/null | "$b/memsight" flamegraph >ms.svg
t1=$(date +%s.%N)
perf script -i perf.data >perf.script 2>/dev/null
t2=$(date +%s.%N)

awk -v base="$base" -v ms="$ms" -v pf="$pf" -v mb="$ms_bytes" -v me="$ms_events" -v ml="$ms_lost" \
    -v pb="$pf_bytes" -v pe="$pf_events" -v pl="$pf_lost" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v runs="$RUNS" -v size="$MB" '
BEGIN {
	printf "XOR encoder, %d MiB input, faults+brk+mmap with fp stacks, median of %d runs\n\n", size, runs
	printf "%-34s %12s %12s %12s\n", "", "alone", "memsight", "perf record"
	printf "%-34s %12.1f %12.1f %12.1f\n", "workload elapsed (ms)", base, ms, pf
	printf "%-34s %12s %11.2fx %11.2fx\n", "slowdown", "", ms / base, pf / base
	printf "%-34s %12s %12d %12d\n", "events recorded", "", me, pe
	printf "%-34s %12s %12d %12d\n", "file bytes", "", mb, pb
	printf "%-34s %12s %12.1f %12.1f\n", "bytes per event", "", mb / me, pb / pe
	printf "%-34s %12s %12d %12d\n", "events lost", "", ml, pl
	printf "\n%-34s %12s %12.3f %12.3f\n", "analysis (s)", "", t1 - t0, t2 - t1
	printf "%-34s %12s %12s %12s\n", "", "", "folded+svg", "perf script"
	printf "\nratios: slowdown memsight/perf %.2f (<= 1 wanted); bytes/event memsight/perf %.3f (<= 0.5 wanted);\n", \
		(ms / base) / (pf / base), (mb / me) / (pb / pe)
	printf "        perf script / (memsight folded + flamegraph) %.1fx faster (>= 5 wanted)\n", (t2 - t1) / (t1 - t0)
}'
