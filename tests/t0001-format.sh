#!/bin/sh
# The trace file format: round trips, and every kind of damage.
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'every codec round-trips byte for byte' '
	"$BUILD/test-tool" roundtrip >out &&
	cat out &&
	test $(grep -c "^ok" out) = 3
'

test_expect_success 'packed stack dumps read back byte for byte, and malformed ones are refused' '
	"$BUILD/test-tool" stackdump >out &&
	cat out &&
	! grep "^not ok" out &&
	test $(grep -c "^ok" out) = 31
'

for codec in none zstd zlib; do
	test_expect_success "a $codec trace reads back complete and in time order" '
		"$BUILD/test-tool" write t.trace --codec '$codec' --records 5000 &&
		"$BUILD/test-tool" read t.trace >out &&
		grep -x "records 5000" out &&
		grep -x "ordered yes" out &&
		grep -x "complete yes" out &&
		grep -x "lost 3" out &&
		! grep "^stop" out
	'
done

# 400 DATA chunks: enough for the read-ahead thread and for the CRCs to be
# checked on two threads; the records must still come one after another.
for codec in none zstd; do
	test_expect_success "a $codec trace of 400 chunks reads back whole through the read-ahead" '
		"$BUILD/test-tool" write t.trace --codec '$codec' --records 400000 &&
		"$BUILD/test-tool" read t.trace >out &&
		grep -x "records 400000" out &&
		grep -x "sequence whole" out &&
		grep -x "complete yes" out &&
		! grep "^stop" out
	'
done

test_expect_success 'a flipped byte late in a large file stops reading at that chunk' '
	"$BUILD/test-tool" write t.trace --codec none --records 400000 &&
	size=$(stat -c %s t.trace) &&
	at=$((size * 3 / 4)) &&
	"$BUILD/test-tool" flip t.trace $at &&
	"$BUILD/test-tool" read t.trace >out &&
	chunk_at=$(sed -n "s/^stop chunk [0-9]* at byte \([0-9]*\) is corrupt (crc mismatch)$/\1/p" out) &&
	test -n "$chunk_at" &&
	test "$chunk_at" -le "$at" && test $((at - chunk_at)) -lt 48032 &&
	grep -x "sequence whole" out &&
	records=$(sed -n "s/^records //p" out) &&
	test $((records % 1000)) = 0 && test "$records" -gt 290000 && test "$records" -le 300000
'

test_expect_success 'a cut file is read up to its last good chunk and says where it stopped' '
	"$BUILD/test-tool" write t.trace --codec zstd --records 5000 &&
	size=$(stat -c %s t.trace) &&
	truncate -s $((size - 100)) t.trace &&
	"$BUILD/test-tool" read t.trace >out &&
	grep -x "records 5000" out &&
	grep -x "complete no" out &&
	grep "^stop cut short at byte" out
'

test_expect_success 'a file cut inside its data loses only the chunks after the cut' '
	"$BUILD/test-tool" write t.trace --codec none --records 5000 &&
	truncate -s 150000 t.trace &&
	"$BUILD/test-tool" read t.trace >out &&
	records=$(sed -n "s/^records //p" out) &&
	test "$records" -gt 0 && test "$records" -lt 5000 &&
	test $((records % 1000)) = 0 &&
	grep "^stop cut short at byte" out
'

test_expect_success 'a recording that never finished says so' '
	"$BUILD/test-tool" write t.trace --no-trailer &&
	"$BUILD/test-tool" read t.trace >out &&
	grep -x "records 5000" out &&
	grep "^stop ends at byte .* without a trailer" out
'

test_expect_success 'a flipped byte in a chunk stops reading at that chunk, with its crc' '
	"$BUILD/test-tool" write t.trace --codec none --records 5000 &&
	"$BUILD/test-tool" flip t.trace 100000 &&
	"$BUILD/test-tool" read t.trace >out &&
	grep "^stop chunk [0-9]* at byte [0-9]* is corrupt (crc mismatch)" out &&
	records=$(sed -n "s/^records //p" out) &&
	test "$records" -lt 5000
'

test_expect_success 'a flipped byte in the header is refused in one line' '
	"$BUILD/test-tool" write t.trace &&
	"$BUILD/test-tool" flip t.trace 30 &&
	test_must_fail "$BUILD/test-tool" read t.trace 2>err &&
	test_one_line err && grep "header is corrupt" err
'

test_expect_success 'wrong magic is refused in one line by the analyzer' '
	echo "this is not a trace at all, just text" >notrace &&
	test_must_fail "$MEMSIGHT" info notrace >out 2>err &&
	test_one_line err && grep "not a memsight trace" err &&
	test ! -s out
'

