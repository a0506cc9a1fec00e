#!/bin/sh
# The analyzer's internals on their own, without root or a recording:
# hashmaps, suppression matching, the JSON writer, interval naming, the
# event catalogue (test-tool's unit tests, tests/helper/test-unit.c).
. "$(dirname "$0")/test-lib.sh"

# unit NAME [ARGS]: every TAP line of the unit passes, and there are COUNT.
units_pass() {
	count=$1
	shift
	"$BUILD/test-tool" "$@" >out
	status=$?
	cat out
	test $status = 0 && ! grep "^not ok" out && test $(grep -c "^ok" out) = "$count"
}

test_expect_success 'hashmaps find what went in, and lose nothing on removal and growth' '
	units_pass 11 hashmap
'

test_expect_success 'suppressions match as LeakSanitizer patterns do, and the runtime list only the runtime' '
	units_pass 17 suppress
'

test_expect_success 'the JSON writer escapes, nests and replaces bytes that are not UTF-8' '
	units_pass 1 json &&
	sed "1,/^--\$/d" out >doc.json &&
	perl -MJSON::PP -e "local \$/; decode_json(<STDIN>)" <doc.json
'

# Interval naming asks libdwfl once per interval between symbol and section
# bounds; every address must get the name libdwfl gives it directly.
for obj in "$SAMPLES/xor_encoder" "$SAMPLES/nofp/xor_encoder" "$SAMPLES/cxx_threads" "$BUILD/memsight-analyze:3" \
	   /lib/x86_64-linux-gnu/libc.so.6:97 /lib64/ld-linux-x86-64.so.2:5; do
	path=${obj%:*}
	step=1
	test "$path" = "$obj" || step=${obj##*:}
	test -f "$path" || continue
	test_expect_success "interval naming agrees with libdwfl on $(basename "$path"), one byte of code in $step" '
		units_pass 2 symcheck '"$path $step"'
	'
done

test_expect_success 'the event catalogue is consistent' '
	units_pass 4 catalog
'

test_expect_success 'the catalogue gives record -h its groups, in order' '
	sed -n "s/^# \([a-z]*\) [0-9]*\$/\1/p" out >groups &&
	"$MEMSIGHT" record -h >help &&
	sed -n "/^  -e, --event/,/^      --filter/s/^                           \([a-z][a-z]*\)  *[A-Za-z].*/\1/p" help >listed &&
	test_cmp groups listed
'

test_done
