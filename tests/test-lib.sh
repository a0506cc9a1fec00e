# tests/test-lib.sh: the little TAP library every tests/tNNNN-*.sh sources.
#
#   test_expect_success 'description' 'shell code'   one TAP test; the code runs in
#                                                   a subshell, its output kept for
#                                                   the failure report only
#   test_expect_alone 'description' 'shell code'     the same, with no other test's
#                             case running meanwhile (below); TEST_ALONE=1 makes
#                             every case of the script so
#   test_must_fail CMD...     CMD must exit non-zero, and not by a signal (a crash)
#   test_cmp EXPECTED ACTUAL  files must be equal (a diff is shown when not)
#   test_skip_unless_recording   skip the whole script when perf_event_open is refused
#   recording_allowed         true when it is not (for a script whose other tests always run)
#   skip_all REASON           the whole script is skipped, with the reason
#   memcg_32mib NAME          a 32 MiB memory cgroup without swap, in $CG (empty: none here)
#   test_done                 prints the plan; exit status for prove
#   MALLOC_VIA=uprobes sh tNNNN.sh   the script's `memsight record` traces the malloc
#                             family with --malloc-via uprobes, not the default path
#
# Variables: $TOP (the source tree), $BUILD (binaries: build/, or what
# MEMSIGHT_BUILD names, such as the sanitized build-san/), $MEMSIGHT,
# $SAMPLES (the sample programs, always build/samples: they are what is
# recorded, built as users build theirs), $TRASH (a scratch directory
# removed at the end), $ALLOC_AT (a pattern for where an allocation's top
# frame is, after its function's name: the wrapper's call, or with
# MALLOC_VIA=uprobes the entry of glibc's function), $WRAPPED (1 when a
# command's malloc family goes through the wrapper, whose object then is
# among those a malloc recording's stacks run in).

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${MEMSIGHT_BUILD:-$TOP/build}
MEMSIGHT=$BUILD/memsight
SAMPLES=$TOP/build/samples
# The end of a frame's line in text: its file:line where the object has
# debug information (shown by default), or nothing.
SRCLINE='\( [^ ]*:[0-9][0-9]*\)\{0,1\}$'
PATH=$BUILD:$PATH
ALLOC_AT='+0x[0-9a-f]* \[libmemsight-sample.so\]'
WRAPPED=1
if [ "${MALLOC_VIA:-}" = uprobes ]; then
	ALLOC_AT='+0x0 \[libc.so.6\]'
	WRAPPED=0
fi
export TOP BUILD MEMSIGHT SAMPLES PATH
LC_ALL=C
export LC_ALL

TRASH=$(mktemp -d "${TMPDIR:-/tmp}/memsight-test.XXXXXX")
trap 'rm -rf "$TRASH"' EXIT
cd "$TRASH" || exit 1

# The same script through the other path of the malloc family: its
# recordings pass --malloc-via, whatever else they ask.
if [ -n "${MALLOC_VIA:-}" ]; then
	mkdir "$TRASH/.via" &&
		printf '#!/bin/sh\nif [ "$1" = record ]; then shift; exec "%s" record --malloc-via %s "$@"; fi\nexec "%s" "$@"\n' \
			"$MEMSIGHT" "$MALLOC_VIA" "$MEMSIGHT" >"$TRASH/.via/memsight" &&
		chmod +x "$TRASH/.via/memsight" || exit 1
	MEMSIGHT=$TRASH/.via/memsight
fi
# The analyzer's cache of decoded objects: the test's own, never ~/.cache.
MEMSIGHT_CACHE_DIR=$TRASH/.cache
export MEMSIGHT_CACHE_DIR

# memcg_32mib NAME: a memory cgroup of 32 MiB with no swap (cgroup v2, or
# v1's memory hierarchy), its directory in $CG; CG empty where there is none.
memcg_32mib() {
	CG=
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		CG=/sys/fs/cgroup/$1-$$
		mkdir $CG && echo $((32 << 20)) >$CG/memory.max && { echo 0 >$CG/memory.swap.max 2>/dev/null || :; } || CG=
	elif [ -d /sys/fs/cgroup/memory ]; then
		CG=/sys/fs/cgroup/memory/$1-$$
		mkdir $CG && echo $((32 << 20)) >$CG/memory.limit_in_bytes || CG=
	fi
}