test_expect_success 'a future version is refused with the way out' '
	"$BUILD/test-tool" write t.trace &&
	printf "\\011" | dd of=t.trace bs=1 seek=8 conv=notrunc 2>/dev/null &&
	test_must_fail "$MEMSIGHT" info t.trace 2>err &&
	test_one_line err && grep "version 9 is newer than this memsight reads (3); use a newer memsight" err
'

# A ring of 6 segments of 128 KiB; each holds two chunks of 1000 records
# (uncompressed), so 50,000 records went through 25 segments.
test_expect_success 'a ring keeps its last six segments, in order, with the oldest one'"'"'s state' '
	"$BUILD/test-tool" write r.trace --codec none --records 50000 --ring 6 131072 &&
	test $(stat -c %s r.trace) = $((4096 + 6 * 131072)) &&
	"$BUILD/test-tool" read r.trace >out &&
	cat out &&
	grep "^records 12000$" out && grep "^first 38000$" out && grep "^last 49999$" out &&
	grep "^ordered yes$" out && grep "^complete yes$" out && ! grep "^stop" out &&
	grep "^meta 2$" out && grep "^state pid 20$" out &&
	grep "^segments 6 of 6$" out && grep "^seq 20..25$" out && grep "^overwritten 38000 records$" out
'

test_expect_success 'a ring: what an earlier pass left in the newest segment is not read' '
	"$BUILD/test-tool" write r.trace --codec none --records 49000 --ring 6 131072 &&
	"$BUILD/test-tool" read r.trace >out &&
	cat out &&
	grep "^records 11000$" out && grep "^first 38000$" out && grep "^last 48999$" out && grep "^ordered yes$" out
'

test_expect_success 'a ring: damage ends its segment only, and a ring without trailer reads' '
	"$BUILD/test-tool" write r.trace --codec none --records 50000 --ring 6 131072 &&
	"$BUILD/test-tool" flip r.trace $((4096 + 3 * 131072 + 300)) &&
	"$BUILD/test-tool" read r.trace >out &&
	grep "^records 10000$" out && grep "^last 49999$" out && grep "^ordered yes$" out &&
	"$BUILD/test-tool" write r.trace --codec zstd --records 50000 --ring 6 131072 --no-trailer &&
	"$BUILD/test-tool" read r.trace >out &&
	grep "^records 50000$" out && grep "^complete no$" out &&
	grep "^stop has no trailer: a ring still being written, or whose recorder was killed" out
'

# A ring read as it is written, as memsight top's commands read one: the
# writer adds 3,000 records (a segment and a half) between two looks, ten
# times, so 30,000 records go through a ring that holds 12,000 and its
# window moves on 6 times. Read on into each new segment, every record
# comes once, in order.
test_expect_success 'a ring read as it is written: read on into each segment begun, every record once' '
	"$BUILD/test-tool" follow r.trace 6 131072 --onward 3000 3000 3000 3000 3000 3000 3000 3000 3000 3000 >out &&
	cat out &&
	grep "^records 30000 of 30000$" out && grep "^first 0$" out && grep "^last 29999$" out &&
	grep "^ordered yes$" out && grep "^sequence whole$" out && grep "^complete yes$" out &&
	grep "^look 5: seq 2\.\.7, moved 1$" out && grep "^look 11: seq 9\.\.14, moved 6$" out
'

# The reader can go on only from the segment it read last: a writer that
# has gone round the ring past it (7.5 segments of 6 in one step), or a
# reader not asked to read on past the newest segment, stops with why.
test_expect_success 'a ring read as it is written: overtaken, or not to read on, it stops with why' '
	test_must_fail "$BUILD/test-tool" follow r.trace 6 131072 --onward 3000 15000 3000 >out &&
	cat out &&
	grep "^look 2: the ring.s window moved on past the segment read last$" out &&
	grep "^records 1000 of 18000$" out && grep "^sequence whole$" out &&
	test_must_fail "$BUILD/test-tool" follow r.trace 6 131072 1000 3000 >out &&
	cat out &&
	grep "^look 2: the ring.s window moved on: its recorder began a segment$" out &&
	"$BUILD/test-tool" follow r.trace 6 131072 1000 500 500 >out &&
	grep "^records 2000 of 2000$" out && grep "^look 4: seq 1\.\.1, moved 0$" out
'

test_expect_success 'an empty file and a directory are refused in one line' '
	: >empty &&
	test_must_fail "$MEMSIGHT" report empty 2>err &&
	test_one_line err && grep "is empty" err &&
	mkdir dir &&
	test_must_fail "$MEMSIGHT" report dir 2>err &&
	test_one_line err && grep "not a regular file" err
'

test_done
