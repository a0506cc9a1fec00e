#!/bin/sh
# The malloc family, every call: every sample's printed truth, exactly (through the
# wrapper; t0601 runs the same through uprobes).
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES
record() { "$MEMSIGHT" record -q -e malloc "$@"; }
truth_bytes() { sed -n "s/.*leaked \([0-9]*\) bytes in \([0-9]*\) allocations from $2 .*/\1/p" "$1"; }
truth_count() { sed -n "s/.*leaked \([0-9]*\) bytes in \([0-9]*\) allocations from $2 .*/\2/p" "$1"; }

test_expect_success 'fibonacci: exactly N*8192 bytes in N allocations, calloc <- fibonacci <- child, nothing else' '
	record -o fib.trace -- "$S/fib_leak" 50 >truth &&
	"$MEMSIGHT" leaks fib.trace >leaks &&
	cat leaks &&
	grep "^# memsight leaks of .fib.trace.: 409600 bytes in 50 allocations outstanding from 1 stack$" leaks &&
	grep -A5 "^409600 bytes in 50 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		calloc$ALLOC_AT$SRCLINE" &&
	sed -n 4p stack | grep "^		fibonacci+0x[0-9a-f]* \[fib_leak\] .*fib_leak.c:[0-9]*$" &&
	sed -n 5p stack | grep "^		child+0x[0-9a-f]* \[fib_leak\] .*fib_leak.c:[0-9]*$" &&
	grep "^# suppressed: " leaks
'

# The wrapper writes each report into a ring it maps in the process: the
# first write to each of its pages is a page fault the program did not
# ask for. Those faults are left out of every view, and counted apart.
# (Through uprobes there is no wrapper, and no ring.)
[ "$WRAPPED" = 1 ] && test_expect_success 'the wrapper'"'"'s own page faults (its report rings) are no fault of the program'"'"'s' '
	"$MEMSIGHT" record -q -e malloc,faults -o own.trace -- "$S/loop_leak" 1000 >truth &&
	"$MEMSIGHT" faults --json own.trace 2>err >own.json && cat err &&
	grep "^memsight faults: [1-9][0-9]* page faults of memsight.s wrapper writing its own report buffers in .own.trace. are left out" err &&
	! grep "memsight-stream" own.json &&
	"$MEMSIGHT" folded -e faults own.trace 2>/dev/null >own.folded &&
	! grep "dump_pack" own.folded && grep ";leak;malloc" own.folded &&
	"$MEMSIGHT" report --json own.trace 2>/dev/null | perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
		my \$n = 0; \$n += \$_->{faults} for @{\$d->{faults}{processes}}; my \$t = 0; \$t += \$_ for @{\$d->{timeline}{faults}};
		die qq{\$n faults, \$t over time\n} unless \$n == \$t && \$n > 0;
		die qq{a ring in the mappings\n} if grep { \$_->{name} =~ /memsight-stream/ } @{\$d->{faults}{mappings}}" &&
	"$MEMSIGHT" record -q -e faults -o plain.trace -- "$S/loop_leak" 1000 >/dev/null &&
	"$MEMSIGHT" faults plain.trace 2>err >/dev/null && ! grep "report buffers" err
'

test_expect_success 'the leak() loop: iterations*4 bytes from leak()' '
	record -o loop.trace -- "$S/loop_leak" 1000 >truth &&
	"$MEMSIGHT" leaks loop.trace >leaks &&
	grep -A4 "^4000 bytes in 1000 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		malloc$ALLOC_AT$SRCLINE" &&
	sed -n 4p stack | grep "^		leak+0x" &&
	sed -n 5p stack | grep "^		someFunc+0x"
'

test_expect_success 'functions: what is held is leak()'"'"'s own, past the allocator; its callers hold it in total' '
	"$MEMSIGHT" functions loop.trace >fn 2>err &&
	cat fn &&
	grep "^# memsight functions of .loop.trace.: malloc, weight leaked, 4000 in all; [0-9]* functions$" fn &&
	sed -n 3p fn | grep "^ *4000 100.0% *4000 100.0%  leak \[loop_leak\]$" &&
	grep "^ *0   0.0% *4000 100.0%  someFunc \[loop_leak\]$" fn &&
	grep "^ *0   0.0% *4000 100.0%  main \[loop_leak\]$" fn &&
	grep "^ *0   0.0% *4000 100.0%  malloc " fn &&
	"$MEMSIGHT" functions -w count loop.trace >fn.count 2>/dev/null &&
	grep "^ *1000  *[0-9.]*% *1000  *[0-9.]*%  leak \[loop_leak\]$" fn.count
