#!/bin/sh
# --leak-check against valgrind's memcheck on the cases where a scan of a
# stopped process can go wrong (samples/leak_cases.c): glibc's chunk
# headers, random sizes, a joined thread's stack, read-only roots,
# interior pointers, a tree of indirect leaks, a mapping merged with a big
# block, a cycle, realloc, a main thread that ends before the others,
# threads still running at exit that hold a block on their stack or in a
# register only, a read-only table in the brk heap, blocks of no bytes
# right after a malloc that failed; C++'s own interior pointers
# (samples/cxx_cases.cc), with valgrind's heuristics and without. Built at -O0 and -O2;
# each run's four kinds, bytes and blocks,
# must equal valgrind's and the program's own truth. The same programs
# under jemalloc and mimalloc, where valgrind cannot follow, against the
# truth alone.
. "$(dirname "$0")/test-lib.sh"

test_skip_unless_recording

json() { perl -MJSON::PP -e 'local $/; open my $f, "<", $ARGV[0] or die; my $d = decode_json(<$f>); '"$2" "$1"; }

CASES="tails:10 random:4000 thread:1 rodata:10 interior:1 tree:1 merged:10 cycle:1 realloc:1 mainexit:1 heldwait:1
heldreg:1 rotable:1 zerosize:1"
KINDS="definitely indirectly possibly reachable"

# The four kinds from the program's truth lines, absent ones 0.
truth_kinds() {
	for k in $KINDS; do
		w=$k
		test $k = reachable && w="still reachable" || w="$k lost"
		sed -n "s/^leak_cases: $w \([0-9]*\) bytes in \([0-9]*\) blocks$/$k \1 \2/p" "$1" | grep . || echo "$k 0 0"
	done
}
# From valgrind's LEAK SUMMARY.
vg_kinds() {
	for k in $KINDS; do
		w=$k
		test $k = reachable && w="still reachable" || w="$k lost"
		sed -n "s/^==[0-9]*== *$w: \([0-9,]*\) bytes in \([0-9,]*\) blocks$/$k \1 \2/p" "$1" | tr -d , | grep . ||
			echo "$k 0 0"
	done
}
# From memsight's JSON.
ms_kinds() {
	json "$1" 'my $c = $d->{leak_check} or die "no scan"; for my $k (qw(definitely_lost:definitely indirectly_lost:indirectly
		possibly_lost:possibly still_reachable:reachable)) { my ($key, $name) = split /:/, $k;
		print "$name $c->{$key . q{_bytes}} $c->{$key . q{_allocations}}\n" }'
}

