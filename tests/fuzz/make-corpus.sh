#!/bin/sh
# tests/fuzz/make-corpus.sh: remake the seed corpora in tests/fuzz/corpus (as
# root, after `make` and `make fuzz-targets`). Small recordings of the
# samples, stored uncompressed so mutations reach the records, one of them
# as a ring that wrapped; the chunks
# of the checked-in XOR trace; the objects a recording embeds; folded
# output. Each target's libFuzzer then keeps only the seeds that add
# coverage (-merge=1).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
M=$top/build/memsight
S=$top/build/samples
T=$top/build/test-tool
F=$top/build-fuzz
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p "$raw/trace" "$raw/chunk" "$raw/folded" "$raw/embedded" "$raw/objects"

rec() { "$M" record -q --embed none --compression none "$@" >/dev/null 2>&1; }
cp "$top/samples/traces/xor-8m.trace" "$raw/trace/xor-8m"
rec -e malloc --leak-check -g fp -o "$raw/trace/malloc-reach" -- "$S/alloc_zoo" reach 20
rec -e malloc -g fp -o "$raw/trace/malloc-nested" -- "$S/alloc_zoo" nested 30
rec -e malloc -g dwarf,512 -o "$raw/trace/malloc-dwarf" -- "$S/fib_leak" 3
# An allocator probed while recording: late event entries and META probes.
rec -e malloc --malloc-via uprobes -g fp -o "$raw/trace/malloc-late" -- \
	env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 "$S/loop_leak" 5 0 100
rec -e brk,mmap,faults -g fp -o "$raw/trace/faults" -- "$S/loop_leak" 2
rec -e faults -g fp -o "$raw/trace/fault-kinds" -- "$S/fault_kinds" 8
# Memory errors: a use after free, a double free the allocator aborts on.
rec -e malloc,faults,signals -g fp -o "$raw/trace/errors-uaf" -- "$S/mem_errors" uaf
rec -e malloc,faults,signals -g fp -o "$raw/trace/errors-doublefree" -- "$S/mem_errors" doublefree
"$M" record -q --embed none --compression zlib -e shm,rss -g fp -o "$raw/trace/shm" -- "$S/shm_cycle" >/dev/null 2>&1
# A ring that wrapped: three segments of 8 KiB.
rec -e faults -g fp -o "$raw/phases.trace" -- "$S/phases" 16 8 16
"$T" ringify "$raw/phases.trace" "$raw/trace/ring" 3 8192
# Busy: compressed, or it would be the biggest seed by far.
"$M" record -q --embed none -a -e kmem/50,reclaim,oom,compaction,migrate -g none -d 0.3 -o "$raw/trace/kmem" >/dev/null 2>&1

"$T" seeds "$top/samples/traces/xor-8m.trace" "$raw/chunk"

# Hostile traces, as tests/t0930-hostile-traces.sh makes them: a program's
# debug entry forged with another's compressed DWARF under the same
# build-id, and its other entries replaced by zeros.
bid=5e1ec7ab1e0ddba11c0ffee0ddf00dcafe5a5a5a
for f in real_function evil_function; do
	printf '#include <stdlib.h>\n#include <string.h>\n__attribute__((noinline)) void %s(long n)\n{ for (long i = 0; i < n; i++) memset(malloc(4096), 1, 4096); }\nint main(void) { %s(16); return 0; }\n' \
		$f $f >"$raw/$f.c"
	cc -O1 -g -fno-omit-frame-pointer -fno-inline -Wl,--build-id=0x$bid -o "$raw/$f" "$raw/$f.c"
done
objcopy --only-keep-debug --compress-debug-sections=zlib "$raw/evil_function" "$raw/forged.debug"
"$M" record -q --compression none --embed-max 96K -e faults -g fp -o "$raw/honest.trace" -- "$raw/real_function" >/dev/null 2>&1
"$T" reembed "$raw/honest.trace" "$raw/trace/forged-debug" 3 $bid "$raw/forged.debug" >/dev/null
head -c 65536 /dev/zero >"$raw/zeros"
"$T" reembed "$raw/honest.trace" "$raw/trace/zero-object" 1 $bid "$raw/zeros" >/dev/null
# Minimal and debug entries of a sample, ld.so and the vDSO; a sample in full.
"$M" record -q -e brk -g fp -o "$raw/inl.trace" -- "$S/inline_alloc" >/dev/null 2>&1
"$T" seeds "$raw/inl.trace" "$raw/objects"
for f in "$raw"/objects/object-*; do mv "$f" "$raw/embedded/inl-${f##*/}"; done
"$M" record -q -e brk -g fp --embed full -o "$raw/full.trace" -- "$S/xor_encoder" /dev/null >/dev/null 2>&1
"$T" seeds "$raw/full.trace" "$raw/objects"
cp "$raw/objects/object-0" "$raw/embedded/xor-full"

"$M" folded --debug-dir "$top/samples/traces/debug" "$top/samples/traces/xor-8m.trace" >"$raw/folded/xor"
"$M" folded -e malloc "$raw/trace/malloc-nested" >"$raw/folded/malloc"
printf 'main;a_[k];b_[i];c_[j] 10\nmain;\303\251t\303\251;f 2.5\n<&>;"q";'"'"'s 1e3\n;; 0\n# comment\nx 1\n' \
	>"$raw/folded/odd"

for t in trace chunk folded embedded; do
	rm -rf "$top/tests/fuzz/corpus/$t"
	mkdir -p "$top/tests/fuzz/corpus/$t"
	"$F/fuzz-$t" -merge=1 -close_fd_mask=3 "$top/tests/fuzz/corpus/$t" "$raw/$t" 2>&1 | grep 'MERGE-OUTER: [0-9]* new'
done
