#!/bin/sh
# Recording the XOR encoder sample on a 64 MiB input, frame-pointer stacks:
# the analyzer must report what the sample says it did.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

XOR=$SAMPLES/xor_encoder
head -c $((64 << 20)) /dev/urandom >in.bin

test_expect_success 'record the sample: no event lost' '
	"$MEMSIGHT" record -g fp -o xor.trace -- "$XOR" in.bin >truth 2>rec.err &&
	cat truth rec.err &&
	grep "0 events lost" rec.err &&
	"$MEMSIGHT" info xor.trace >info &&
	grep -x "lost:        0" info
'

test_expect_success 'the trace file is private to its owner (mode 0600)' '
	test "$(stat -c %a xor.trace)" = 600
'

test_expect_success 'fault samples agree with the faults the kernel counted (within 1%)' '
	truth=$(sed -n "s/^xor_encoder: page faults \([0-9]*\) .*/\1/p" truth) &&
	got=$(awk "\$1 ~ /^(page-faults|exceptions:page_fault_(user|kernel))\$/ { s += \$3 } END { print s }" info) &&
	echo "sample counted $truth, trace has $got" &&
	test "$truth" -gt 16384 &&
	diff=$((truth > got ? truth - got : got - truth)) &&
	test $((diff * 100)) -le "$truth"
'

