#!/bin/sh
# Byte-sampled allocation profiling (--sample-bytes): the sampler library
# keeps one allocation in about N bytes and the analyzer weighs each by the
# inverse of its odds. A leak hidden in heavy churn comes out on top within
# 10% of the truth; at a rate of one byte every allocation is kept, so the
# estimates equal the exact truth for realloc, the aligned family, threads,
# fork and C++; -p uses the sampler a process runs with, and says when it
# has none; the sampler does not leak into what a program executes.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES
LIB=$BUILD/libmemsight-sample.so
[ -f "$LIB" ] || LIB=$TOP/build/libmemsight-sample.so
record() { "$MEMSIGHT" record -q -e malloc "$@"; }
# The estimated bytes of the stack whose frames include function F.
est_bytes() {
	awk -v f="$2" '/^~?[0-9]+ bytes in [0-9]+ allocations? from stack/ { b = $1; sub(/^~/, "", b) }
		$1 ~ "^" f "\\+0x" { print b; exit }' "$1"
}

# 64 MiB leaked in 4 KiB blocks at one sample in 64 KiB: about a thousand
# samples, so the estimate's standard deviation is about 3% and 10% is
# over three of them. (At the default 512 KiB, hundreds of MiB would be
# needed for that.) The churn's two threads keep both CPUs of a small
# machine busy: a recorder starved of CPU loses events, and the test is
# about the estimate of a complete recording, so it records again then.
test_expect_success 'a leak in heavy churn: the top stack is the leaking function, within 10%' '
	n=0 &&
	while :; do
		record --sample-bytes 64K -o cl.trace -- "$S/churn_leak" 64 256 2 >truth &&
		"$MEMSIGHT" info cl.trace >info &&
		grep -q "^lost: *0$" info && break
		n=$((n + 1)) && echo "attempt $n lost events: $(sed -n "s/^lost: *//p" info)" && test $n -lt 4 || exit 1
	done &&
	cat truth &&
	truth=$(sed -n "s/^churn_leak: leaked \([0-9]*\) bytes in .* from leak_slowly .*/\1/p" truth) &&
	"$MEMSIGHT" leaks cl.trace >leaks &&
	head -20 leaks &&
	grep "^# memsight leaks of .cl.trace.: .* (ESTIMATE)$" leaks &&
	grep "^# sampled recording (the sampler kept one allocation in about 64.0 KiB)" leaks &&
	sed -n "/^~[0-9]* bytes in/,/^$/p" leaks | sed -n 4p | grep "^		leak_slowly+0x" &&
	est=$(est_bytes leaks leak_slowly) &&
	echo "estimate $est of $truth" &&
	test $((est * 10)) -ge $((truth * 9)) && test $((est * 10)) -le $((truth * 11))
'

test_expect_success 'the estimate is labelled in JSON, folded and report' '
	"$MEMSIGHT" leaks --json cl.trace >l.json &&
	grep "\"estimate\":true,\"sample\":1,\"sample_bytes\":65536," l.json &&
	"$MEMSIGHT" folded -e malloc -w leaked cl.trace >f 2>err &&
	grep "weights are estimates" err &&
	grep -q ";leak_slowly;malloc [0-9]*$" f &&
	"$MEMSIGHT" report cl.trace >r &&
	grep "^(sampled recording: the sampler kept one allocation in about 64.0 KiB; figures are estimates)$" r
'

# One sample per byte: an allocation of n bytes is kept with odds
# 1 - exp(-n), every one in practice, and weighs about 1.
test_expect_success 'at one byte, realloc chains are exact' '
	record --sample-bytes 1 -o realloc.trace -- "$S/alloc_zoo" realloc 64 >truth &&
	"$MEMSIGHT" leaks realloc.trace >leaks &&
	cat leaks &&
	grep -A4 "^~65536 bytes in 64 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		realloc+0x[0-9a-f]* \[libmemsight-sample.so\]$SRCLINE" &&
	sed -n 4p stack | grep "^		grow_chain+0x" &&
	grep "from 1 stack (ESTIMATE)$" leaks
'

test_expect_success 'at one byte, posix_memalign and aligned_alloc are exact' '
	record --sample-bytes 1 -o align.trace -- "$S/alloc_zoo" memalign 20 >truth &&
	"$MEMSIGHT" leaks align.trace >leaks &&
	grep -A3 "^~20000 bytes in 20 allocations from stack" leaks | grep "^		posix_memalign+0x" &&
	grep -A4 "^~163840 bytes in 20 allocations from stack" leaks | grep "^		aligned_blocks+0x" &&
	grep "^# memsight leaks of .align.trace.: 183840 bytes in 40 allocations" leaks
'

# Exact pairing wants every report: --block, so that a recorder behind
# (the sanitized build's) makes the program wait rather than drop some.
test_expect_success 'at one byte, threads and churn: each kept block is freed where it was' '
	record --sample-bytes 1 --block -o threads.trace -- "$S/alloc_zoo" threads 4 250 >truth &&
	"$MEMSIGHT" leaks threads.trace >leaks &&
	grep -A4 "^~100000 bytes in 1000 allocations from stack" leaks | grep "^		thread_leak+0x" &&
	record --sample-bytes 1 --block -o churn.trace -- "$S/alloc_zoo" churn 2000 >truth &&
	"$MEMSIGHT" leaks --json churn.trace >leaks.json &&
	grep "\"leaked_bytes\":0," leaks.json
