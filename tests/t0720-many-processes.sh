#!/bin/sh
# Many short-lived processes of one program: what the analyzer knows of an
# object's code is opened and parsed once, whatever the number of processes
# that map it, and the stacks come out named as in a recording of one.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

N=200
P=$SAMPLES/nofp/loop_leak

test_expect_success "one run and $N runs of a program without frame pointers" '
	"$MEMSIGHT" record -q -o one.trace -- "$P" 3 >/dev/null &&
	"$MEMSIGHT" record -q -o many.trace -- sh -c "for i in \$(seq $N); do \"$P\" 3 >/dev/null; done"
'

# "unwind: S address spaces, O objects opened, W spaces needing libdw's
# whole unwinder": the objects (sh, the program, libc, ld.so, the vDSO) are
# opened once for all the processes' address spaces; a rare stack the
# cached rules cannot step (a return address of 0, a stack pointer that
# cannot be read) costs its process a Dwfl of its own.
test_expect_success 'each object is opened for unwinding once, not once per process' '
	MEMSIGHT_UNWIND_STATS=1 "$MEMSIGHT" folded many.trace 2>stats >/dev/null &&
	set -- $(sed -n "s/^unwind: \([0-9]*\) address spaces, \([0-9]*\) objects opened, \([0-9]*\) spaces needing.*/\1 \2 \3/p" stats) &&
	echo "spaces $1, objects $2, whole unwinder $3" &&
	test "$1" -ge $N &&
	test "$2" -ge 3 && test "$2" -le 8 &&
	test "$3" -le $((N / 20))
'

# "processes: P seen, H holding maps at the end": a process's maps go with
# its last thread, so a replay of many short processes ends holding none of
# theirs, however many ran.
test_expect_success 'the maps of exited processes are released' '
	MEMSIGHT_UNWIND_STATS=1 "$MEMSIGHT" folded many.trace 2>stats >/dev/null &&
	set -- $(sed -n "s/^processes: \([0-9]*\) seen, \([0-9]*\) holding maps.*/\1 \2/p" stats) &&
	echo "seen $1, holding maps $2" &&
	test "$1" -ge $N && test "$2" -le 2
'

# "stacks: E (command, path) entries over C code paths": a code path is a
# stack's frames as objects and offsets, the same in any process, so it is
# made and named once; folded keeps one entry per command and path. The
# many add only the shell's own brk paths to those of the one.
test_expect_success 'a stack every process runs is one code path, named once' '
	MEMSIGHT_UNWIND_STATS=1 "$MEMSIGHT" folded -e brk one.trace 2>stats.one >/dev/null &&
	MEMSIGHT_UNWIND_STATS=1 "$MEMSIGHT" folded -e brk many.trace 2>stats.many >/dev/null &&
	set -- $(sed -n "s/^stacks: \([0-9]*\) .* over \([0-9]*\) code paths.*/\1 \2/p" stats.one stats.many) &&
	echo "one: $1 entries over $2 paths; many: $3 entries over $4 paths" &&
	test "$2" -ge 2 && test "$4" -ge "$2" && test "$4" -le $(($2 + 8)) && test "$3" -le $(($4 * 2))
'

# brk and mmap stacks are the same in every run of the program: the set
# of named stacks of the one and of the many must be equal, and whole
# (main calls leak, which mallocs; the loader maps the program's libraries).
for e in brk:main\;someFunc\;leak\;__libc_malloc mmap:_dl_map_object_from_fd\;_dl_map_segments; do
	want=${e#*:}
	e=${e%%:*}
	test_expect_success "the $e stacks of $N processes are those of one, named alike" '
		"$MEMSIGHT" folded -e '$e' one.trace 2>err.one | sed -n "s/^\(loop_leak;.*\) [0-9]*\$/\1/p" | sort -u >one.'$e' &&
		"$MEMSIGHT" folded -e '$e' many.trace 2>err.many | sed -n "s/^\(loop_leak;.*\) [0-9]*\$/\1/p" | sort -u >many.'$e' &&
		# A sample taken while the page at its stack pointer was out
		# of memory has no stack bytes, only its ip: the analyzer says
		# how many, and those are no stack of the program.
		for f in one many; do
			if grep -q "had no stack bytes" err.$f; then
				sed "/^loop_leak;[^;]*\$/d" $f.'$e' >$f.kept && mv $f.kept $f.'$e'
			fi
		done &&
		test -s one.'$e' &&
		grep -q ";_start;.*'"$want"'" one.'$e' &&
		test_cmp one.'$e' many.'$e'
	'
done

test_expect_success 'libdw agrees with every stack the cached rules stepped' '
	MEMSIGHT_UNWIND_CHECK=1 "$MEMSIGHT" folded many.trace 2>check >/dev/null &&
	grep "^memsight [a-z]*: unwinding check: 0 of [1-9][0-9]* stacks stepped with cached rules differ" check
'

# Each process starts pinned to CPU 1, moves itself to another CPU and there
# dlopens libz, whose inflateInit2_ calls back into it for 64 page faults:
# its exec is written to CPU 1's ring, its mapping of libz to another's. The
# recorder applies such changes in time order whatever ring holds them;
# applied ring by ring, an exec that came after its program's mappings
# began an empty map, and the stacks of 3 to 7 processes in 30 lost every
# frame above the program's own.
test_expect_success 'an exec and the mappings after it, written to two CPUs'"'"' rings: every stack whole' '
	if [ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] || ! taskset -c 1 true 2>/dev/null; then
		echo "# fewer than two CPUs to use here: skipped"; return 0
	fi &&
	"$MEMSIGHT" record -q -e faults -o hop.trace -- sh -c \
		"for i in \$(seq 30); do taskset -c 1 \"$SAMPLES/cpu_hop\" 64 || exit 1; done" >truth &&
	test "$(grep -c "^cpu_hop: from cpu 1 to cpu [0-9]* (now [0-9]*), 64 pages touched" truth)" = 30 &&
	"$MEMSIGHT" folded -e faults hop.trace >folded &&
	n=$(awk "/;main;inflateInit2_;hop_zalloc;touch_pages / { s += \$NF } END { print s + 0 }" folded) &&
	echo "$n of 1920 faults under inflateInit2_" &&
	test "$n" = 1920
'

test_done