for opt in O0 O2; do
	test_expect_success "leak_cases built -$opt" '
		cc -$opt -g -pthread -o lc-$opt "$TOP/samples/leak_cases.c"
	'
	for c in $CASES; do
		mode=${c%:*} n=${c#*:}
		test_expect_success "-$opt $mode: the kinds are the truth" '
			"$MEMSIGHT" record -q -e malloc --leak-check -o $opt-$mode.trace -- ./lc-$opt $mode $n >truth &&
			truth_kinds truth >want &&
			"$MEMSIGHT" leaks --json $opt-$mode.trace >leaks.json &&
			ms_kinds leaks.json >got &&
			test_cmp want got
		'
		# valgrind scans only memory that is writable now: blocks held
		# from a page the program made read-only are lost to it. They
		# are not lost: the program can still read its pointers.
		# Under valgrind, what its own run leaves in registers (the end
		# of a memset) may point into one of 4,000 blocks, as chance and
		# the addresses of the run have it: those are held against the
		# truth only.
		if [ $mode = rodata ]; then
			echo "# -$opt rodata: not held against valgrind, which scans writable memory only"
		elif [ $mode = random ]; then
			echo "# -$opt random: held against the truth only: under valgrind a stray register may point into a block"
		elif [ $mode = mainexit ]; then
			echo "# -$opt mainexit: held against the truth only: valgrind also counts the last thread's TLS block (glibc's DTV) possibly lost, which memsight's default suppressions leave out"
		elif [ $mode = heldwait ] || [ $mode = heldreg ] && command -v valgrind >/dev/null; then
			# The running thread's TLS block (glibc's DTV) is possibly
			# lost to valgrind, and left out by memsight's default
			# suppressions: the other three kinds are valgrind's.
			test_expect_success "-$opt $mode: and valgrind's, but for the thread's TLS block" '
				ms_kinds leaks.json | grep -v ^possibly >got &&
				valgrind --leak-check=full --show-leak-kinds=all ./lc-$opt $mode $n >/dev/null 2>vg &&
				vg_kinds vg | grep -v ^possibly >vgk &&
				test_cmp vgk got
			'
		elif command -v valgrind >/dev/null; then
			# A word valgrind's own run leaves behind (1 in some
			# dozens of runs here) can point into the middle of a
			# dropped block and make it possibly lost to valgrind:
			# such a run is made again, once.
			test_expect_success "-$opt $mode: and valgrind's, block for block" '
				ms_kinds leaks.json >got &&
				for run in 1 2; do
					valgrind --leak-check=full --show-leak-kinds=all ./lc-$opt $mode $n >/dev/null 2>vg &&
					vg_kinds vg >vgk || return 1
					cmp -s vgk got && break
				done &&
				test_cmp vgk got
			'
		fi
	done
done

test_expect_success 'a definitely lost block carries the indirect ones it holds, in text and JSON' '
	"$MEMSIGHT" leaks O2-tree.trace >leaks &&
	"$MEMSIGHT" leaks --json O2-tree.trace >leaks.json &&
	grep "^560 (48 direct, 512 indirect) bytes in 1 allocation from stack (pid [0-9]* lc-O2): definitely lost$" leaks &&
	grep "^	holding, indirectly lost: " leaks >held &&
	printf "\tholding, indirectly lost: %s bytes in 4 allocations from stack\n" 256 128 128 >want.held &&
	test_cmp want.held held &&
	json leaks.json "for my \$s (@{\$d->{stacks}}) { print qq{\$s->{bytes} \$s->{indirect_bytes} \$s->{indirect_allocations}\\n}
		if \$s->{kind} eq q{definitely_lost} }" >direct &&
	echo "48 512 12" >want &&
	test_cmp want direct &&
	json leaks.json "for my \$s (@{\$d->{stacks}}) { next unless \$s->{kind} eq q{definitely_lost};
		print join(q{ }, map { \$_->{bytes} . q{/} . \$_->{allocations} } @{\$s->{holding}}), qq{\\n} }" >holding &&
	echo "256/4 128/4 128/4" >want &&
	test_cmp want holding
'

test_expect_success '--fail-over counts definitely and possibly lost, as valgrind'"'"'s errors do; --errors-for-leak-kinds picks' '
	{ "$MEMSIGHT" leaks --fail-over 255 O2-interior.trace >/dev/null 2>err; test $? = 3; } &&
	"$MEMSIGHT" leaks --fail-over 256 O2-interior.trace >/dev/null &&
	"$MEMSIGHT" leaks --fail-over 48 O2-tree.trace >/dev/null &&
	{ "$MEMSIGHT" leaks --errors-for-leak-kinds all --fail-over 559 O2-tree.trace >/dev/null 2>err; test $? = 3; } &&
	"$MEMSIGHT" leaks --errors-for-leak-kinds none --fail-over 0 O2-tree.trace >/dev/null &&
	test_must_fail "$MEMSIGHT" leaks --errors-for-leak-kinds definite,maybe O2-tree.trace 2>err &&
	test_one_line err &&
	grep "unknown kind .maybe.: give definite, indirect, possible, reachable, all or none" err
'