test_expect_success 'the faults of the input buffer are all in read_in_chunks' '
	range=$(sed -n "s/^xor_encoder: read_in_chunks buffer [0-9]* bytes at \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\)$/\1 \2/p" truth) &&
	set -- $range && lo=$(printf %d $1) && hi=$(printf %d $2) &&
	"$MEMSIGHT" events -e page-faults xor.trace >events &&
	awk -v lo=$lo -v hi=$hi "
		function hex(s,  i, v) { v = 0; sub(/^0x/, \"\", s); for (i = 1; i <= length(s); i++) v = v * 16 + index(\"0123456789abcdef\", substr(s, i, 1)) - 1; return v }
		/ (page-faults|exceptions:page_fault_[a-z]+): .*addr / { a = hex(\$(NF-2)); inbuf = a >= lo && a < hi; n += inbuf; hit = 0; next }
		/^\t/ && inbuf && /read_in_chunks/ { hit = 1 }
		/^$/ { if (inbuf) { named += hit }; inbuf = 0 }
		END { print n, named; if (n < 16383 || named != n) exit 1 }
	" events
'

test_expect_success 'report shows the mmap of that buffer with its exact size' '
	line=$(grep "^xor_encoder: read_in_chunks buffer mmap" truth) &&
	size=$(echo "$line" | sed "s/.*mmap \([0-9]*\) bytes at \(0x[0-9a-f]*\)/\1/") &&
	addr=$(echo "$line" | sed "s/.*mmap \([0-9]*\) bytes at \(0x[0-9a-f]*\)/\2/") &&
	"$MEMSIGHT" report xor.trace >report &&
	grep "^  $size bytes (64.0 MiB) at $addr rw-p anonymous" report
'

test_expect_success 'report: faults of read_in_chunks top the stacks, heap grew by the kept chunks' '
	sed -n "/^top stacks by faults:/,/^$/p" report >top &&
	sed -n 2,3p top | grep "read_in_chunks+0x" &&
	growth=$(awk "/== brk: heap growth ==/ { on = 1 } on && \$2 == \"xor_encoder\" { print \$4; exit }" report) &&
	echo "heap growth $growth" &&
	test "$growth" -ge $((64 << 20))
'

test_expect_success 'folded fault stacks add up to the fault samples' '
	"$MEMSIGHT" folded -e faults xor.trace >folded &&
	sum=$(awk "{ s += \$NF } END { print s }" folded) &&
	got=$(awk "\$1 ~ /^(page-faults|exceptions:page_fault_(user|kernel))\$/ { s += \$3 } END { print s }" info) &&
	test "$sum" = "$got" &&
	grep "^xor_encoder;.*main;read_in_chunks [0-9]*$" folded
'

test_expect_success 'folded brk bytes add up to the heap growth' '
	"$MEMSIGHT" folded -e brk -w bytes xor.trace >brk &&
	sum=$(awk "{ s += \$NF } END { print s }" brk) &&
	growth=$(awk "/== brk: heap growth ==/ { on = 1 } on && \$2 == \"xor_encoder\" { print \$4; exit }" report) &&
	test "$sum" = "$growth"
'

test_expect_success 'events decode a syscall exit and the arguments its registers carry' '
	"$MEMSIGHT" events -G -e syscalls:sys_exit_mmap xor.trace >mm &&
	grep "sys_exit_mmap: 0x[0-9a-f]* (addr: 0x00000000, len: 0x04001000, prot: 0x00000003, flags: 0x00000022, " mm &&
	"$MEMSIGHT" events --json -G -e syscalls:sys_exit_mmap xor.trace >mm.json &&
	grep "\"args\":{\"addr\":0,\"len\":67112960,\"prot\":3,\"flags\":34," mm.json
'

# faults/10: one fault in ten is recorded, and every view counts each for
# ten, and says its figures are estimates.
test_expect_success 'faults/10: faults, folded and flamegraph scale by 10 and say they estimate' '
	"$MEMSIGHT" record -q -e faults/10 -o f10.trace -- "$XOR" in.bin >truth10 &&
	truth=$(sed -n "s/^xor_encoder: page faults \([0-9]*\) .*/\1/p" truth10) &&
	"$MEMSIGHT" faults f10.trace >f10 &&
	head -3 f10 &&
	grep "^# ESTIMATE: one fault in 10 was recorded (-e faults/10); each counts for 10$" f10 &&
	got=$(sed -n "s/^# memsight faults of .f10.trace.: \([0-9]*\) page faults.*/\1/p" f10) &&
	echo "sample counted $truth, faults estimates $got" &&
	diff=$((truth > got ? truth - got : got - truth)) &&
	test $((diff * 20)) -le "$truth" &&
	"$MEMSIGHT" faults --json f10.trace | grep "\"estimate\":true,\"period\":10,\"faults\":$got," &&
	"$MEMSIGHT" folded f10.trace >f10.folded 2>err &&
	grep "one event in 10 kept): weights are estimates, scaled by 10" err &&
	test "$(awk "{ s += \$NF } END { print s }" f10.folded)" = "$got" &&
	"$MEMSIGHT" flamegraph -o f10.svg f10.trace 2>/dev/null &&
	grep -q "ESTIMATE: a sampled recording" f10.svg &&
	"$MEMSIGHT" folded f10.trace 2>/dev/null | "$MEMSIGHT" flamegraph >f10p.svg &&
	grep -q "ESTIMATE: a sampled recording" f10p.svg &&
	"$MEMSIGHT" report f10.trace >r10 2>/dev/null &&
	sed -n "/^== faults/,/^by kind/p" r10 >r10.faults &&
	cat r10.faults &&
	grep "^ESTIMATE: one fault in 10 was recorded (-e faults/10); each counts for 10$" r10.faults &&
	grep "^ *[0-9]* xor_encoder  *$got  *[0-9]" r10.faults &&
	test "$(sed -n "/^top stacks by faults:/,/^$/s/^  \([0-9]*\) faults from stack.*/\1/p" r10 | head -1)" -ge 10 &&
	"$MEMSIGHT" faults xor.trace >f1 &&
	! grep ESTIMATE f1 &&
	"$MEMSIGHT" report xor.trace >r1 2>/dev/null &&
	! grep ESTIMATE r1
'

# brk/2: calls count twice; the growth, measured from break to break,
# holds the calls not recorded already.
test_expect_success 'brk/2: brk counts each call twice and the growth once, and says it estimates' '
	"$MEMSIGHT" record -q -e brk/2 -o b2.trace -- "$XOR" in.bin >/dev/null &&
	"$MEMSIGHT" brk --json xor.trace >b1.json &&
	"$MEMSIGHT" brk --json b2.trace >b2.json &&
	"$MEMSIGHT" brk b2.trace | grep "^# ESTIMATE: one brk call in 2 was recorded (-e brk/2); each counts for 2$" &&
	grep "\"estimate\":true,\"period\":2," b2.json &&
	g1=$(sed -n "s/.*\"grow_bytes\":\([0-9]*\).*/\1/p" b1.json) &&
	g2=$(sed -n "s/.*\"grow_bytes\":\([0-9]*\).*/\1/p" b2.json) &&
	c1=$(sed -n "s/.*\"brk_calls\":\([0-9]*\).*/\1/p" b1.json) &&
	c2=$(sed -n "s/.*\"brk_calls\":\([0-9]*\).*/\1/p" b2.json) &&
	echo "grew $g1 in $c1 calls; sampled: $g2 in $c2" &&
	d=$((g1 > g2 ? g1 - g2 : g2 - g1)) && test $((d * 20)) -le $g1 &&
	d=$((c1 > c2 ? c1 - c2 : c2 - c1)) && test $((d * 10)) -le $c1 &&
	test "$("$MEMSIGHT" folded -e brk -w bytes b2.trace 2>/dev/null | awk "{ s += \$NF } END { print s }")" = "$g2"
'

# perf record says what it did as it goes; memsight's -p and -a say it on
# one status line at a terminal, redrawn, and erased before the summary.
test_expect_success 'at a terminal, -p says how the recording goes on one line; not on a pipe, nor under -q' '
	{ sleep 30 & } && pid=$! &&
	script -qec "\"$MEMSIGHT\" record -e faults -p $pid -d 2 -o st.trace" /dev/null >tty.out &&
	cat -v tty.out &&
	grep -a "memsight record: recording [0-9]* s: [0-9]* records, [0-9.]* MiB written, 0 lost" tty.out &&
	script -qec "\"$MEMSIGHT\" record -q -e faults -p $pid -d 2 -o st.trace" /dev/null >q.out &&
	! grep -a "recording [0-9]* s:" q.out &&
	"$MEMSIGHT" record -e faults -p $pid -d 2 -o st.trace 2>pipe.err &&
	kill $pid &&
	! grep "recording [0-9]* s:" pipe.err
'

test_done
