#!/bin/sh
# Traces that travel: objects embedded at the end of a recording (--embed)
# or afterwards (memsight archive) give the original names and stacks when
# the binary is rebuilt or gone; without them, the unresolved table, never a
# wrong name.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

build_app() { cc -O2 -g -fomit-frame-pointer -fno-inline -o bin/app "$@" "$TOP/samples/fib_leak.c" -pthread; }

# An archive carries every object the recorded process mapped: through the
# wrapper, that is also the wrapper and the libm it uses.
test_expect_success 'record the same program three ways: embedded minimal (default), full, and none' '
	mkdir bin orig &&
	build_app &&
	cp bin/app orig/app &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o min.trace -- bin/app 20 >truth &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed full -o full.trace -- bin/app 20 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o none.trace -- bin/app 20 >/dev/null &&
	strip -g -o bin/stripped bin/app &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o stripped.trace -- bin/stripped 20 >/dev/null &&
	cp none.trace archived.trace &&
	"$MEMSIGHT" archive archived.trace 2>err &&
	grep "^memsight archive: .archived.trace. now carries $((3 + 2 * WRAPPED)) objects" err &&
	test "$(stat -c %a archived.trace)" = 600 &&
	"$MEMSIGHT" info min.trace >info &&
	cat info &&
	grep "^embedded:    [0-9]* objects" info &&
	grep "^  minimal .* $PWD/bin/app$" info &&
	if [ "$WRAPPED" = 1 ]; then grep "^  minimal .*/libmemsight-sample.so$" info; fi &&
	grep "^  minimal .* /usr/lib/x86_64-linux-gnu/libc.so.6$" info &&
	grep "^  debug .* $PWD/bin/app$" info &&
	"$MEMSIGHT" info full.trace >info.full &&
	grep "^  full .* $PWD/bin/app$" info.full &&
	! grep "^  debug .* $PWD/bin/app$" info.full &&
	"$MEMSIGHT" info none.trace | grep "^embedded:    0 objects"
'

test_expect_success 'the binary rebuilt with other code: embedded objects give the original names' '
	build_app -Dfibonacci=other_name -Dchild=other_child &&
	for t in min full archived; do
		"$MEMSIGHT" folded -e malloc -w leaked $t.trace >$t.folded 2>$t.err &&
		cat $t.folded &&
		grep ";start_thread;child;fibonacci;calloc 163840$" $t.folded &&
		! grep other_ $t.folded || return 1
	done
'

# The debug entry carries what names inlined functions and gives lines, so
# those travel too: the helper inlined in build_list is still its own frame
# with its source line once the binary is rebuilt without it.
test_expect_success 'the binary rebuilt: the embedded debug information still gives inlined frames and lines' '
	cc -O2 -g -fomit-frame-pointer -o bin/inl "$TOP/samples/inline_alloc.c" &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -o inl.trace -- bin/inl 50 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o inl-none.trace -- bin/inl 50 >/dev/null &&
	cc -O2 -g -fomit-frame-pointer -Dnew_node=other_node -Dbuild_list=other_list -o bin/inl \
		"$TOP/samples/inline_alloc.c" &&
	"$MEMSIGHT" leaks --lines inl.trace >leaks &&
	cat leaks &&
	grep -A5 "^2400 bytes in 50 allocations from stack" leaks >stack &&
	sed -n 4p stack | grep "^		new_node (inlined) \[inl\] [^ ]*samples/inline_alloc.c:[0-9]*$" &&
	sed -n 5p stack | grep "^		push_front (inlined) \[inl\] [^ ]*samples/inline_alloc.c:[0-9]*$" &&
	sed -n 6p stack | grep "^		build_list+0x[0-9a-f]* \[inl\] [^ ]*samples/inline_alloc.c:[0-9]*$" &&
	"$MEMSIGHT" leaks inl-none.trace >leaks.none 2>/dev/null &&
	! grep "new_node\|other_" leaks.none
'

test_expect_success 'without embedded objects: the unresolved table, never the new names' '
	"$MEMSIGHT" leaks none.trace >leaks 2>err &&
	cat leaks err &&
	grep "^163840 bytes in 20 allocations from stack" leaks &&
	! grep other_ leaks &&
	grep "frames unnamed in .$PWD/bin/app.: the file here has another build-id than the recorded" err
'

