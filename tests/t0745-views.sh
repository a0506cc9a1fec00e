#!/bin/sh
# Every analyzer command, with no options, on every kind of recording: a
# command, -e malloc, --sample-bytes, --leak-check, -a and a ring's
# snapshot. Each prints a result, or says on its last line of stderr, about
# that trace, why it has none; none crashes.
# Every case runs alone (tests/test-lib.sh): it records the whole system.
TEST_ALONE=1
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES

test_expect_success 'six kinds of recording' '
	"$MEMSIGHT" record -q -o default.trace -- "$S/loop_leak" 100 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc -o malloc.trace -- "$S/loop_leak" 100 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc --sample-bytes 1K -o sampled.trace -- "$S/loop_leak" 100 >/dev/null &&
	"$MEMSIGHT" record -q -e malloc --leak-check -o checked.trace -- "$S/leak_cases" tails >/dev/null &&
	"$MEMSIGHT" record -q -a -o system.trace -- sleep 0.3 >/dev/null &&
	"$MEMSIGHT" record -q --ring 64M --trigger signal -o ring.trace -- \
		sh -c "$S/loop_leak 100 >/dev/null; kill -USR1 \$PPID; sleep 3" &&
	mv ring.*.signal.trace snapshot.trace
'

"$MEMSIGHT" --list-commands >commands
for t in default malloc sampled checked system snapshot; do
	test_expect_success "every command on the $t recording: a result, or why not" '
		for c in $(cat commands); do
			case $c in
			record | archive) continue ;;
			diff) set -- $t.trace $t.trace ;;
			pprof) set -- -o p.pb.gz $t.trace ;;
			*) set -- $t.trace ;;
			esac
			"$MEMSIGHT" $c "$@" >out 2>err
			rc=$?
			test $rc -lt 128 || { echo "$c crashed ($rc)"; cat err; return 1; }
			test $rc = 0 && test -s out && continue
			test $c = pprof && test $rc = 0 && test -s p.pb.gz && continue
			tail -1 err | grep -q "$t.trace" || { echo "$c: exit $rc, no result and no reason:"; cat err; return 1; }
		done
	'
done

test_done
