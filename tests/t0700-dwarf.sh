#!/bin/sh
# --call-graph dwarf: programs built as most code is (optimised, no frame
# pointers) get the attribution their frame-pointer builds get; inlined
# functions are frames; both unwinders agree; broken inputs stop one stack,
# not the analysis.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES
N=$SAMPLES/nofp
# The weight of folded lines whose stack ends with $2 (a ;-separated tail).
weight_of() { awk -v tail="$2" '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s);
	if (substr(s, length(s) - length(tail) + 1) == tail) t += w } END { print t + 0 }' "$1"; }

test_expect_success 'fibonacci: the optimised build without frame pointers leaks to calloc <- fibonacci <- child, like the fp build' '
	"$MEMSIGHT" record -q -e malloc -g fp -o fp.trace -- "$S/fib_leak" 50 >truth &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o dw.trace -- "$N/fib_leak" 50 >truth.nofp &&
	test_cmp truth truth.nofp &&
	"$MEMSIGHT" folded -e malloc -w leaked fp.trace >fp.folded &&
	"$MEMSIGHT" folded -e malloc -w leaked dw.trace >dw.folded &&
	cat dw.folded &&
	test "$(weight_of fp.folded ";start_thread;child;fibonacci;calloc")" = 409600 &&
	test "$(weight_of dw.folded ";start_thread;child;fibonacci;calloc")" = 409600
'

test_expect_success 'dwarf,65528, perf'"'"'s largest dump: accepted, the same attribution' '
	"$MEMSIGHT" record -q -e malloc -g dwarf,65528 -o big.trace -- "$N/fib_leak" 50 >truth.big &&
	"$MEMSIGHT" folded -e malloc -w leaked big.trace >big.folded &&
	test "$(weight_of big.folded ";start_thread;child;fibonacci;calloc")" = 409600 &&
	test_must_fail "$MEMSIGHT" record -g dwarf,65536 -o no.trace -- true 2>err &&
	test_one_line err && grep "give a multiple of 8 from 64 to 65528" err
'

test_expect_success 'the leak() loop: the same attribution with either build' '
	"$MEMSIGHT" record -q -e malloc -g fp -o fp.trace -- "$S/loop_leak" 1000 >truth &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o dw.trace -- "$N/loop_leak" 1000 >truth.nofp &&
	test_cmp truth truth.nofp &&
	"$MEMSIGHT" folded -e malloc -w leaked fp.trace >fp.folded &&
	"$MEMSIGHT" folded -e malloc -w leaked dw.trace >dw.folded &&
	cat dw.folded &&
	test "$(weight_of fp.folded ";main;someFunc;leak;malloc")" = 4000 &&
	test "$(weight_of dw.folded ";main;someFunc;leak;malloc")" = 4000
'

# A DWARF recording of a uprobe has no callchain (its kernel part is left
# out), only the stack dump: info says it has stacks all the same, on the
# entries, and not on returns and frees. The wrapper's two probe sites are
# one event, which takes stacks; through uprobes, the entries of the
# allocating functions are one event, their returns another, the frees a
# third.
test_expect_success 'info: the allocation entries of a DWARF recording have stacks; returns and frees none' '
	"$MEMSIGHT" info dw.trace >info &&
	cat info &&
	if [ "${MALLOC_VIA:-}" = uprobes ]; then
		grep "^  memsight_[0-9]*:allocs  *malloc  *[1-9][0-9]* samples  with stacks$" info &&
		grep "^  memsight_[0-9]*:allocs_ret  *malloc  *[1-9][0-9]* samples$" info &&
		grep "^  memsight_[0-9]*:frees  *malloc  *[0-9]* samples$" info
	else
		grep "^  memsight_[0-9]*:otel_memory  *malloc  *[1-9][0-9]* samples  with stacks$" info
	fi
'