# A debuginfod server on this machine, serving the original binary: the
# first free port from one picked by pid; the server then scans orig/.
dbgd_start() {
	port=$((20000 + $$ % 20000))
	for try in 1 2 3 4 5; do
		debuginfod -p $port -d "$PWD/dbgd.sqlite" -F orig >dbgd.log 2>&1 &
		echo $! >dbgd.pid
		for i in $(seq 40); do
			grep -q "started http server" dbgd.log && return 0
			kill -0 "$(cat dbgd.pid)" 2>/dev/null || break
			sleep 0.25
		done
		kill "$(cat dbgd.pid)" 2>/dev/null
		port=$((port + 1))
	done
	return 1
}

if command -v debuginfod >/dev/null && dbgd_start; then
	trap 'kill "$(cat dbgd.pid)" 2>/dev/null; rm -rf "$TRASH"' EXIT
	urls=http://127.0.0.1:$port
	bid=$("$MEMSIGHT" info none.trace >/dev/null; readelf -n orig/app | sed -n "s/.*Build ID: //p")
	# Until the scan has indexed it (the client caches a miss, so each try
	# gets its own cache).
	for i in $(seq 80); do
		DEBUGINFOD_URLS=$urls DEBUGINFOD_CACHE_PATH=$PWD/probe.$i debuginfod-find executable "$bid" \
			>/dev/null 2>&1 && break
		sleep 0.25
	done
	# The stripped binary has no debug file anywhere: libdw would ask the
	# servers in DEBUGINFOD_URLS for one by itself.
	test_expect_success 'no --debuginfod: DEBUGINFOD_URLS alone never reaches the server' '
		asked=$(grep -c "GET /buildid/" dbgd.log) &&
		DEBUGINFOD_URLS=$urls DEBUGINFOD_CACHE_PATH=$PWD/dcache.0 "$MEMSIGHT" leaks none.trace >leaks 2>err &&
		! grep fibonacci leaks &&
		DEBUGINFOD_URLS=$urls DEBUGINFOD_CACHE_PATH=$PWD/dcache.0 "$MEMSIGHT" leaks stripped.trace >/dev/null &&
		grep "frames unnamed in .$PWD/bin/app.: .*or add --debuginfod" err &&
		test "$(grep -c "GET /buildid/" dbgd.log)" = "$asked"
	'
	test_expect_success '--debuginfod: the recorded build-id from the server, with its names' '
		DEBUGINFOD_CACHE_PATH=$PWD/dcache.1 "$MEMSIGHT" folded -e malloc -w leaked --debuginfod=$urls \
			none.trace >dbgd.folded 2>err &&
		cat dbgd.folded err &&
		grep ";start_thread;child;fibonacci;calloc 163840$" dbgd.folded &&
		! grep other_ dbgd.folded &&
		grep "GET /buildid/$bid/" dbgd.log
	'
	test_expect_success '--debuginfod with a server that lacks it: the unresolved table says so' '
		rm -f orig/app &&
		DEBUGINFOD_CACHE_PATH=$PWD/dcache.2 "$MEMSIGHT" leaks --debuginfod=http://127.0.0.1:1 none.trace \
			>leaks 2>err &&
		! grep fibonacci leaks &&
		grep "and the debuginfod servers have neither" err
	'
	test_expect_success '--debuginfod without a server named: one line' '
		env -u DEBUGINFOD_URLS "$MEMSIGHT" leaks --debuginfod none.trace 2>err;
		test $? = 2 && test_one_line err && grep "set DEBUGINFOD_URLS or give --debuginfod=URL" err
	'
fi

test_expect_success 'the binary gone: embedded objects still unwind and name it' '
	rm bin/app &&
	"$MEMSIGHT" folded -e malloc -w leaked min.trace >gone.folded 2>err &&
	grep ";start_thread;child;fibonacci;calloc 163840$" gone.folded &&
	! grep "stop short" err
'

