#!/bin/sh
# Code compiled at run time, named as the runtime names it: a perf map and
# a jitdump written by a program that maps code itself (one address holding
# two functions in turn), in a private mount and pid namespace, after the
# files are gone, and when they are malformed; the real JVM (with the
# command and with -p) and the real Node.
. "$(dirname "$0")/test-lib.sh"

S=$SAMPLES
R=$TOP/samples/runtimes

test_skip_unless_recording

# The maps the runtimes wrote in /tmp go when the tests are done: the
# traces carry them.
maps_written() { for f in *.trace; do "$MEMSIGHT" info "$f" 2>/dev/null; done |
	sed -n "s|^  perf-map  pid .*  \(/tmp/perf-[0-9]*\.map\)\$|\1|p"; }

# The folded stacks that end in touch, with their counts, and the JIT frame
# each has under touch.
jit_counts() { "$MEMSIGHT" folded "$1" 2>/dev/null | sed -n 's/.*;\([^;]*\);touch \([0-9]*\)$/\1 \2/p' | sort; }
# The file a truth line names.
truth_file() { sed -n "s/^jit_code: $1 \(.*\)$/\1/p" truth; }

test_expect_success 'jitdump: one address, two functions in turn; each sample named by the code there at its time' '
	"$MEMSIGHT" record -q -e faults -o dump.trace -- "$S/jit_code" jitdump "$PWD" >truth &&
	cat truth &&
	a=$(sed -n "s/^jit_code: jit_alpha at \(0x[0-9a-f]*\) faulted 300 pages$/\1/p" truth) &&
	b=$(sed -n "s/^jit_code: jit_beta at \(0x[0-9a-f]*\) faulted 500 pages$/\1/p" truth) &&
	test -n "$a" && test "$a" = "$b" &&
	jit_counts dump.trace >got &&
	printf "jit_alpha 300\njit_beta 500\n" >want &&
	test_cmp want got &&
	"$MEMSIGHT" info dump.trace >info &&
	grep "^jit maps:    1 perf maps and jitdumps" info &&
	grep "^  jitdump   pid [0-9]* *jit_code *2 functions  $(truth_file jitdump)$" info
'

test_expect_success 'jitdump: its debug records give source lines' '
	"$MEMSIGHT" faults --lines dump.trace >faults &&
	grep "^		jit_alpha+0xc \[JIT\] alpha.js:7$" faults &&
	grep "^		jit_beta+0xc \[JIT\] beta.js:9$" faults
'

test_expect_success 'the trace carries the jitdump: named the same after the file is gone' '
	rm -f "$(truth_file jitdump)" &&
	jit_counts dump.trace >got &&
	test_cmp want got
'

# jit_delta keeps no frame pointer: only the .eh_frame of the jitdump's
# unwinding record says where its caller's return address is. Without
# the record a frame-pointer step skips its caller.
test_expect_success 'jitdump unwinding records: a frameless JIT frame stepped by its own .eh_frame, after the file is gone' '
	"$MEMSIGHT" record -q -e faults -o unwind.trace -- "$S/jit_code" unwind "$PWD" >truth &&
	grep "^jit_code: jit_delta at 0x[0-9a-f]* faulted 300 pages$" truth &&
	rm -f "$(truth_file jitdump)" &&
	"$MEMSIGHT" folded --no-kernel unwind.trace 2>/dev/null | grep ";touch [0-9]*$" >got &&
	cat got && test "$(wc -l <got)" = 1 &&
	grep ";__libc_start_call_main;main;compile_and_run;jit_delta;touch 300$" got &&
	"$MEMSIGHT" record -q -e faults -o frameless.trace -- "$S/jit_code" frameless "$PWD" >truth &&
	"$MEMSIGHT" folded --no-kernel frameless.trace 2>/dev/null | grep ";jit_delta;touch 300$" >got &&
	cat got && ! grep compile_and_run got
'

test_expect_success 'perf map, bare and 0x-prefixed lines: exact, and after the file is gone' '
	"$MEMSIGHT" record -q -e faults -o map.trace -- "$S/jit_code" perfmap >truth &&
	map=$(truth_file "perf map") &&
	test -n "$map" &&
	grep "^[0-9a-f]* [0-9a-f]* jit_alpha$" "$map" &&
	grep "^0x[0-9a-f]* 0x[0-9a-f]* jit_beta$" "$map" &&
	rm -f "$map" &&
	jit_counts map.trace >got &&
	printf "jit_alpha 300\njit_beta 500\n" >want &&
	test_cmp want got &&
	"$MEMSIGHT" info map.trace | grep "^  perf-map  pid [0-9]* *jit_code *2 functions  $map$"
'

test_expect_success 'frame-pointer stacks walk through the JIT frames and name them' '
	"$MEMSIGHT" record -q -g fp -e faults -o fp.trace -- "$S/jit_code" jitdump "$PWD" >truth &&
	rm -f "$(truth_file jitdump)" &&
	jit_counts fp.trace >got &&
	printf "jit_alpha 300\njit_beta 500\n" >want &&
	test_cmp want got