test_expect_success 'inlined allocation helpers, two levels deep, are frames of their own under their caller (and gone with --no-inline)' '
	"$MEMSIGHT" record -q -e malloc -g dwarf -o inl.trace -- "$N/inline_alloc" 200 >truth &&
	grep "^inline_alloc: 200 allocations of 48 bytes from new_node inlined in push_front inlined in build_list, 9600 bytes leaked$" truth &&
	"$MEMSIGHT" leaks inl.trace >leaks &&
	cat leaks &&
	grep -A5 "^9600 bytes in 200 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		malloc$ALLOC_AT$SRCLINE" &&
	sed -n 4p stack | grep "^		new_node (inlined) \[inline_alloc\]$SRCLINE" &&
	sed -n 5p stack | grep "^		push_front (inlined) \[inline_alloc\]$SRCLINE" &&
	sed -n 6p stack | grep "^		build_list+0x[0-9a-f]* \[inline_alloc\]$SRCLINE" &&
	"$MEMSIGHT" leaks --lines inl.trace | grep "new_node (inlined) \[inline_alloc\] samples/inline_alloc.c:[0-9]*$" &&
	"$MEMSIGHT" leaks --no-inline inl.trace >plain &&
	! grep "new_node\|push_front" plain &&
	grep -A3 "^9600 bytes in 200 allocations from stack" plain | sed -n 4p | grep "^		build_list+0x"
'

test_expect_success 'XOR without frame pointers, brk+mmap+faults: the buffer mmap to read_in_chunks, chunk growth to process_chunk, nothing lost' '
	head -c 8388608 /dev/urandom >input &&
	"$MEMSIGHT" record -q -g dwarf -o xor.trace -- "$N/xor_encoder" input /dev/null >truth &&
	cat truth &&
	len=$(sed -n "s/^xor_encoder: read_in_chunks buffer mmap \([0-9]*\) bytes at .*/\1/p" truth) &&
	chunks=$(sed -n "s/^xor_encoder: process_chunk kept \([0-9]*\) chunks .*/\1/p" truth) &&
	test -n "$len" && test -n "$chunks" &&
	"$MEMSIGHT" info xor.trace >info &&
	grep "^lost: *0$" info &&
	grep "^call graph:  dwarf,8192$" info &&
	"$MEMSIGHT" report xor.trace >report 2>err &&
	cat err &&
	grep -A12 "^  $len bytes (.*) at 0x[0-9a-f]* rw-p anonymous" report >mapping &&
	grep "read_in_chunks" mapping &&
	"$MEMSIGHT" folded -e brk -w bytes xor.trace >brk.folded &&
	"$MEMSIGHT" folded -e faults xor.trace >faults.folded &&
	grow=$(awk "{ t += \$NF } END { print t }" brk.folded) &&
	mine=$(grep ";process_chunk;.*malloc" brk.folded | awk "{ t += \$NF } END { print t + 0 }") &&
	echo "heap growth $grow, through process_chunk and malloc $mine" &&
	test $((mine * 10)) -ge $((grow * 9)) &&
	pc=$(grep ";process_chunk" faults.folded | awk "{ t += \$NF } END { print t + 0 }") &&
	echo "faults under process_chunk: $pc of $chunks chunks" &&
	test $((pc * 10)) -ge $((chunks * 9))
'