test_count=0
test_failed=0

# make check runs the scripts two at a time. A case that records the whole
# system (-a), or reads or changes what every recording sees (the uprobes
# defined, kernel.kptr_restrict, kernel.perf_event_paranoid, the recorders
# running), runs alone: it holds the tests' lock exclusively, every other
# case holds it shared. The lock is one file in the build directory for
# every script of a run (MEMSIGHT_TEST_LOCK; not in a directory others can
# write); fd 8 is a turnstile, so that a case waiting to run alone keeps
# new cases from starting before it. The case's own commands do not
# inherit either descriptor.
MEMSIGHT_TEST_LOCK=${MEMSIGHT_TEST_LOCK:-$TOP/build/tests.lock}
[ -w "$(dirname "$MEMSIGHT_TEST_LOCK")" ] || MEMSIGHT_TEST_LOCK=$TRASH/.tests.lock
export MEMSIGHT_TEST_LOCK
TEST_ALONE=${TEST_ALONE:-}
exec 8>>"$MEMSIGHT_TEST_LOCK.turnstile" 9>>"$MEMSIGHT_TEST_LOCK" || exit 1

# test_case LOCK 'description' 'shell code': LOCK is -s (shared), -x
# (alone) or none (a case that runs whole scripts, whose cases lock).
test_case() {
	test_count=$((test_count + 1))
	[ -z "${MEMSIGHT_TEST_TIMES:-}" ] || test_w0=$(date +%s.%N)
	if [ "$1" != none ]; then
		flock -x 8 && flock "$1" 9 && flock -u 8
	fi
	# The time taken is counted from when the case holds the lock: the
	# wait for it is other cases' time.
	[ -z "${MEMSIGHT_TEST_TIMES:-}" ] || test_t0=$(date +%s.%N)
	(exec 8>&- 9>&-; eval "$3") >"$TRASH/.log" 2>&1
	test_rc=$?
	[ "$1" = none ] || flock -u 9
	shift
	if [ $test_rc = 0 ]; then
		echo "ok $test_count - $1"
		[ -z "${MEMSIGHT_TEST_TIMES:-}" ] ||
			awk -v w="$test_w0" -v a="$test_t0" -v b="$(date +%s.%N)" 'BEGIN {
				printf "# took %.1f s", b - a
				if (a - w >= 0.05) printf " after %.1f s waiting for the lock", a - w
				printf "\n" }'
	else
		echo "not ok $test_count - $1"
		# On stderr, which prove shows without -v: a CI log then says why.
		{
			printf '%s\n' "$2" | sed 's/^/#   | /'
			sed 's/^/#   /' "$TRASH/.log" | tail -40
		} >&2
		test_failed=$((test_failed + 1))
	fi
}

test_expect_success() {
	if [ -n "$TEST_ALONE" ]; then test_case -x "$@"; else test_case -s "$@"; fi
}

test_expect_alone() {
	test_case -x "$@"
}

test_must_fail() {
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "test_must_fail: '$*' succeeded" >&2
		return 1
	fi
	if [ $rc -gt 128 ]; then
		echo "test_must_fail: '$*' died of signal $((rc - 128))" >&2
		return 1
	fi
	return 0
}

test_cmp() {
	diff -u "$1" "$2"
}

# The one line of a failure: exactly one line on stderr, naming the problem.
test_one_line() {
	n=$(wc -l <"$1")
	if [ "$n" -ne 1 ]; then
		echo "expected one line on stderr, got $n:" >&2
		cat "$1" >&2
		return 1
	fi
}