'

test_expect_success 'malformed map lines and a jitdump cut mid-record: said once, skipped, the rest named' '
	"$MEMSIGHT" record -q -e faults -o bad.trace -- "$S/jit_code" bad "$PWD" >truth &&
	rm -f "$(truth_file "perf map")" "$(truth_file jitdump)" &&
	jit_counts bad.trace >got 2>err &&
	printf "jit_alpha 300\njit_beta 500\n" >want &&
	test_cmp want got &&
	"$MEMSIGHT" folded bad.trace >/dev/null 2>err &&
	cat err &&
	test "$(grep -c "perf maps or jitdumps" err)" = 1 &&
	grep "warning: .bad.trace.: 7 lines or records of 2 perf maps or jitdumps .* are cut short or malformed and were skipped$" err &&
	"$MEMSIGHT" info bad.trace >info 2>/dev/null &&
	grep "perf-map .* (6 lines or records skipped)$" info &&
	grep "jitdump .* (1 lines or records skipped)$" info
'

test_expect_success 'a private mount and pid namespace: its own /tmp, the map named by its pid there' '
	if ! unshare -m -p -f true 2>/dev/null; then
		echo "# unshare -m -p is refused here: skipped"; return 0
	fi
	# The program is copied out first: the build may be under /tmp. It
	# lives on a while, as a service does: the recorder, which wakes at
	# least every half second, opens its root while it runs; once it
	# has exited, its private /tmp is gone with it.
	"$MEMSIGHT" record -q -e faults -o ns.trace -- unshare -m -p -f sh -c \
		"mount -t tmpfs none /mnt && cp $S/jit_code /mnt/ && mount -t tmpfs none /tmp &&
		 exec /mnt/jit_code perfmap /tmp 1500" >truth &&
	grep "^jit_code: perf map /tmp/perf-1.map$" truth &&
	jit_counts ns.trace >got &&
	printf "jit_alpha 300\njit_beta 500\n" >want &&
	test_cmp want got &&
	"$MEMSIGHT" info ns.trace | grep "^  perf-map  pid [0-9]* *jit_code .* /tmp/perf-1.map$"
'

JAVA_OPTS="-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:-BackgroundCompilation -Xmx512m"
# The fault stack of the thread that runs main (under JavaMain) with the
# most faults.
java_top() { "$MEMSIGHT" folded "$1" 2>/dev/null | grep ";JavaMain;" | awk '{ print $NF "\t" $0 }' | sort -rn | head -1; }

if command -v javac >/dev/null && command -v java >/dev/null; then
	test_expect_success 'the JVM, -XX:+PreserveFramePointer: its heap grows in the method it compiled, named' '
		javac -d . "$R/GrowCache.java" &&
		"$MEMSIGHT" record -q -e faults -o java.trace -- java -XX:+PreserveFramePointer $JAVA_OPTS GrowCache >truth &&
		grep "^GrowCache: 256000 arrays of 1024 bytes from GrowCache.growCache$" truth &&
		"$MEMSIGHT" info java.trace | grep "^  perf-map  pid [0-9]* *java .*/tmp/perf-[0-9]*.map$" &&
		java_top java.trace >top &&
		cut -c1-300 top &&
		grep ";void GrowCache.growCache(int)[; ]" top
	'

	# Attached while the JVM starts, the recording holds its start-up too,
	# whose stacks can outweigh the method's on a slow machine: the map
	# is carried where a stack names the method at all. Attached once the
	# VM makes its own threads, so that the thread that runs main is among
	# those -p lists: a thread a listed one starts between the listing and
	# the events' opening on it is not followed.
	test_expect_success 'the JVM recorded with -p: the map it writes as it exits is carried' '
		java -XX:+PreserveFramePointer $JAVA_OPTS GrowCache 1000 1500 >truth &
		pid=$! &&
		for i in $(seq 100); do
			grep -q libjvm.so /proc/$pid/maps 2>/dev/null &&
				test "$(ls /proc/$pid/task 2>/dev/null | wc -l)" -ge 5 && break
			sleep 0.05
		done &&
		"$MEMSIGHT" record -q -e faults -p $pid -o javap.trace &&
		wait $pid &&
		grep "^GrowCache: 256000 arrays" truth &&
		"$MEMSIGHT" info javap.trace | grep "^  perf-map  pid $pid " &&
		"$MEMSIGHT" folded javap.trace >all.folded 2>folded.err &&
		{ grep ";JavaMain;.*;void GrowCache.growCache(int)[; ]" all.folded ||
			{ cat folded.err; awk "{ print \$NF, \$0 }" all.folded | sort -rn | head -5 | cut -c1-600; false; }; }
	'

	test_expect_success 'the JVM without frame pointers: one line says where stacks stopped and which flag fixes it' '
		"$MEMSIGHT" record -q -e faults -o javanofp.trace -- java $JAVA_OPTS GrowCache 200 >truth &&
		"$MEMSIGHT" folded javanofp.trace >/dev/null 2>err &&
		cat err &&
		test "$(grep -c "stop short of main" err)" = 1 &&
		grep "[0-9]* ended in code compiled at run time, .*(run Java with -XX:+PreserveFramePointer" err
	'