# The vDSO has no file: the recorder embeds the kernel's image, which the
# first clock_gettime faults in (its data page) with a stack through it.
# Where in the vDSO the fault lands depends on the host's clock source: a
# frame there is named from the image's symbols where they cover it, or
# shown by its offset, and either way the stack goes on through it.
test_expect_success 'the vDSO travels in the trace: its frames are named or shown by offset, and unwound through by both unwinders' '
	grep "^  full .* \[vdso\]$" info &&
	for u in libdw libunwind; do
		"$MEMSIGHT" events --unwinder $u -e page-faults xor.trace >events.$u 2>/dev/null &&
		awk "BEGIN { RS = \"\" } /\\(\\[vdso\\]\\)/ { print; print \"\" }" events.$u >vdso.$u || return 1
	done &&
	test_cmp vdso.libdw vdso.libunwind &&
	awk "
		/ (page-faults|exceptions:page_fault_[a-z]+): .*addr / { check(); invdso = 0; bad = 0; tomain = 0; next }
		/^\t.* \(\[vdso\]\)\$/ { invdso = 1; if (\$2 !~ /^(__vdso_[a-z_]+|\[vdso\])\+0x[0-9a-f]+\$/) bad = 1; next }
		/^\t/ && invdso && / main\+0x/ { tomain = 1 }
		function check() { if (!invdso) return; n++; if (bad || !tomain) { print \"bad vDSO stack before line \" NR; fail = 1 } }
		END { check(); print n + 0, \"faults in the vDSO\"; exit fail }
	" vdso.libdw >vdso.count &&
	cat vdso.count &&
	if test "$(cut -d" " -f1 vdso.count)" = 0; then echo "# this kernel took no fault inside the vDSO"; fi
'

# The recorder stores scrubbed dumps packed (FORMAT.md, "Packed samples"):
# in the kernel's layout again they must give the very same stacks.
test_expect_success 'stack dumps are stored packed: a fraction of the bytes, the same stacks unpacked' '
	"$BUILD/test-tool" restack xor.trace unpacked.trace unpack >restack &&
	cat restack &&
	set -- $(sed -n "s/^rewrote \([0-9]*\) samples, DATA \([0-9]*\) bytes before, \([0-9]*\) after$/\1 \2 \3/p" restack) &&
	test "$1" -gt 1000 && test $(($2 * 4)) -lt "$3" &&
	"$MEMSIGHT" events xor.trace >packed.events 2>packed.err &&
	"$MEMSIGHT" events unpacked.trace >unpacked.events 2>unpacked.err &&
	test "$(wc -l <packed.events)" -gt 1000 &&
	test_cmp packed.events unpacked.events &&
	test_cmp packed.err unpacked.err
'

test_expect_success 'a stack dump cut short, registers missing: the stacks stop and are counted, the rest goes on' '
	"$MEMSIGHT" folded -e faults xor.trace >all.folded &&
	faults=$(awk "{ t += \$NF } END { print t }" all.folded) &&
	"$BUILD/test-tool" restack xor.trace cut.trace cut=256 &&
	for u in libdw libunwind; do
		"$MEMSIGHT" folded -e faults --unwinder $u cut.trace >cut.folded 2>err &&
		cat err &&
		test "$(awk "{ t += \$NF } END { print t }" cut.folded)" = "$faults" &&
		n=$(sed -n "s/^memsight [a-z]*: [0-9]* of [0-9]* user stacks stop short of main or a thread.s start ($u unwinder):.* \([0-9]*\) ran past the stack dump of 256 bytes[ ,].*/\1/p" err) &&
		test "$n" -gt $((faults / 2)) || return 1
	done &&
	"$BUILD/test-tool" restack xor.trace noregs.trace noregs &&
	"$MEMSIGHT" folded -e faults noregs.trace >noregs.folded 2>err &&
	cat err &&
	test "$(awk "{ t += \$NF } END { print t }" noregs.folded)" = "$faults" &&
	grep "^memsight [a-z]*: [1-9][0-9]* of [0-9]* user stacks stop short of main or a thread.s start (libdw unwinder): [1-9][0-9]* had no registers$" err
'

test_expect_success 'a packed stack dump that claims more words than its record holds: that sample is skipped and counted' '
	"$BUILD/test-tool" restack xor.trace bad.trace badpack >restack &&
	n=$(sed -n "s/^rewrote \([0-9]*\) samples.*/\1/p" restack) &&
	test "$n" -gt 1000 &&
	"$MEMSIGHT" report bad.trace >report 2>err &&
	cat err &&
	grep "^memsight report: warning: $n samples in .bad.trace. could not be decoded and were skipped$" err
'

# The XOR sample reads its input onto its stack, 4 KiB at a time, so every
# fault's stack dump holds input bytes: with --stack-dump raw the marker is
# in the trace (the check can fail), by default it is not.
test_expect_success 'stack dumps keep only what unwinding reads: input read onto the stack never reaches the trace' '
	yes memsight-secret-marker | head -c 1048576 >secret &&
	"$MEMSIGHT" record -q -g dwarf --stack-dump raw -o sec-raw.trace -- "$N/xor_encoder" secret /dev/null >/dev/null &&
	"$MEMSIGHT" record -q -g dwarf -o sec.trace -- "$N/xor_encoder" secret /dev/null >/dev/null &&
	"$BUILD/test-tool" grep sec-raw.trace memsight-secret-marker >raw.grep &&
	"$BUILD/test-tool" grep sec.trace memsight-secret-marker >ptr.grep &&
	cat raw.grep ptr.grep &&
	test "$(sed -n "s/^matches //p" raw.grep)" -gt 1000 &&
	grep "^matches 0$" ptr.grep &&
	"$MEMSIGHT" info sec-raw.trace | grep "^stack dumps: raw process memory, may hold secrets$" &&
	"$MEMSIGHT" info sec.trace | grep "^stack dumps: addresses of code and of the dump only, other words zeroed when recorded ([0-9.]*% of [0-9]* words kept)$"
'

# The same in a 32-bit process, whose stack is read as 4-byte words. A
# kernel built or booted without IA32 emulation refuses to run one at all
# (execve: ENOEXEC); the scrub's rule for 4-byte words still runs there,
# on made-up dumps, in the unit tests.
test_expect_success 'stack dumps of a 32-bit process keep no input either (make test-deps installs gcc-multilib)' '
	cc -m32 -O1 -g -fno-omit-frame-pointer -o xor32 "$TOP/samples/xor_encoder.c" &&
	if ! python3 -c "import os, sys; os.execv(sys.argv[1], sys.argv[1:])" ./xor32 2>exec.err >/dev/null &&
		grep -q "Exec format error" exec.err; then
		echo "# this kernel runs no 32-bit programs (no IA32 emulation): skipped"
		return 0
	fi &&
	yes memsight-secret-marker | head -c 1048576 >secret &&
	"$MEMSIGHT" record -q -g dwarf --stack-dump raw -o sec32-raw.trace -- ./xor32 secret /dev/null >/dev/null &&
	"$MEMSIGHT" record -q -g dwarf -o sec32.trace -- ./xor32 secret /dev/null >/dev/null &&
	"$BUILD/test-tool" grep sec32-raw.trace memsight-secret-marker >raw.grep &&
	"$BUILD/test-tool" grep sec32.trace memsight-secret-marker >ptr.grep &&
	cat raw.grep ptr.grep &&
	test "$(sed -n "s/^matches //p" raw.grep)" -gt 1000 &&
	grep "^matches 0$" ptr.grep &&
	test "$("$MEMSIGHT" info sec32.trace | sed -n "s/^samples: *//p")" -gt 100
'

# Allocation stacks are the same in every run, so raw and scrubbed dumps of
# two runs must unwind to the same frames and counts, posix_memalign (whose
# result the analyzer reads from the dump) included.
test_expect_success 'stacks from scrubbed dumps are exactly those from raw ones' '
	for p in "loop_leak 300" "alloc_zoo memalign 50"; do
		for m in raw pointers unwind; do
			"$MEMSIGHT" record -q -e malloc -g dwarf --stack-dump $m -o $m.trace -- $N/$p >/dev/null &&
			"$MEMSIGHT" folded -e malloc $m.trace | sed "s/^[^;]*;//" >$m.out &&
			"$MEMSIGHT" leaks $m.trace | grep -v "^#\|pid\|made" >>$m.out || return 1
		done &&
		cat pointers.out &&
		test "$(grep -c ";main;" pointers.out)" -ge 2 &&
		test_cmp raw.out pointers.out && test_cmp raw.out unwind.out || return 1
	done
'

test_expect_success 'an unknown --stack-dump mode is one line and a usage exit' '
	test_must_fail "$MEMSIGHT" record --stack-dump some -- true 2>err &&
	test_one_line err &&
	grep "unknown --stack-dump mode .some.: use unwind, pointers or raw" err
'

# Where a stack passes through code without unwind entries (a PLT slot, the
# vdso) each library has its own fallback, so the XOR recording, which has
# thousands of stacks, may differ in a handful of frames; none of the leak
# stacks may.
test_expect_success 'libdw and libunwind agree frame for frame' '
	for t in dw inl; do
		"$MEMSIGHT" leaks $t.trace >$t.libdw 2>/dev/null &&
		"$MEMSIGHT" leaks --unwinder libunwind $t.trace >$t.libunwind 2>/dev/null &&
		test_cmp $t.libdw $t.libunwind || return 1
	done &&
	"$MEMSIGHT" events xor.trace >xor.libdw 2>/dev/null &&
	"$MEMSIGHT" events --unwinder libunwind xor.trace >xor.libunwind 2>/dev/null &&
	frames=$(grep -c "	" xor.libdw) &&
	test "$frames" -gt 1000 &&
	{ diff xor.libdw xor.libunwind >xor.diff; true; } &&
	changed=$(grep -c "^[<>]" xor.diff || :) &&
	echo "frames differing in the XOR recording: $changed of $frames" &&
	test $((changed * 100)) -le "$frames"
'

# Code built without unwind tables has its CFI in .debug_frame only: in the
# object, or in a separate debug file once the object is stripped.
U=$SAMPLES/nounwind
test_expect_success 'code with only .debug_frame: both unwinders give the leak() loop its callers' '
	readelf -SW "$U/loop_leak" | grep -q " \.debug_frame " &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o df.trace -- "$U/loop_leak" 1000 >truth &&
	grep "^loop_leak: 1000 allocations of 4 bytes" truth &&
	for u in libdw libunwind; do
		"$MEMSIGHT" folded --unwinder $u -e malloc -w leaked df.trace >df.$u 2>err.$u &&
		cat df.$u err.$u &&
		test "$(weight_of df.$u ";_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;someFunc;leak;malloc")" = 4000 &&
		! grep "stop short" err.$u || return 1
	done &&
	"$MEMSIGHT" events df.trace >df.events.libdw 2>/dev/null &&
	"$MEMSIGHT" events --unwinder libunwind df.trace >df.events.libunwind 2>/dev/null &&
	test_cmp df.events.libdw df.events.libunwind
'

test_expect_success 'the .debug_frame in a separate debug file, found by build-id with --debug-dir, by both unwinders' '
	mkdir -p strip &&
	cp "$U/loop_leak" strip/loop_leak &&
	objcopy --only-keep-debug strip/loop_leak strip/loop_leak.debug &&
	strip --strip-debug strip/loop_leak &&
	! readelf -SW strip/loop_leak | grep " \.debug_frame " &&
	bid=$(readelf -n strip/loop_leak | sed -n "s/.*Build ID: //p") &&
	mkdir -p dbg/.build-id/$(echo $bid | cut -c1-2) &&
	mv strip/loop_leak.debug dbg/.build-id/$(echo $bid | cut -c1-2)/$(echo $bid | cut -c3-).debug &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o sdf.trace -- strip/loop_leak 1000 >truth &&
	for u in libdw libunwind; do
		"$MEMSIGHT" folded --unwinder $u -e malloc -w leaked sdf.trace >plain.$u 2>err.$u &&
		grep "user stacks stop short of main or a thread.s start ($u unwinder):.* met code without a usable unwind entry" err.$u &&
		test "$(weight_of plain.$u ";main;someFunc;leak;malloc")" = 0 &&
		"$MEMSIGHT" folded --debug-dir dbg --unwinder $u -e malloc -w leaked sdf.trace >dbg.$u 2>err.$u &&
		cat dbg.$u err.$u &&
		test "$(weight_of dbg.$u ";_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;someFunc;leak;malloc")" = 4000 &&
		! grep "stop short" err.$u || return 1
	done
'

# A separate debug file with compressed DWARF (as Debian ships them) is cut
# into the cache, uncompressed, and read from there on the next run: so
# the inlined frames are still named once the file itself is gone. A cut
# that is no ELF (a crash before it reached the disk) is made again, and
# a FIFO under its name neither blocks the analyzer nor stays.
test_expect_success 'a compressed debug file is read through its uncompressed cut in the cache' '
	mkdir -p zstrip &&
	cp "$N/inline_alloc" zstrip/inline_alloc &&
	objcopy --only-keep-debug --compress-debug-sections=zlib zstrip/inline_alloc zstrip/ia.debug &&
	readelf -SW zstrip/ia.debug | grep " \.debug_info .* C " &&
	strip --strip-debug zstrip/inline_alloc &&
	bid=$(readelf -n zstrip/inline_alloc | sed -n "s/.*Build ID: //p") &&
	mkdir -p zdbg/.build-id/$(echo $bid | cut -c1-2) &&
	mv zstrip/ia.debug zdbg/.build-id/$(echo $bid | cut -c1-2)/$(echo $bid | cut -c3-).debug &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o z.trace -- zstrip/inline_alloc 200 >truth &&
	"$MEMSIGHT" leaks --debug-dir zdbg z.trace >leaks.1 &&
	grep -A4 "^9600 bytes in 200 allocations from stack" leaks.1 | sed -n 4p | grep "^		new_node (inlined) \[inline_alloc\]$SRCLINE" &&
	test -s "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" &&
	! readelf -SW "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" | grep " \.debug_info .* C " &&
	: >"$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" &&
	"$MEMSIGHT" leaks --debug-dir zdbg z.trace >leaks.0 &&
	test_cmp leaks.1 leaks.0 &&
	test -s "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" &&
	rm "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" && mkfifo "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" &&
	timeout 60 "$MEMSIGHT" leaks --debug-dir zdbg z.trace >leaks.0 &&
	test_cmp leaks.1 leaks.0 &&
	test -f "$MEMSIGHT_CACHE_DIR/memsight-$bid.local.debugcut" &&
	rm -r zdbg &&
	"$MEMSIGHT" leaks z.trace >leaks.2 &&
	test_cmp leaks.1 leaks.2
'

# A full disk under the cache: the cut is not made, nothing half made is
# left, and the debug file itself names the frames.
if mkdir zfull && mount -t tmpfs -o size=4k tmpfs zfull 2>/dev/null; then
	test_expect_success 'a full cache disk: no cut, no stray file, the same names from the debug file' '
		mkdir -p zstrip2 &&
		cp "$N/inline_alloc" zstrip2/inline_alloc &&
		objcopy --only-keep-debug --compress-debug-sections=zlib zstrip2/inline_alloc zstrip2/ia.debug &&
		strip --strip-debug zstrip2/inline_alloc &&
		bid=$(readelf -n zstrip2/inline_alloc | sed -n "s/.*Build ID: //p") &&
		mkdir -p zdbg2/.build-id/$(echo $bid | cut -c1-2) &&
		mv zstrip2/ia.debug zdbg2/.build-id/$(echo $bid | cut -c1-2)/$(echo $bid | cut -c3-).debug &&
		"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o z2.trace -- zstrip2/inline_alloc 200 >truth &&
		"$MEMSIGHT" leaks --debug-dir zdbg2 z2.trace >leaks.want &&
		head -c 4096 /dev/zero >zfull/filler 2>/dev/null; df zfull &&
		MEMSIGHT_CACHE_DIR=$PWD/zfull "$MEMSIGHT" leaks --debug-dir zdbg2 z2.trace >leaks.full &&
		test_cmp leaks.want leaks.full &&
		grep -A4 "^9600 bytes in 200 allocations from stack" leaks.full | sed -n 4p | grep "new_node (inlined)" &&
		test "$(ls zfull)" = filler
	'
	umount zfull
else
	echo "# cannot mount a small tmpfs here: skipping the full cache disk test"
fi

test_expect_success 'a corrupt .debug_frame: its stacks stop and are counted by both unwinders, the analysis goes on' '
	mkdir -p dfbad &&
	cp "$U/loop_leak" dfbad/loop_leak &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o dfbad.trace -- dfbad/loop_leak 100 >truth &&
	off=$(readelf -SW dfbad/loop_leak | awk "\$2 == \".debug_frame\" { print \$5 }") &&
	size=$(readelf -SW dfbad/loop_leak | awk "\$2 == \".debug_frame\" { print \$6 }") &&
	test -n "$off" &&
	head -c $((0x$size)) /dev/zero | tr "\\000" "\\377" |
		dd of=dfbad/loop_leak bs=1 seek=$((0x$off)) conv=notrunc 2>/dev/null &&
	for u in libdw libunwind; do
		"$MEMSIGHT" leaks --unwinder $u dfbad.trace >leaks 2>err &&
		cat err &&
		grep "^400 bytes in 100 allocations from stack" leaks &&
		grep "^memsight [a-z]*: [0-9]* of [0-9]* user stacks stop short of main or a thread.s start ($u unwinder):.* met code without a usable unwind entry" err ||
			return 1
	done
'

test_expect_success 'an unknown unwinder is one line and a usage exit' '
	test_must_fail "$MEMSIGHT" leaks --unwinder frobnicate dw.trace 2>err &&
	test_one_line err &&
	grep "unknown unwinder .frobnicate.: use libdw (the default) or libunwind" err
'

test_expect_success 'an object whose .eh_frame is corrupt: its stacks stop and are counted, the analysis goes on' '
	mkdir -p bin &&
	cp "$N/loop_leak" bin/loop_leak &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o bad.trace -- bin/loop_leak 100 >truth &&
	off=$(readelf -SW bin/loop_leak | awk "\$2 == \".eh_frame\" { print \$5 }") &&
	size=$(readelf -SW bin/loop_leak | awk "\$2 == \".eh_frame\" { print \$6 }") &&
	test -n "$off" &&
	head -c $((0x$size)) /dev/zero | tr "\\000" "\\377" |
		dd of=bin/loop_leak bs=1 seek=$((0x$off)) conv=notrunc 2>/dev/null &&
	"$MEMSIGHT" leaks bad.trace >leaks 2>err &&
	cat err &&
	grep "^400 bytes in 100 allocations from stack" leaks &&
	grep "^memsight [a-z]*: [0-9]* of [0-9]* user stacks stop short of main or a thread.s start (libdw unwinder):.* met code without a usable unwind entry" err &&
	"$MEMSIGHT" leaks --unwinder libunwind bad.trace >leaks.lu 2>err.lu &&
	grep "^400 bytes in 100 allocations from stack" leaks.lu &&
	grep "user stacks stop short of main or a thread.s start (libunwind unwinder)" err.lu
'

test_expect_success 'an object that vanished: unwinding stops there, the rest goes on, the fix is named' '
	rm bin/loop_leak &&
	"$MEMSIGHT" leaks bad.trace >leaks 2>err &&
	cat err &&
	grep "^400 bytes in 100 allocations from stack" leaks &&
	grep "user stacks stop short of main or a thread.s start (libdw unwinder):.* reached an address outside every mapping, or an object not here" err &&
	grep "frames unnamed in .*bin/loop_leak.*: the file is not on this machine" err
'

# The libdw backend steps most stacks with rules cached per address and
# hands the rest to libdw; the check mode walks every fast stack with
# libdw as well.
test_expect_success 'stacks stepped with cached rules are exactly libdw'"'"'s own' '
	for t in dw inl xor; do
		MEMSIGHT_UNWIND_CHECK=1 "$MEMSIGHT" events $t.trace >$t.checked 2>$t.check &&
		"$MEMSIGHT" events $t.trace >$t.plain 2>/dev/null &&
		test_cmp $t.plain $t.checked &&
		grep "^memsight [a-z]*: unwinding check: 0 of [1-9][0-9]* stacks stepped with cached rules differ" $t.check ||
			return 1
	done
'

# Symbols are asked of libdwfl once per interval between the addresses
# where its choice can change; the check mode asks it for every address
# as well.
test_expect_success 'symbols named once per interval are exactly libdwfl'"'"'s own for every address' '
	for t in dw inl xor df; do
		MEMSIGHT_SYMBOL_CHECK=1 "$MEMSIGHT" events $t.trace >$t.symchecked 2>$t.symcheck &&
		"$MEMSIGHT" events $t.trace >$t.symplain 2>/dev/null &&
		test_cmp $t.symplain $t.symchecked &&
		grep "^memsight [a-z]*: symbol check: 0 of [1-9][0-9]* lookups differ from libdwfl.s own$" $t.symcheck ||
			return 1
	done
'

test_done
