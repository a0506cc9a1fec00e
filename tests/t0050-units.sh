#!/bin/sh
# The analyzer's internals on their own, without root or a recording:
# hashmaps, suppression matching, the JSON writer, interval naming, the
# event catalogue, chunk CRCs made from their payloads' CRCs (test-tool's
# unit tests, tests/helper/test-unit.c); and the recorder's stack-dump
# scrub, the wrapper's packing of dumps, the leak-check scan and what a
# ring restates of processes (test-record, tests/helper/test-record.c).
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

test_expect_success 'SHA-256 as sha256sum computes it: empty, one block, lengths around the padding, a big file' '
	: >empty &&
	printf abc >abc &&
	for n in 55 56 63 64 65 119 120; do head -c $n /dev/urandom >len$n; done &&
	for f in empty abc len55 len56 len63 len64 len65 len119 len120 "$MEMSIGHT"; do
		"$BUILD/test-tool" sha256 "$f" >got &&
		sha256sum "$f" | cut -d" " -f1 >want &&
		test_cmp want got || return 1
	done &&
	"$BUILD/test-tool" sha256 abc >got &&
	echo ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad >want &&
	test_cmp want got
'

test_expect_success 'hashmaps find what went in, and lose nothing on removal and growth' '
	units_pass 11 hashmap
'

test_expect_success 'a chunk'"'"'s CRC made from its payload'"'"'s CRC is the one a pass over the payload makes' '
	units_pass 7 crc
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

test_expect_success 'C++ names: template arguments shortened to <>, operators kept whole' '
	units_pass 8 names
'

test_expect_success 'the scrub keeps what unwinding reads and no secret: a known process, one learned from /proc; one it cannot learn keeps what could be pointers; 64- and 32-bit; a syscall exit keeps its arguments alone; its AVX2 path agrees; registers by the same rule' '
	"$BUILD/test-record" scrub >out
	status=$?
	cat out &&
	test $status = 0 && ! grep "^not ok" out && test $(grep -c "^ok" out) = 38
'

test_expect_success 'the wrapper packs a stack dump by its rule, and its AVX2 and AVX-512 packings give the same bytes (skipped where the CPU lacks them)' '
	"$BUILD/test-record" pack >out
	status=$?
	cat out &&
	test $status = 0 && ! grep "^not ok" out && test $(grep -c "^ok" out) = 3
'

test_expect_success 'what a ring restates of processes, from records read a CPU'"'"'s ring at a time: an exec, a fork, an exit or a library read after what came later on another CPU; anonymous memory, up to a bound; a process known by its exit alone left out; less where all does not fit' '
	"$BUILD/test-record" procs >out
	status=$?
	cat out &&
	test $status = 0 && ! grep "^not ok" out && test $(grep -c "^ok" out) = 9
'

test_expect_success 'the leak check'"'"'s scan: a finished thread'"'"'s stack holds no root, on a 64 MiB boundary too; a glibc arena heap there is scanned' '
	"$BUILD/test-record" reach >out
	status=$?
	cat out &&
	test $status = 0 && ! grep "^not ok" out && test $(grep -c "^ok" out) = 3
'

test_done