else
	echo "# javac is missing (apt-get install openjdk-17-jdk-headless): the JVM cases skipped"
fi

if command -v node >/dev/null; then
	test_expect_success 'Node with --perf-basic-prof: the JS function that grows the heap is named' '
		"$MEMSIGHT" record -q -e faults -o node.trace -- node --perf-basic-prof "$R/build_objects.js" >truth &&
		grep "^build_objects: 400000 objects from buildObjects$" truth &&
		"$MEMSIGHT" info node.trace | grep "^  perf-map  pid [0-9]* *node .*/tmp/perf-[0-9]*.map$" &&
		"$MEMSIGHT" folded node.trace 2>/dev/null | grep "^node;" | awk "{ print \$NF \"\t\" \$0 }" | sort -rn | head -1 >top &&
		grep ";JS:\*buildObjects [^;]*build_objects.js:" top
	'
else
	echo "# node is missing (apt-get install nodejs): the Node case skipped"
fi

# CPython's perf trampolines keep no frame pointer. 3.12's -X perf
# writes a perf map, with no unwind entries: they are stepped by their
# known shape. 3.13's -X perf_jit writes a jitdump whose unwinding records
# give each its .eh_frame: stepped by those. Either way the stacks go on
# through each Python caller to main. pyenv's Pythons where the machine
# has them.
pyenv_python() { ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/$1*/bin/python$1 2>/dev/null | tail -1; }
# The page faults of grow_buffers, then those of them whose stack reaches
# main through every Python caller, in order.
py_whole() {
	"$MEMSIGHT" folded --no-kernel -e faults "$1" 2>/dev/null | awk -v f="$R/grow_buffers.py" '
		/;py::grow_buffers:/ {
			n += $NF
			if (index($0, ";__libc_start_call_main;") && index($0, ";py::<module>:" f ";") &&
			    $0 ~ /;py::main:[^;]*;.*;py::build:[^;]*;.*;py::grow_buffers:/)
				m += $NF
		}
		END { print n + 0, m + 0 }'
}
for py in "3.12 perf" "3.13 perf_jit"; do
	ver=${py% *} mode=${py#* }
	bin=$(pyenv_python $ver)
	if [ -z "$bin" ]; then
		echo "# python$ver is not under ${PYENV_ROOT:-$HOME/.pyenv}/versions: the -X $mode case skipped"
		continue
	fi
	case $mode in
	perf) by="0 by the runtime.s unwind tables, [1-9][0-9]* as CPython.s trampolines" ;;
	*) by="[1-9][0-9]* by the runtime.s unwind tables, 0 as CPython.s trampolines" ;;
	esac
	test_expect_success "python$ver -X $mode: the function that grows, and its Python callers up to main, in 95% of its faults" '
		"$MEMSIGHT" record -q -e faults -o py$ver.trace -- "$bin" -X $mode "$R/grow_buffers.py" 300 >truth 2>err &&
		cat truth err && grep "^grow_buffers: 300 buffers of 65536 bytes from grow_buffers$" truth &&
		py_whole py$ver.trace >counts && cat counts &&
		read n m <counts && test "$n" -ge 300 && test $((m * 100)) -ge $((n * 95)) &&
		MEMSIGHT_UNWIND_CHECK=1 "$MEMSIGHT" folded py$ver.trace 2>&1 >/dev/null | grep "frames of JIT code stepped: $by$"
	'
done

# Go inlines grow() into main(); its binaries have no .debug_aranges, so
# the CU of an address is found by the CUs' own ranges.
if command -v go >/dev/null; then
	test_expect_success 'Go: the inlined function that grows, with its file and line, under its caller' '
		cp "$R/gogrow.go" . && GOCACHE=$PWD/gocache GO111MODULE=off go build -o gogrow gogrow.go &&
		"$MEMSIGHT" record -q -e faults -o go.trace -- ./gogrow 100 >truth &&
		grep "^gogrow: 100 slices of 65536 bytes from main.grow, gogrow.go:23$" truth &&
		"$MEMSIGHT" faults --lines go.trace >faults 2>/dev/null &&
		grep -A1 "^		main.grow (inlined) \[gogrow\] .*/gogrow.go:23$" faults >top &&
		cat top && grep "^		main.main+0x[0-9a-f]* \[gogrow\] .*/gogrow.go:3[0-9]$" top &&
		"$MEMSIGHT" folded --no-kernel go.trace 2>/dev/null | grep ";runtime.main;main.main;main.grow [0-9]*$" >grown &&
		# 16 faults a slice, but for the pages the Go runtime clears
		# itself when it reuses a span.
		cat grown && test "$(awk "{ n += \$NF } END { print n }" grown)" -ge 1400
	'
else
	echo "# go is missing (apt-get install golang-go): the Go case skipped"
fi

cd "$TRASH" && for m in $(maps_written); do
	case $m in /tmp/perf-1.map) ;; *) rm -f "$m" ;; esac
done

test_done