# Decoding libc's debug entry is most of a short analysis: the decoded
# entries are kept, by build-id and content, for the next command.
test_expect_success 'decoded objects are cached: the next analysis opens them, a damaged one is made again, an empty MEMSIGHT_CACHE_DIR turns it off' '
	rm -rf "$MEMSIGHT_CACHE_DIR" &&
	"$MEMSIGHT" folded -e malloc -w leaked min.trace >c1 &&
	ls "$MEMSIGHT_CACHE_DIR" >cached &&
	cat cached &&
	grep -c "^memsight-[0-9a-f]*-[123]-[0-9a-f]\{64\}\.elf$" cached >n &&
	test "$(cat n)" = "$(wc -l <cached)" &&
	test "$(cat n)" -ge 3 &&
	test "$(stat -c %a "$MEMSIGHT_CACHE_DIR")" = 700 &&
	"$MEMSIGHT" folded -e malloc -w leaked min.trace >c2 &&
	test_cmp c1 c2 &&
	for f in "$MEMSIGHT_CACHE_DIR"/*.elf; do : >"$f"; done &&
	"$MEMSIGHT" folded -e malloc -w leaked min.trace >c3 &&
	test_cmp c1 c3 &&
	for f in "$MEMSIGHT_CACHE_DIR"/*.elf; do test -s "$f" || return 1; done &&
	rm -rf "$MEMSIGHT_CACHE_DIR" &&
	MEMSIGHT_CACHE_DIR= "$MEMSIGHT" folded -e malloc -w leaked min.trace >c4 &&
	test_cmp c1 c4 &&
	! test -e "$MEMSIGHT_CACHE_DIR"
'

# A process attached with -p was mapped before the recording began: its
# objects come from the /proc snapshot, not from mmap records.
test_expect_success 'a running process (-p): the objects its stacks run in are embedded, and name them once the binary is gone' '
	mkdir -p live &&
	cp "$SAMPLES/nofp/fib_leak" live/fib_leak &&
	{ live/fib_leak 120 25 >live.out & } &&
	pid=$! &&
	sleep 0.2 &&
	"$MEMSIGHT" record -q -e malloc -g dwarf -p $pid -d 1 -o live.trace &&
	wait $pid &&
	"$MEMSIGHT" info live.trace >info.live &&
	cat info.live &&
	grep "^  minimal .* $PWD/live/fib_leak$" info.live &&
	grep "^  minimal .* /usr/lib/x86_64-linux-gnu/libc.so.6$" info.live &&
	! grep "not carried" info.live &&
	rm live/fib_leak &&
	"$MEMSIGHT" folded -e malloc live.trace >live.folded 2>live.err &&
	cat live.folded live.err &&
	grep ";start_thread;child;fibonacci;calloc [1-9][0-9]*$" live.folded
'

# Objects whose packed entries the cache holds are carried as stacks
# first reach them, while the recording runs: a recorder killed with -9
# leaves a trace that still carries them (the first run fills the cache).
test_expect_success 'a recording killed with -9 still carries the objects its stacks had reached' '
	"$MEMSIGHT" record -q -e malloc --sample-bytes 64K -o warm.trace -- "$SAMPLES/alloc_zoo" churn 10 >/dev/null &&
	{ "$MEMSIGHT" record -q -e malloc --sample-bytes 64K -o killed.trace -- \
		"$SAMPLES/alloc_zoo" churn 100000000 >/dev/null 2>&1 & } &&
	rec=$! && end=$(($(date +%s) + 10)) &&
	while [ "$(date +%s)" -lt $end ] && ! "$MEMSIGHT" info killed.trace 2>/dev/null |
		grep -q "^  debug .* /usr/lib/debug/.build-id/.*\.debug$"; do sleep 0.1; done
	zoo=$(pgrep -P $rec -x alloc_zoo); kill -9 $rec; kill $zoo; wait $rec
	"$MEMSIGHT" info killed.trace >info.killed 2>/dev/null &&
	cat info.killed &&
	grep "^status: .*without a trailer" info.killed &&
	grep "^  minimal .* $SAMPLES/alloc_zoo$" info.killed &&
	grep "^  minimal .* /usr/lib/x86_64-linux-gnu/libc.so.6$" info.killed &&
	"$MEMSIGHT" folded -e malloc killed.trace 2>/dev/null | grep -q "^alloc_zoo;_start;.*;main;churn;"
'

test_expect_success 'bad archive input: one line each' '
	test_must_fail "$MEMSIGHT" archive --embed sometimes min.trace 2>err &&
	test_one_line err && grep "unknown --embed mode .sometimes." err &&
	test_must_fail "$MEMSIGHT" archive no-such.trace 2>err &&
	test_one_line err && grep "no-such.trace" err &&
	head -c 3000 min.trace >cut.trace &&
	test_must_fail "$MEMSIGHT" archive cut.trace 2>err &&
	test_one_line err && grep "is not complete" err &&
	test_must_fail "$MEMSIGHT" record --embed sometimes -- true 2>err &&
	test_one_line err && grep "unknown --embed mode" err
'

test_expect_success '--embed-max bounds what is carried: no entry takes the total past it, and what is left out is said' '
	"$MEMSIGHT" record -q --embed-max 96K -e faults -o max.trace -- "$SAMPLES/loop_leak" 3 >/dev/null &&
	"$MEMSIGHT" info max.trace >info &&
	cat info &&
	kib=$(sed -n "s/^embedded: .*, \([0-9.]*\) KiB$/\1/p" info) &&
	test -n "$kib" &&
	awk -v k="$kib" "BEGIN { exit !(k > 0 && k <= 96) }" &&
	grep "^  /.*libc.so.6: past the --embed-max bound$" info
'

test_done