# Run test files (their names, without .sh) on the AddressSanitizer and
# UndefinedBehaviorSanitizer build in build-san/, a test each: any memory
# error, leak or undefined behaviour ends a program there with status 99
# and a report on stderr, and its test fails. The HTML pages are written by
# the sanitized build but not loaded in a browser (MEMSIGHT_TEST_BROWSER=no):
# what the browser runs is the same bytes either way, and t0780 loads them
# on the normal build. A name with a trailing & is a file that mostly
# waits on timed programs: it starts first and runs beside the others,
# its test counted after theirs (its cases take the tests' lock as
# always).
test_sanitized() {
	san=$TOP/build-san
	[ -x "$san/memsight-analyze" ] && [ -x "$san/memsight-flamegraph" ] && [ -x "$san/test-tool" ] ||
		skip_all "no sanitized build (make SANITIZE=1 sanitized)"
	ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:exitcode=99
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
	export ASAN_OPTIONS UBSAN_OPTIONS
	beside=
	for t in "$@"; do
		case $t in
		*\&)
			t=${t%&} && beside="$beside $t" && rm -f "$TRASH/$t.rc" &&
			{ (MEMSIGHT_BUILD=$san MEMSIGHT_TEST_BROWSER=no sh "$TOP/tests/$t.sh" >"$TRASH/$t.out" 2>"$TRASH/$t.err"
				echo $? >"$TRASH/$t.rc") 8>&- 9>&- & } ;;
		esac
	done
	for t in "$@"; do
		case $t in *\&) continue ;; esac
		test_case none "$t passes on the sanitized build" "
			MEMSIGHT_BUILD='$san' MEMSIGHT_TEST_BROWSER=no sh '$TOP/tests/$t.sh' >out 2>err;
			test_sanitized_ok \$? out err
		"
	done
	for t in $beside; do
		test_case none "$t passes on the sanitized build" "
			while [ ! -s '$TRASH/$t.rc' ]; do sleep 0.2; done;
			test_sanitized_ok \$(cat '$TRASH/$t.rc') '$TRASH/$t.out' '$TRASH/$t.err'
		"
	done
}

# test_sanitized_ok STATUS OUT ERR: a sanitized test file's run passed.
test_sanitized_ok() {
	cat "$2" "$3" &&
	test "$1" -eq 0 &&
	! grep -q '^not ok' "$2" &&
	! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$3" "$2"
}

skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

# Can this machine record (perf_event_open allowed)? The reason it cannot
# is left in $TRASH/.probe.err.
recording_allowed() {
	flock -s 9
	"$BUILD/memsight-record" -q -e faults -o "$TRASH/.probe.trace" -- true 2>"$TRASH/.probe.err" 9>&- &&
		rm -f "$TRASH/.probe.trace"
	set -- $?
	flock -u 9
	return $1
}

test_skip_unless_recording() {
	if ! recording_allowed; then
		skip_all "recording is not possible here: $(head -1 "$TRASH/.probe.err")"
	fi
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" -eq 0 ]
}

# json_valid COMMAND FILE: FILE is what formats/json.schema.json says
# COMMAND's --json is (python3-jsonschema, which make test-deps installs).
json_valid() {
	/usr/bin/python3 -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
jsonschema.validate(json.load(open(sys.argv[3])), {"$ref": "#/$defs/" + sys.argv[2], "$defs": s["$defs"]})
' "$TOP/formats/json.schema.json" "$1" "$2"
}

# json_valid_all <LIST: each line of LIST, "COMMAND FILE", as json_valid
# would check it, in one python3 (starting one costs more than checking a
# file); every file that fails is named.
json_valid_all() {
	/usr/bin/python3 -c '
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
bad = 0
for line in sys.stdin:
    c, f = line.split()
    try:
        jsonschema.validate(json.load(open(f)), {"$ref": "#/$defs/" + c, "$defs": s["$defs"]})
    except Exception as e:
        bad += 1
        print("%s, as %s: %s" % (f, c, str(e).splitlines()[0]))
sys.exit(1 if bad else 0)
' "$TOP/formats/json.schema.json"
}