'

test_expect_success 'malloc/free churn that frees everything: zero bytes leaked' '
	record -o churn.trace -- "$S/alloc_zoo" churn 2000 >truth &&
	"$MEMSIGHT" leaks --json churn.trace >leaks.json &&
	cat leaks.json &&
	grep "\"leaked_bytes\":0," leaks.json &&
	grep "\"stacks\":\[\]" leaks.json &&
	grep "\"allocations\":[0-9]*[0-9]\{5\}," leaks.json
'

test_expect_success 'realloc chains: realloc(NULL) is malloc, each realloc frees the old block' '
	record -o realloc.trace -- "$S/alloc_zoo" realloc 64 >truth &&
	test "$(truth_bytes truth grow_chain)" = 65536 &&
	"$MEMSIGHT" leaks realloc.trace >leaks &&
	grep -A4 "^65536 bytes in 64 allocations from stack" leaks >stack &&
	sed -n 3p stack | grep "^		realloc$ALLOC_AT$SRCLINE" &&
	sed -n 4p stack | grep "^		grow_chain+0x" &&
	grep "from 1 stack$" leaks
'

test_expect_success 'posix_memalign and aligned_alloc' '
	record -o align.trace -- "$S/alloc_zoo" memalign 20 >truth &&
	"$MEMSIGHT" leaks align.trace >leaks &&
	grep -A3 "^20000 bytes in 20 allocations from stack" leaks | grep "^		posix_memalign$ALLOC_AT$SRCLINE" &&
	grep -A4 "^163840 bytes in 20 allocations from stack" leaks | grep "^		aligned_blocks+0x" &&
	grep "^# memsight leaks of .align.trace.: 183840 bytes in 40 allocations" leaks
'

test_expect_success 'threads: each thread pairs its own calls' '
	record -o threads.trace -- "$S/alloc_zoo" threads 4 250 >truth &&
	"$MEMSIGHT" leaks threads.trace >leaks &&
	grep -A4 "^100000 bytes in 1000 allocations from stack" leaks | grep "^		thread_leak+0x" &&
	grep "from 1 stack$" leaks
'

test_expect_success 'a forked child that leaks is reported under its own pid' '
	record -o fork.trace -- "$S/alloc_zoo" fork 30 >truth &&
	child=$(sed -n "s/.*from child_leak (pid \([0-9]*\))$/\1/p" truth) &&
	parent=$(sed -n "s/.*from parent (pid \([0-9]*\))$/\1/p" truth) &&
	"$MEMSIGHT" leaks fork.trace >leaks &&
	grep "^7680 bytes in 30 allocations from stack (pid $child alloc_zoo)$" leaks &&
	"$MEMSIGHT" leaks --pid $parent fork.trace >parent &&
	grep "^# memsight leaks of .fork.trace.: 0 bytes in 0 allocations" parent
'

test_expect_success 'a process already running (-p); it exits and the recording ends complete' '
	rm -f truth &&
	{ "$S/alloc_zoo" wait 6 300 >truth & } &&
	pid=$! &&
	while ! grep -q waiting truth; do sleep 0.05; done &&
	record -o p.trace -p $pid &&
	wait $pid &&
	"$MEMSIGHT" info p.trace | grep -x "status:      complete" &&
	"$MEMSIGHT" leaks p.trace >leaks &&
	grep -A4 "^19200 bytes in 300 allocations from stack (pid $pid alloc_zoo)$" leaks | grep "^		late_leak+0x"
'

