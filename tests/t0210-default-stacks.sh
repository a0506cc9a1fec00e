#!/bin/sh
# No -g flag: the default call graph gives true user stacks through code
# built without frame pointers (Debian's libc and libstdc++, optimised
# builds), as the samples' own truth says.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

head -c $((32 << 20)) /dev/urandom >in.bin

# From a sample's truth and `memsight events -e page-faults`: the faults on
# the input buffer and how many of them have read_in_chunks in their stack,
# then the faults on the kept chunks and how many have process_chunk.
attribute() {
	buf=$(sed -n "s/^xor_encoder: read_in_chunks buffer [0-9]* bytes at \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\)$/\1 \2/p" "$1")
	chunks=$(sed -n "s/^xor_encoder: process_chunk chunks at \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\)$/\1 \2/p" "$1")
	set -- $buf $chunks "$2"
	awk -v blo=$(printf %d $1) -v bhi=$(printf %d $2) -v clo=$(printf %d $3) -v chi=$(printf %d $4) '
		function hex(s,  i, v) { v = 0; sub(/^0x/, "", s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
		function done() { if (kind == 1) { nb++; hb += hit } else if (kind == 2) { nc++; hc += hit }; kind = 0 }
		/ (page-faults|exceptions:page_fault_[a-z]+): .*addr / { done(); a = hex($(NF-2)); kind = a >= blo && a < bhi ? 1 : a >= clo && a < chi ? 2 : 0; hit = 0; next }
		/^\t/ && kind == 1 && /read_in_chunks/ { hit = 1 }
		/^\t/ && kind == 2 && /process_chunk/ { hit = 1 }
		END { done(); print nb + 0, hb + 0, nc + 0, hc + 0 }
	' "$5"
}

for build in samples samples/nofp; do
	# The test is about the stacks of a whole recording: one that lost
	# events on a busy machine (its rings overflowed) is made again.
	test_expect_success "XOR ($build) with no -g: input buffer faults under read_in_chunks, kept chunks under process_chunk" '
		n=0 &&
		while :; do
			"$MEMSIGHT" record -q -o xor.trace -- "$BUILD/$build/xor_encoder" in.bin >truth &&
			"$MEMSIGHT" info xor.trace >info &&
			grep -q "^lost: *0$" info && break
			n=$((n + 1)) && echo "attempt $n lost events: $(sed -n "s/^lost: *//p" info)" && test $n -lt 4 || return 1
		done &&
		cat truth &&
		grep "^call graph:  dwarf,8192$" info &&
		"$MEMSIGHT" events -e page-faults xor.trace >events 2>err &&
		cat err &&
		set -- $(attribute truth events) &&
		echo "input buffer: $2 of $1 faults under read_in_chunks; kept chunks: $4 of $3 under process_chunk" &&
		test "$1" -ge 8192 && test $(($2 * 10)) -ge $(($1 * 9)) &&
		test "$3" -ge 8192 && test $(($4 * 10)) -ge $(($3 * 8))
	'
done

test_expect_success 'C++ with no -g: the method that called operator new is in the leak stack' '
	"$MEMSIGHT" record -q -e malloc -o cxx.trace -- "$SAMPLES/cxx_leak" 30 >truth &&
	grep "^cxx_leak: leaked 960 bytes in 30 allocations from demo::Registry::add(int)$" truth &&
	"$MEMSIGHT" leaks cxx.trace >leaks &&
	cat leaks &&
	grep -A6 "^960 bytes in 30 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		malloc$ALLOC_AT$SRCLINE" &&
	sed -n 4p stack | grep "^		operator new(unsigned long)+0x[0-9a-f]* \[libstdc++.so.6[0-9.]*\]$SRCLINE" &&
	sed -n 5p stack | grep "^		demo::Registry::add(int)+0x[0-9a-f]* \[cxx_leak\] .*cxx_leak.cc:[0-9]*$" &&
	sed -n 6p stack | grep "^		main+0x[0-9a-f]* \[cxx_leak\] .*cxx_leak.cc:[0-9]*$"
'

test_expect_success '-g fp is still there, and says what it records' '
	"$MEMSIGHT" record -q -g fp -o fp.trace -- "$SAMPLES/cxx_leak" 3 >/dev/null &&
	"$MEMSIGHT" info fp.trace | grep "^call graph:  fp$" &&
	for args in "-g -- true" "-g true" "-g -e faults -- true" "--call-graph -- true"; do
		"$MEMSIGHT" record -q -o bare.trace $args &&
		"$MEMSIGHT" info bare.trace | grep "^call graph:  dwarf,8192$" || return 1
	done &&
	"$MEMSIGHT" record -q -e page-faults -o pf.trace -- true &&
	"$MEMSIGHT" info pf.trace | grep "^  exceptions:page_fault_user *faults " &&
	test_must_fail "$MEMSIGHT" record -q -o bad.trace -g dwraf -- true 2>err &&
	test_one_line err &&
	grep "unknown call-graph mode .dwraf.: use fp, dwarf\[,SIZE\] or none" err
'

# The kernel walks a frame-pointer chain at most kernel.perf_event_max_stack
# frames deep: a deeper one lost its outer callers, and the analyzer says so.
test_expect_success '-g fp: stacks deeper than the kernel walks are said to be cut, with the limit' '
	cat >deep.c <<-\EOF &&
	#include <stdlib.h>
	#include <string.h>
	__attribute__((noinline)) void down(int n, char *p)
	{
		if (n) {
			down(n - 1, p);
			__asm__ volatile("" ::: "memory");
			return;
		}
		memset(p, 1, 64 << 12);
	}
	int main(void) { char *p = malloc(64 << 12); down(300, p); return 0; }
	EOF
	cc -O1 -fno-omit-frame-pointer -o deep deep.c &&
	"$MEMSIGHT" record -q -g fp -e faults -o deep.trace -- ./deep &&
	max=$(cat /proc/sys/kernel/perf_event_max_stack) &&
	"$MEMSIGHT" folded deep.trace >deep.folded 2>err &&
	cat err &&
	# 300 frames are deeper than the kernel walks unless it was set
	# higher than that.
	if [ "$max" -lt 300 ]; then
		grep "^memsight [a-z]*: [1-9][0-9]* of [0-9]* frame-pointer stacks are $max frames deep, as deep as the recording kernel walks (kernel.perf_event_max_stack): their outermost callers are missing" err
	else
		! grep "frames deep" err
	fi &&
	"$MEMSIGHT" record -q -e faults -o deepdw.trace -- ./deep &&
	"$MEMSIGHT" folded deepdw.trace >/dev/null 2>err &&
	! grep "frames deep" err
'

test_done