'

# The sampler keeps blocks in a small table, and in a big one those that
# find no room there: 10000 held at once at one byte overflow the small
# one, and every free finds its block in whichever holds it.
test_expect_success 'at one byte, 10000 blocks held at once: every one freed is found' '
	record --sample-bytes 1 --block -o peak.trace -- "$S/alloc_zoo" peak 10000 >truth &&
	grep "^alloc_zoo: peak 10000000 bytes in 10000 allocations held by first_hump" truth &&
	"$MEMSIGHT" leaks --json peak.trace >leaks.json &&
	grep "\"leaked_bytes\":0," leaks.json &&
	"$MEMSIGHT" info peak.trace | grep "^malloc wrapper: 30001 reports "
'

test_expect_success 'a forked child keeps sampling, under its own pid' '
	record --sample-bytes 1 -o fork.trace -- "$S/alloc_zoo" fork 30 >truth &&
	child=$(sed -n "s/.*from child_leak (pid \([0-9]*\))$/\1/p" truth) &&
	"$MEMSIGHT" leaks fork.trace >leaks &&
	grep "^~7680 bytes in 30 allocations from stack (pid $child alloc_zoo)$" leaks
'

test_expect_success 'C++: new and delete reach the sampler through malloc and free' '
	record --sample-bytes 1 -o cxx.trace -- "$S/cxx_leak" >truth &&
	cat truth &&
	"$MEMSIGHT" leaks cxx.trace >leaks &&
	grep "demo::Registry::add(int)" leaks &&
	grep "demo::Cache::remember(int)" leaks
'

test_expect_success 'what the program executes does not inherit the sampler' '
	LD_PRELOAD=$LIB "$S/churn_leak" 1 1 1 >truth &&
	grep "^churn_leak: a child shell sees LD_PRELOAD=\[\]$" truth &&
	LD_PRELOAD=$LIB MEMSIGHT_SAMPLE_INHERIT=1 "$S/churn_leak" 1 1 1 >truth &&
	grep "^churn_leak: a child shell sees LD_PRELOAD=\[$LIB\]$" truth
'

test_expect_success '-p on a process started with the sampler uses its probe points' '
	rm -f truth &&
	{ LD_PRELOAD=$LIB MEMSIGHT_SAMPLE_BYTES=65536 "$S/churn_leak" 64 128 1 2000 >truth & } &&
	pid=$! &&
	i=0 && while [ $i -lt 50 ] && ! grep -q "^churn_leak: pid" truth; do sleep 0.1; i=$((i + 1)); done &&
	"$MEMSIGHT" record -e malloc -p $pid -o p.trace 2>rec &&
	cat rec truth &&
	grep "malloc: the process runs with the allocation sampler (.*libmemsight-sample.so): recording its samples" rec &&
	truth=$(sed -n "s/^churn_leak: leaked \([0-9]*\) bytes in .* from leak_slowly .*/\1/p" truth) &&
	"$MEMSIGHT" leaks p.trace >leaks &&
	est=$(est_bytes leaks leak_slowly) &&
	echo "estimate $est of $truth" &&
	test $((est * 10)) -ge $((truth * 9)) && test $((est * 10)) -le $((truth * 11))
'

test_expect_success '-p --sample-bytes on a process without the sampler: every call, and it says so' '
	{ "$S/alloc_zoo" wait 2 40 >truth & } &&
	pid=$! &&
	sleep 0.5 &&
	"$MEMSIGHT" record -e malloc --sample-bytes 512K -p $pid -o w.trace 2>rec &&
	cat rec &&
	grep "malloc: the process was not started with the allocation sampler (LD_PRELOAD=libmemsight-sample.so): recording every call instead" rec &&
	"$MEMSIGHT" leaks w.trace >leaks &&
	grep "^2560 bytes in 40 allocations from stack" leaks
'

test_expect_alone 'bad input: --sample-bytes without malloc, with -a, with -s; one clear line each' '
	test_must_fail "$MEMSIGHT" record --sample-bytes 64K -e faults -o t.trace -- true 2>err &&
	test_one_line err && grep "sample-bytes samples allocations: record them, with -e malloc" err &&
	test_must_fail "$MEMSIGHT" record --sample-bytes 64K -e malloc -a -o t.trace 2>err &&
	test_one_line err && grep "not with -a" err &&
	test_must_fail "$MEMSIGHT" record --sample-bytes 64K -e malloc -s 10 -o t.trace -- true 2>err &&
	test_one_line err && grep "drop -s, -O, -z, -Z and --leak-check" err &&
	test_must_fail "$MEMSIGHT" record --sample-bytes lots -e malloc -o t.trace -- true 2>err &&
	test_one_line err && grep "invalid --sample-bytes .lots." err &&
	! test -e t.trace
'

test_done
