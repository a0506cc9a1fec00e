#!/bin/sh
# Page faults told by kind: first touches, copy-on-write after fork, the
# kernel filling a user buffer, an instruction fetch, each counted exactly
# under the function the sample says made it; and a kernel without the
# exceptions tracepoints records faults all the same, without kinds.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

TRACEFS=/sys/kernel/tracing
[ -d $TRACEFS/events ] || TRACEFS=/sys/kernel/debug/tracing
if [ ! -d $TRACEFS/events/exceptions ]; then
	skip_all "this kernel has no exceptions tracepoints (not x86?): faults have no kinds here"
fi

N=64

# The faults of kinds K (--fault-type K ...) whose stack holds function F.
under() {
	f=$1
	shift
	"$MEMSIGHT" folded -e faults "$@" fk.trace 2>/dev/null | awk -v f="$f" '
		{ n = split($0, a, ";"); w = a[n]; sub(/.* /, "", w); sub(/ [0-9]+$/, "", a[n]) }
		{ for (i = 1; i <= n; i++) if (a[i] == f) { s += w; break } }
		END { print s + 0 }'
}

test_expect_success 'a sample that makes faults of every kind' '
	"$MEMSIGHT" record -q -o fk.trace -- "$SAMPLES/fault_kinds" $N >truth &&
	cat truth &&
	grep "^fault_kinds: first_touch $N pages" truth &&
	grep "^fault_kinds: cow_writer $N pages in pid" truth &&
	grep "^fault_kinds: read_zero $N pages" truth &&
	grep "^fault_kinds: call_fresh 1 page" truth &&
	grep "^fault_kinds: untouched_frame 1 page" truth
'

test_expect_success "first touches: $N writes, none of them copy-on-write or by the kernel" '
	test "$(under first_touch --fault-type write)" = $N &&
	test "$(under first_touch --fault-type cow --fault-type kernel --fault-type read)" = 0
'

test_expect_success "the forked child: $N copy-on-write faults in its writer" '
	test "$(under cow_writer --fault-type cow)" = $N &&
	test "$(under cow_writer)" = $N
'

test_expect_success "read() from /dev/zero: $N kernel-mode faults under the function that called it" '
	test "$(under read_zero --fault-type kernel)" = $N &&
	test "$(under read_zero --fault-type write --fault-type kernel)" = $N &&
	test "$(under read_zero --fault-type read --fault-type exec --fault-type cow)" = 0
'

test_expect_success 'a call into a fresh executable page: an instruction fetch fault on it' '
	"$MEMSIGHT" folded -e faults --fault-type exec fk.trace 2>/dev/null >exec &&
	grep "fault_kinds-code" exec &&
	test "$(grep -c fault_kinds-code exec)" -ge 1
'

test_expect_success 'a fault while the stack pointer is below every stack page: its one frame, not a stack said to stop short' '
	"$MEMSIGHT" folded -e faults --fault-type write fk.trace 2>err >write &&
	grep "^fault_kinds;untouched_frame 1$" write &&
	{ ! grep "no stack bytes" err || { cat err; false; }; }
'

test_expect_success 'faults: the kinds by process and by mapping, and in the JSON' '
	"$MEMSIGHT" faults -T 100 fk.trace >faults 2>/dev/null &&
	grep "^    FAULTS    MAJOR     READ    WRITE     EXEC      COW   KERNEL  TYPE   MAPPING$" faults &&
	child=$(sed -n "s/^fault_kinds: cow_writer $N pages in pid \([0-9]*\)$/\1/p" truth) &&
	awk -v pid=$child -v n=$N "\$7 == pid && \$8 == \"fault_kinds\" { found = 1; if (\$5 < n) exit 1 } END { exit !found }" faults &&
	"$MEMSIGHT" faults --json fk.trace >faults.json 2>/dev/null &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
		my (\$c) = grep { \$_->{pid} == $child } @{\$d->{processes}};
		die q{child} unless \$c && \$c->{kinds}{cow} >= $N;
		die q{total} unless \$d->{kinds}{kernel} >= $N && \$d->{kinds}{exec} >= 1" <faults.json
'

test_expect_success 'report: a line per kind, flame graphs take --fault-type' '
	"$MEMSIGHT" report fk.trace >report 2>/dev/null &&
	for k in read write exec cow kernel; do grep -E "^ +[0-9]+ $k " report || return 1; done &&
	"$MEMSIGHT" flamegraph --fault-type cow fk.trace >cow.svg 2>/dev/null &&
	grep -q cow_writer cow.svg && ! grep -q read_zero cow.svg
'

test_expect_success 'a bad --fault-type, or one with another event: one line, exit 2' '
	test_must_fail "$MEMSIGHT" folded --fault-type nosuch fk.trace 2>err &&
	test_one_line err && grep "unknown fault type .nosuch.: use read, write, exec, cow or kernel" err &&
	test_must_fail "$MEMSIGHT" folded -e brk --fault-type cow fk.trace 2>err &&
	test_one_line err && grep "fault-type is for faults" err
'

# A copy of tracefs without the exceptions tracepoints: a kernel or an
# architecture that lacks them.
mkdir -p fakefs/events
cp $TRACEFS/events/header_page fakefs/events/ 2>/dev/null

test_expect_success 'without the exceptions tracepoints: the software event, said once, no kinds' '
	MEMSIGHT_TRACEFS=$TRASH/fakefs "$MEMSIGHT" record -q -e faults -o sw.trace -- "$SAMPLES/fault_kinds" $N >/dev/null 2>err &&
	cat err && test_one_line err &&
	grep "no exceptions tracepoints; recording the page-faults software event instead" err &&
	"$MEMSIGHT" info sw.trace >info &&
	grep "^  page-faults  *faults  *[1-9][0-9]* samples  with stacks$" info &&
	"$MEMSIGHT" folded -e faults sw.trace 2>/dev/null | grep -q ";cow_writer" &&
	"$MEMSIGHT" faults sw.trace 2>/dev/null | grep "^# no fault kinds: recorded with the page-faults software event$" &&
	test_must_fail "$MEMSIGHT" folded --fault-type cow sw.trace 2>err &&
	test_one_line err && grep "has no fault kinds: it was recorded with the page-faults software event" err
'

test_done