# What a view shows of a recording of the malloc family alone: the bytes
# still held at the end, as leaks and pprof's inuse_space show them.
test_expect_success 'malloc alone: folded and flamegraph fold what is still held, and say so; --diff of two too' '
	record -o only.trace -- "$S/loop_leak" 100 >truth &&
	grep "^loop_leak: 100 allocations of 4 bytes from leak(), 400 bytes leaked$" truth &&
	"$MEMSIGHT" folded only.trace >f 2>err &&
	test "$(grep -c "has no page faults: folding its allocations by the bytes still held at the end (-e and -w choose)" err)" = 1 &&
	grep ";main;someFunc;leak;malloc 400$" f &&
	test "$(wc -l <f)" = 1 &&
	grep "left out 4096 bytes still held that leaks suppresses too (libc.s one-time allocations; --no-default-suppressions keeps them)" err &&
	"$MEMSIGHT" leaks only.trace | grep "^# suppressed: 4096 bytes in 1 allocation" &&
	"$MEMSIGHT" folded --no-default-suppressions only.trace >fall 2>/dev/null &&
	grep ";_IO_file_doallocate;malloc 4096$" fall &&
	"$MEMSIGHT" folded -w count only.trace >fc 2>/dev/null &&
	grep ";main;someFunc;leak;malloc 100$" fc &&
	"$MEMSIGHT" flamegraph -o only.svg only.trace 2>/dev/null &&
	grep -q "Outstanding Allocations (leaks)" only.svg &&
	grep -q "<title>leak (400 bytes" only.svg &&
	record -o only2.trace -- "$S/loop_leak" 300 >/dev/null &&
	"$MEMSIGHT" flamegraph --diff -o diff.svg only.trace only2.trace 2>/dev/null &&
	grep -q "<title>leak (1200 bytes, [0-9.]*%, +800 since the base)" diff.svg &&
	"$MEMSIGHT" record -q -e brk -o brk.trace -- true &&
	test_must_fail "$MEMSIGHT" folded brk.trace 2>err &&
	test_one_line err &&
	grep "recorded no page faults and no allocations: name the events to fold with -e" err
'

# Attached in the middle of calls: a call begun before the recording
# returns into it, and one under way as it stops has its entry without
# its return. Neither makes a block freed once look freed twice.
test_expect_success '-p of a process in the middle of its churn: no block freed once is taken as freed twice' '
	"$S/alloc_zoo" churn 20000000 >/dev/null &
	pid=$! &&
	sleep 0.3 &&
	for i in 1 2 3; do
		record -o churn$i.trace -p $pid -d 1 &&
		"$MEMSIGHT" leaks --json churn$i.trace >churn$i.json || { kill $pid; return 1; }
		grep -o "\"lost\":[0-9]*\|\"unmatched_frees\":[0-9]*,\"double_frees\":[0-9]*" churn$i.json | tr "\n" " " && echo
	done &&
	kill $pid && { wait $pid; :; } &&
	checked=0 &&
	for i in 1 2 3; do
		grep -q "\"lost\":0," churn$i.json || continue
		checked=$((checked + 1)) &&
		grep "\"double_frees\":0," churn$i.json || return 1
	done &&
	test $checked -gt 0
'

JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -e $JEMALLOC ]; then
	test_expect_success 'another allocator through -O: jemalloc' '
		record -O $JEMALLOC -o je.trace -- env LD_PRELOAD=$JEMALLOC "$S/alloc_zoo" realloc 40 >truth &&
		"$MEMSIGHT" leaks je.trace >leaks &&
		grep -A4 "^40960 bytes in 40 allocations from stack" leaks >stack &&
		{ sed -n 3p stack | grep "^		realloc+0x0 \[libjemalloc.so.2\]$" &&
			sed -n 4p stack | grep "^		grow_chain+0x" ||
			{ cat stack; "$MEMSIGHT" info je.trace; false; }; }
	'
else
	echo "# libjemalloc2 is not installed: skipping the -O test"
fi

test_expect_success 'sampled (-s 10): the estimate is within 20% and labelled' '
	record -s 10 -o s.trace -- "$S/fib_leak" 500 >truth &&
	"$MEMSIGHT" leaks s.trace >leaks &&
	grep "(ESTIMATE)$" leaks &&
	est=$(sed -n "s/^~\([0-9]*\) bytes in [0-9]* allocations* from stack.*/\1/p" leaks | head -1) &&
	echo "estimate $est, truth 4096000" &&
	test $est -ge 3276800 && test $est -le 4915200 &&
	"$MEMSIGHT" leaks --json s.trace | grep "\"estimate\":true,\"sample\":10,"