# C++'s own interior pointers: valgrind's four heuristics, on by default,
# take each for a pointer to its block; turned off, the block is possibly
# lost to both.
for mode in stdstring newarray multipleinheritance length64; do
	test_expect_success "C++ $mode: still reachable by valgrind's heuristic, possibly lost without it, as under valgrind" '
		"$MEMSIGHT" record -q -e malloc --leak-check -o cxx-$mode.trace -- "$SAMPLES/cxx_cases" $mode >truth &&
		sed -n "s/^cxx_cases: still reachable \([0-9]*\) bytes in \([0-9]*\) blocks$/reachable \1 \2/p" truth >want &&
		"$MEMSIGHT" leaks --json cxx-$mode.trace >leaks.json &&
		ms_kinds leaks.json | grep ^reachable >got &&
		test_cmp want got &&
		sed "s/^reachable/possibly/" want >want.none &&
		"$MEMSIGHT" leaks --json --leak-check-heuristics none cxx-$mode.trace >none.json &&
		ms_kinds none.json | grep ^possibly >got.none &&
		test_cmp want.none got.none &&
		if command -v valgrind >/dev/null; then
			valgrind --leak-check=full --show-leak-kinds=all "$SAMPLES/cxx_cases" $mode >/dev/null 2>vg &&
			vg_kinds vg >vgk && ms_kinds leaks.json >got.all && test_cmp vgk got.all &&
			valgrind --leak-check=full --show-leak-kinds=all --leak-check-heuristics=none \
				"$SAMPLES/cxx_cases" $mode >/dev/null 2>vg &&
			vg_kinds vg >vgk && ms_kinds none.json >got.all && test_cmp vgk got.all
		fi &&
		"$MEMSIGHT" leaks --json --leak-check-heuristics $mode cxx-$mode.trace >one.json &&
		ms_kinds one.json | grep ^reachable >got.one &&
		test_cmp want got.one
	'
done

test_expect_success '--leak-check-heuristics takes valgrind'"'"'s names, and says which it does not know' '
	test_must_fail "$MEMSIGHT" leaks --leak-check-heuristics stdstring,bogus cxx-stdstring.trace 2>err &&
	test_one_line err &&
	grep "unknown heuristic .bogus.: give stdstring, length64, newarray, multipleinheritance, all or none" err
'

test_expect_success 'a block a running thread holds at exit fails no gate on definite leaks, as under valgrind' '
	"$MEMSIGHT" leaks --fail-over 0 --errors-for-leak-kinds definite O2-heldwait.trace >/dev/null &&
	"$MEMSIGHT" leaks --fail-over 0 --errors-for-leak-kinds definite O2-heldreg.trace >/dev/null
'

for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libmimalloc.so.2; do
	test -e "$lib" || { echo "# $lib is missing (make test-deps installs it)"; continue; }
	name=$(basename "$lib" .so.2)
	for c in tails:10 thread:1 rodata:10 interior:1 tree:1 merged:10 cycle:1 realloc:1 mainexit:1 heldwait:1 heldreg:1 \
		rotable:1 zerosize:1; do
		mode=${c%:*} n=${c#*:}
		test_expect_success "$name, $mode: the kinds are the truth" '
			LD_PRELOAD=$lib "$MEMSIGHT" record -q -e malloc --leak-check -o $name-$mode.trace -- ./lc-O2 $mode $n >truth &&
			truth_kinds truth >want &&
			"$MEMSIGHT" leaks --json $name-$mode.trace >leaks.json &&
			ms_kinds leaks.json >got &&
			test_cmp want got
		'
	done
done

if command -v valgrind >/dev/null && [ -x /usr/bin/python3 ]; then
	test_expect_success 'Python with its own allocator: lost, as valgrind finds it' '
		cat >short.py <<-\EOF &&
		import json, asyncio, decimal, email.parser, xml.dom.minidom, sqlite3
		class Node:
		    def __init__(self, v): self.v = v; self.next = None
		head = None
		for i in range(5000):
		    n = Node(i); n.next = head; head = n
		print(len(json.dumps({"k%d" % i: i for i in range(2000)})))
		EOF
		"$MEMSIGHT" record -q -e malloc --leak-check -o py.trace -- /usr/bin/python3 short.py >/dev/null &&
		"$MEMSIGHT" leaks --json py.trace >leaks.json &&
		valgrind --leak-check=full --show-leak-kinds=all /usr/bin/python3 short.py >/dev/null 2>vg &&
		# Still reachable differs by what the default suppressions hide
		# (the loader'"'"'s and libc'"'"'s one-time blocks): the lost kinds only.
		vg_kinds vg | grep -v reachable >vgk &&
		ms_kinds leaks.json | grep -v reachable >got &&
		cat vgk got &&
		test_cmp vgk got
	'
fi

test_done