'

test_expect_success 'size limits (-z/-Z) keep only what is asked for' '
	record -z 1000 -o z.trace -- "$S/alloc_zoo" memalign 10 >truth &&
	"$MEMSIGHT" leaks z.trace >leaks &&
	grep "^81920 bytes in 10 allocations from stack" leaks &&
	grep "^10000 bytes in 10 allocations from stack" leaks &&
	record -Z 2000 -o Z.trace -- "$S/alloc_zoo" memalign 10 >truth &&
	"$MEMSIGHT" leaks Z.trace >leaks &&
	! grep "^81920 bytes" leaks && grep "^10000 bytes in 10 allocations from stack" leaks
'

# env allocates, then execs the program in the same process: two rows.
test_expect_success 'report: a program an exec started has a row of its own, the one before it another' '
	record -o plain.trace -- "$S/loop_leak" 1000 >truth &&
	record -o exec.trace -- env MEMSIGHT_TEST=1 "$S/loop_leak" 1000 >truth &&
	"$MEMSIGHT" report plain.trace >plain &&
	"$MEMSIGHT" report exec.trace >exec &&
	awk "\$2 == \"loop_leak\" { print \$3, \$4, \$5 }" plain >want &&
	awk "\$2 == \"loop_leak\" { print \$3, \$4, \$5 }" exec >got &&
	cat want got &&
	test_cmp want got &&
	test "$(awk "\$2 == \"env\" && \$3 > 0" exec | wc -l)" = 1
'

# heaptrack's rule: a free of a block of the stack and size of the
# process's latest allocation, with no free between. The start-up's are
# the same in both runs, so the difference is the rounds'.
test_expect_success 'temporary allocations as heaptrack counts them' '
	record -o t0.trace -- "$S/alloc_zoo" temporary 0 >truth0 &&
	record -o t1.trace -- "$S/alloc_zoo" temporary 1000 >truth &&
	cat truth &&
	want=$(sed -n "s/^alloc_zoo: \([0-9]*\) temporary allocations of [0-9]* from temporaries .*/\1/p" truth) &&
	"$MEMSIGHT" report --json t0.trace >t0.json && "$MEMSIGHT" report --json t1.trace >t1.json &&
	temp() { /usr/bin/python3 -c "import json,sys; print(sum(p[\"temporary\"] for p in json.load(open(sys.argv[1]))[\"malloc\"][\"processes\"]))" "$1"; } &&
	t0=$(temp t0.json) && t1=$(temp t1.json) &&
	echo "temporary: $t0 without the rounds, $t1 with them, $want in the rounds" &&
	test $((t1 - t0)) = "$want"
'

test_expect_success 'C++ names are demangled' '
	record -o cxx.trace -- "$S/cxx_leak" 30 >truth &&
	"$MEMSIGHT" leaks cxx.trace >leaks &&
	grep -A4 "^1920 bytes in 30 allocations from stack" leaks | grep "^		demo::Cache::remember(int)+0x" &&
	grep -A4 "^960 bytes in 30 allocations from stack" leaks | grep "^		operator new(unsigned long)+0x"
'

test_expect_success 'leak or long-lived: --sort growth puts the steady leak first' '
	record -o grow.trace -- "$S/alloc_zoo" grow 40 >truth &&
	"$MEMSIGHT" leaks grow.trace >bysize &&
	"$MEMSIGHT" leaks --sort growth grow.trace >bygrowth &&
	grep -m1 -A3 "^[0-9]* bytes in" bysize | grep "init_tables+0x" &&
	grep -m1 -A3 "^[0-9]* bytes in" bygrowth | grep "steady_leak+0x" &&
	grep -A1 "^1048576 bytes in 1 allocation" bysize | grep ", once$" &&
	grep -A1 "^2560 bytes in 40 allocations" bysize | grep "; growing "
'

test_expect_success '--older keeps only allocations that old at the end' '
	"$MEMSIGHT" leaks --older 200 grow.trace >old &&
	grep "^1048576 bytes in 1 allocation" old &&
	count=$(sed -n "s/^[0-9]* bytes in \([0-9]*\) allocations* from stack.*/\1/p" old | sed -n 2p) &&
	echo "steady allocations at least 200 ms old: $count" &&
	test "$count" -gt 5 && test "$count" -lt 35
'

test_expect_success '--suppress in LeakSanitizer format, and the one summary line' '
	printf "# ours\nleak:grow_chain\n" >supp &&
	"$MEMSIGHT" leaks --suppress supp realloc.trace >leaks &&
	grep "^# memsight leaks of .realloc.trace.: 0 bytes in 0 allocations" leaks &&
	grep "^# suppressed: 69632 bytes in 65 allocations from 2 stacks" leaks &&
	printf "leek:x\n" >bad &&
	test_must_fail "$MEMSIGHT" leaks --suppress bad realloc.trace 2>err &&
	test_one_line err && grep "bad:1: expected .leak:PATTERN." err
'

test_expect_success '--fail-over gates CI; --lines adds file:line' '
	"$MEMSIGHT" leaks --fail-over 409600 fib.trace >/dev/null &&
	test_expect_code=0 &&
	{ "$MEMSIGHT" leaks --fail-over 409599 fib.trace >/dev/null 2>err; test $? = 3; } &&
	grep "409600 bytes leaked, over the --fail-over limit of 409599" err &&
	"$MEMSIGHT" leaks --lines fib.trace | grep "fibonacci+0x[0-9a-f]* \[fib_leak\] samples/fib_leak.c:[0-9]*$"
'

test_expect_success 'folded and flame graphs weighted by leaked bytes, bytes and count' '
	"$MEMSIGHT" folded -e malloc -w leaked fib.trace >leaked &&
	grep -x "fib_leak;\(__clone3;\)\{0,1\}start_thread;child;fibonacci;calloc 409600" leaked &&
	"$MEMSIGHT" folded -e malloc -w count loop.trace >count &&
	grep "main;someFunc;leak;malloc 1000$" count &&
	"$MEMSIGHT" folded -e malloc -w bytes churn.trace >bytes &&
	test "$(awk "{ s += \$NF } END { print s }" bytes)" -gt 0 &&
	"$MEMSIGHT" flamegraph -e malloc -w leaked fib.trace >leaks.svg &&
	xmllint --noout leaks.svg &&
	grep "<title>fibonacci (409600 bytes" leaks.svg
'

# Four runs of one program leak alike: their groups tie on every count and
# must come in one order, not one that follows addresses hashed.
test_expect_success 'leak groups that tie come in the order seen, every run' '
	record -o tie.trace -- sh -c "for i in 1 2 3 4; do \"$S/loop_leak\" 3 >/dev/null; done" &&
	for i in 1 2 3; do "$MEMSIGHT" leaks tie.trace >tie.$i || return 1; done &&
	test_cmp tie.1 tie.2 && test_cmp tie.1 tie.3 &&
	test $(grep -c "^12 bytes in 3 allocations from stack (pid [0-9]* loop_leak)\$" tie.1) = 4
'

# heaptrack shows C++ names with their template arguments as <>: one
# function's instantiations read as one. --full-names keeps them.
test_expect_success 'C++ frames: template arguments shortened to <> by default, whole with --full-names' '
	cat >vec.cc <<-EOF &&
	#include <vector>
	static std::vector<int> *keep;
	__attribute__((noinline)) void fill(int n)
	{
		keep = new std::vector<int>();
		for (int i = 0; i < n; i++)
			keep->push_back(i);
	}
	int main() { fill(1000); keep = nullptr; return 0; }
	EOF
	g++ -O1 -g -fno-omit-frame-pointer -o vec vec.cc &&
	record -o vec.trace -- ./vec &&
	"$MEMSIGHT" leaks vec.trace >short 2>/dev/null &&
	"$MEMSIGHT" leaks --full-names vec.trace >full 2>/dev/null &&
	grep -q "std::allocator_traits<>::allocate(std::allocator<>&, unsigned long)" short &&
	! grep -q "std::allocator<int>" short &&
	grep -q "std::allocator_traits<std::allocator<int> >::allocate(std::allocator<int>&, unsigned long)" full &&
	grep -q "fill(int)" short
'

# The wrapper filters each stack dump in the process by the code filter the
# recorder publishes. Code mapped after the filter was made must still
# name its frames: a library opened by path, one found by the opener's own
# RUNPATH (dlopen reached with the caller's address), and code made
# executable with mprotect, each allocating at once, in recordings made
# one after another.
test_expect_success 'code that appears during the recording: its frames, every time' '
	cat >fresh.c <<-EOF &&
	#include <stdlib.h>
	void *fresh_keep[64];
	__attribute__((noinline)) void fresh_deep(int d, int i)
	{
		if (d)
			fresh_deep(d - 1, i);
		else
			fresh_keep[i] = malloc(48);
		__asm__ volatile("" ::: "memory");
	}
	void fresh_leak(int n) { for (int i = 0; i < n; i++) fresh_deep(3, i); }
	EOF
	cat >opener.c <<-EOF &&
	#include <dlfcn.h>
	#include <stdio.h>
	#include <stdlib.h>
	#include <string.h>
	#include <sys/mman.h>
	#include <time.h>
	#include <unistd.h>
	static void *early[100];
	typedef void (*leak_fn)(int);
	void *jit_keep[32];
	__attribute__((noinline)) void jit_target(void) { for (int i = 0; i < 32; i++) jit_keep[i] = malloc(24); }
	int main(int argc, char **argv)
	{
		struct timespec ts = { 0, 30000000 };
		void *h;
		leak_fn f;
		for (int i = 0; i < 100; i++) free(early[i] = malloc(16));
		nanosleep(&ts, NULL);
		h = dlopen(argv[1], RTLD_NOW);
		if (!h || !(f = (leak_fn)dlsym(h, "fresh_leak"))) { fprintf(stderr, "opener: %s\n", dlerror()); return 1; }
		f(64);
		printf("opener: leaked 3072 bytes in 64 allocations from fresh_deep\n");
		if (argc > 2) {
			/* push rbp; mov rbp,rsp; call *%rdi; pop rbp; ret: a frame-pointer frame, at an address of its own */
			static const unsigned char stub[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
			unsigned char *c = mmap((void *)0x3e0000000000ull, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			FILE *m;
			char name[64];
			if (c == MAP_FAILED) return 1;
			nanosleep(&ts, NULL);
			for (int i = 0; i < 100; i++) free(early[i] = malloc(16));
			memcpy(c, stub, sizeof(stub));
			if (mprotect(c, 4096, PROT_READ | PROT_EXEC)) return 1;
			snprintf(name, sizeof(name), "/tmp/perf-%d.map", (int)getpid());
			if (!(m = fopen(name, "w"))) return 1;
			fprintf(m, "%lx %zx jit_stub\n", (unsigned long)c, sizeof(stub));
			fclose(m);
			((void (*)(void (*)(void)))c)(jit_target);
			printf("opener: leaked 768 bytes in 32 allocations from jit_target\n");
		}
		return 0;
	}
	EOF
	cc -O1 -g -fno-omit-frame-pointer -fPIC -shared -o libfresh.so fresh.c &&
	mkdir -p rp && cp libfresh.so rp/ &&
	cc -O1 -g -fno-omit-frame-pointer -o opener opener.c -ldl &&
	cc -O1 -g -fno-omit-frame-pointer -o rp/opener opener.c -ldl -Wl,-rpath,"\$ORIGIN" &&
	for i in 1 2 3; do
		record -o fresh.trace -- ./opener "$PWD/libfresh.so" jit >truth &&
		grep "^opener: leaked 768 bytes" truth &&
		"$MEMSIGHT" leaks fresh.trace >leaks 2>/dev/null &&
		grep -A12 "^3072 bytes in 64 allocations from stack" leaks >stack &&
		grep "^		fresh_deep+0x[0-9a-f]* \[libfresh.so\]" stack &&
		grep "^		fresh_leak+0x[0-9a-f]* \[libfresh.so\]" stack &&
		grep "^		main+0x[0-9a-f]* \[opener\]" stack &&
		grep -A8 "^768 bytes in 32 allocations from stack" leaks >stack &&
		grep "^		jit_target+0x[0-9a-f]* \[opener\]" stack &&
		grep "^		jit_stub" stack &&
		grep "^		main+0x[0-9a-f]* \[opener\]" stack &&
		rm -f "/tmp/perf-$(sed -n "s/.*(pid \([0-9]*\) opener).*/\1/p" leaks | head -1).map" &&
		record -o rp.trace -- rp/opener libfresh.so >truth &&
		"$MEMSIGHT" leaks rp.trace >leaks 2>/dev/null &&
		grep -A12 "^3072 bytes in 64 allocations from stack" leaks >stack &&
		grep "^		fresh_deep+0x[0-9a-f]* \[libfresh.so\]" stack &&
		grep "^		main+0x[0-9a-f]* \[opener\]" stack || return 1
	done
'

# A trace its recorder still writes (it holds the file's lock): read as far
# as it is written, and called live, not cut short nor lossy; a gate waits
# for its end. Once the recording ends the same file is complete.
test_expect_success 'a trace still being recorded: what is written so far, said to be live' '
	{ "$MEMSIGHT" record -q -e malloc -o live.trace -- "$SAMPLES/loop_leak" 600 10 >live.truth & } &&
	rec=$! &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" leaks live.trace 2>/dev/null | grep -q "leak+0x"; do
		sleep 0.1; i=$((i + 1)); done &&
	"$MEMSIGHT" leaks live.trace >live.leaks 2>live.err &&
	"$MEMSIGHT" info live.trace >live.info 2>/dev/null &&
	"$MEMSIGHT" info --json live.trace >live.json 2>/dev/null &&
	{ "$MEMSIGHT" leaks --fail-over 0 live.trace >/dev/null 2>gate.err; echo $? >gate.rc; } &&
	kill -0 $rec && wait $rec &&
	cat live.leaks live.err live.info gate.err &&
	grep "is still being recorded: results cover what its recorder has written so far" live.err &&
	! grep -e "without a trailer" -e "cut short" live.err &&
	grep "^# LIVE: the recording is still going" live.leaks &&
	! grep -e INCOMPLETE -e UNCERTAIN live.leaks &&
	grep -A3 "^[0-9]* bytes in [0-9]* allocations* from stack" live.leaks | grep -q "leak+0x" &&
	grep "^status:      being recorded (a running recorder still writes it)" live.info &&
	json_valid info live.json && grep -q "\"live\":true" live.json &&
	test "$(cat gate.rc)" = 4 && grep "still being recorded: a leak is what is outstanding when recording ends" gate.err &&
	"$MEMSIGHT" info live.trace >info 2>err && grep "^status:      complete$" info && ! grep "being recorded" err &&
	"$MEMSIGHT" leaks live.trace >leaks 2>/dev/null && ! grep LIVE leaks &&
	grep "^2400 bytes in 600 allocations from stack" leaks
'

# A ring overwritten while it is read: each read is of the ring as it
# stood, every chunk as its CRC was checked, never one half rewritten.
# The reader's matter, whatever traced the calls: once, through the
# wrapper (through uprobes the churn is many times slower).
[ "$WRAPPED" = 1 ] && test_expect_success 'a ring its recorder overwrites while it is read: each read whole' '
	{ "$MEMSIGHT" record -q --ring 8M -e malloc -o live-ring.trace -- "$SAMPLES/alloc_zoo" churn 150000 >/dev/null 2>&1 & } &&
	i=0 && while [ $i -lt 100 ] && ! "$MEMSIGHT" info live-ring.trace 2>/dev/null | grep -q "[1-9][0-9.]* [KM]iB (.*overwritten"; do
		sleep 0.1; i=$((i + 1)); done &&
	reads=0 && while "$MEMSIGHT" info live-ring.trace 2>/dev/null | grep -q "^status: *being recorded"; do
		"$MEMSIGHT" leaks -T 1 live-ring.trace >ring.leaks 2>ring.err || { cat ring.err; false; } || break
		reads=$((reads + 1))
	done &&
	wait &&
	echo "$reads reads while it was overwritten" &&
	test $reads -ge 1 && ! grep -v -e "is still being recorded" -e "is a ring of" ring.err
'

test_done
