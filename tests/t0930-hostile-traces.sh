#!/bin/sh
# A trace from a stranger is input like any other: what it carries names
# its own frames and never another trace's. A hostile trace embeds, for a
# program's build-id, a debug file of another program (same build-id,
# other function names, compressed DWARF); an honest trace of the same
# program, analyzed afterwards with the same cache, must still name its
# own functions.
. "$(dirname "$0")/test-lib.sh"

test_skip_unless_recording

# One build-id for both, as a forger would set it.
BID=5e1ec7ab1e0ddba11c0ffee0ddf00dcafe5a5a5a
DBG=/usr/lib/debug/.build-id/$(echo $BID | cut -c1-2)/$(echo $BID | cut -c3-).debug
cleanup_debug() { rm -f "$DBG"; }
trap 'cleanup_debug; rm -rf "$TRASH"' EXIT

# The same code under two names: the functions lie at the same addresses.
program() {
	cat >"$1.c" <<-EOF
	#include <stdlib.h>
	#include <string.h>
	__attribute__((noinline)) void $2(long n)
	{
		for (long i = 0; i < n; i++)
			memset(malloc(4096), 1, 4096);
	}
	int main(void) { $2(64); return 0; }
	EOF
	cc -O1 -g -fno-omit-frame-pointer -fno-inline -Wl,--build-id=0x$BID -o "$1" "$1.c"
}

test_expect_success 'two programs with one build-id, their debug files apart' '
	program honest real_function &&
	program forged evil_function &&
	test "$(readelf -n honest | sed -n "s/.*Build ID: //p")" = $BID &&
	test "$(readelf -n forged | sed -n "s/.*Build ID: //p")" = $BID &&
	objcopy --only-keep-debug --compress-debug-sections=zlib forged forged.debug &&
	objcopy --only-keep-debug honest honest.debug &&
	cp honest run && strip run && cp forged run.forged && strip run.forged &&
	cmp run run.forged &&
	mkdir -p "$(dirname "$DBG")"
'

test_expect_success 'an honest trace, and a hostile one: the same with a forged debug entry, compressed' '
	cp honest.debug "$DBG" &&
	"$MEMSIGHT" record -q -e faults -o honest.trace -- ./run &&
	cleanup_debug &&
	"$MEMSIGHT" info honest.trace | grep "^  debug .* $BID " &&
	"$BUILD/test-tool" reembed honest.trace hostile.trace 3 $BID forged.debug &&
	readelf -SW forged.debug | grep " \.debug_info .* C "
'

test_expect_success 'the hostile trace names its frames as it claims' '
	"$MEMSIGHT" folded hostile.trace >hostile.folded 2>/dev/null &&
	grep ";evil_function;" hostile.folded &&
	! grep real_function hostile.folded
'

test_expect_success 'the honest trace, analyzed after it with the same cache, names its own functions' '
	"$MEMSIGHT" folded honest.trace >honest.folded 2>/dev/null &&
	grep ";real_function;" honest.folded &&
	! grep evil_function honest.folded &&
	"$MEMSIGHT" folded hostile.trace >/dev/null 2>&1 &&
	"$MEMSIGHT" folded honest.trace >honest.again 2>/dev/null &&
	test_cmp honest.folded honest.again &&
	! ls "$MEMSIGHT_CACHE_DIR" | grep "$BID.*debugcut"
'

test_expect_success 'a planted cache entry under a link or as a FIFO is not read' '
	for f in "$MEMSIGHT_CACHE_DIR"/memsight-$BID-*.elf; do
		rm -f "$f" && ln -s /etc/passwd "$f" || return 1
	done &&
	"$MEMSIGHT" folded honest.trace >honest.linked 2>/dev/null &&
	test_cmp honest.folded honest.linked &&
	for f in "$MEMSIGHT_CACHE_DIR"/memsight-$BID-*.elf; do
		rm -f "$f" && mkfifo "$f" || return 1
	done &&
	timeout 20 "$MEMSIGHT" folded honest.trace >honest.fifo 2>/dev/null &&
	test_cmp honest.folded honest.fifo
'

# Bombs: the ELF a trace carries, and the compressed sections in it, may
# expand to a bound set by the trace's own size (32 times it, and 256 MiB);
# past it an object is refused with one line, and nothing is inflated.
test_expect_success 'a compressed-section bomb: refused with one line, in bounded memory' '
	"$BUILD/test-tool" zbomb zb.bin 1024 &&
	objcopy --add-section .zdebug_info=zb.bin run bomb.elf &&
	"$BUILD/test-tool" reembed honest.trace zbomb.trace 3 $BID bomb.elf &&
	(ulimit -v 900000 && MEMSIGHT_CACHE_DIR=$PWD/cz timeout 60 "$MEMSIGHT" folded zbomb.trace >zbomb.folded 2>err) &&
	cat err &&
	test "$(grep -c "the trace.s copy of .* (build-id $BID) has compressed sections that inflate to 1024 MiB, past the [0-9]* MiB its objects may expand to (32 times the trace.s size, and 256 MiB): not used" err)" = 1 &&
	test -s zbomb.folded &&
	test "$(du -sm cz | cut -f1)" -lt 64
'

test_expect_success 'a trace of objects that are zeros: what they expand to stays bounded, and each refused one is said' '
	head -c $((63 << 20)) /dev/zero >zeros &&
	cp honest.trace zeros.trace &&
	"$MEMSIGHT" info honest.trace | sed -n "s/^  \(minimal\|full\|debug\) .* \([0-9a-f]\{40\}\)  .*/\1 \2/p" >entries &&
	test "$(wc -l <entries)" -ge 5 &&
	while read mode bid; do
		case $mode in minimal) m=1 ;; full) m=2 ;; debug) m=3 ;; esac
		"$BUILD/test-tool" reembed zeros.trace zeros.next $m $bid zeros && mv zeros.next zeros.trace || return 1
	done <entries &&
	test "$(stat -c %s zeros.trace)" -lt $((1 << 20)) &&
	(ulimit -v 900000 && MEMSIGHT_CACHE_DIR=$PWD/c0 timeout 60 "$MEMSIGHT" folded zeros.trace >/dev/null 2>err) &&
	cat err &&
	grep "the trace.s copy of .* holds 63 MiB, past the 256 MiB its objects may expand to" err &&
	test $(cat c0/*.elf | wc -c) -le $(((256 << 20) + 32 * $(stat -c %s zeros.trace)))
'

# The cache is kept to a size (MEMSIGHT_CACHE_MAX), least recently used
# first, and what a crashed writer left there goes once it is stale.
test_expect_success 'the cache stays within MEMSIGHT_CACHE_MAX, and a crashed writer'"'"'s temporary file goes' '
	mkdir capped &&
	MEMSIGHT_CACHE_DIR=$PWD/capped "$MEMSIGHT" folded honest.trace >uncapped.folded 2>/dev/null &&
	full=$(cat capped/* | wc -c) &&
	echo "uncapped: $full bytes" &&
	test $full -gt $((6 << 20)) &&
	rm -rf capped && mkdir capped &&
	: >capped/memsight-x.elf.tmp-AAAAAA && touch -d "2 hours ago" capped/memsight-x.elf.tmp-AAAAAA &&
	: >capped/memsight-y.elf.tmp-BBBBBB &&
	MEMSIGHT_CACHE_DIR=$PWD/capped MEMSIGHT_CACHE_MAX=6M "$MEMSIGHT" folded honest.trace >capped.folded 2>err &&
	test_cmp uncapped.folded capped.folded &&
	! test -e capped/memsight-x.elf.tmp-AAAAAA &&
	test -e capped/memsight-y.elf.tmp-BBBBBB &&
	rm capped/memsight-y.elf.tmp-BBBBBB &&
	kept=$(cat capped/* | wc -c) &&
	echo "capped at 6 MiB: $kept bytes in $(ls capped | wc -l) files" &&
	{ test $kept -le $((6 << 20)) || test "$(ls capped | wc -l)" = 1; } &&
	MEMSIGHT_CACHE_DIR=$PWD/capped MEMSIGHT_CACHE_MAX=lots "$MEMSIGHT" folded honest.trace >/dev/null 2>err &&
	test "$(grep -c "MEMSIGHT_CACHE_MAX=.lots. is no size" err)" = 1
'

# A process names itself: markup and a terminal's escapes in its name.
test_expect_success 'a process named with markup and escapes: SVG escaped and valid, text without control bytes' '
	cat >named.c <<-\EOF &&
	#include <stdlib.h>
	#include <string.h>
	#include <sys/prctl.h>
	int main(void)
	{
		prctl(PR_SET_NAME, "a</text><z>&\033[31m", 0, 0, 0);
		for (int i = 0; i < 64; i++)
			memset(malloc(1 << 20), 1, 1 << 20);
		return 0;
	}
	EOF
	cc -O1 -o named named.c &&
	"$MEMSIGHT" record -q -e rss,faults -o named.trace -- ./named "$(printf "\033]0;title\007")" &&
	"$MEMSIGHT" info named.trace >info.txt &&
	grep "^recorded by: .*./named ?]0;title?$" info.txt &&
	"$MEMSIGHT" rss --svg rss.svg named.trace >rss.txt &&
	xmllint --noout rss.svg &&
	grep "a&lt;/text&gt;&lt;z&gt;&amp;?\[3" rss.svg &&
	"$MEMSIGHT" faults named.trace >faults.txt &&
	"$MEMSIGHT" folded named.trace >folded.txt &&
	! grep -l "$(printf "\033")" rss.txt faults.txt folded.txt info.txt &&
	grep "a</text><z>&?\[3" faults.txt
'

test_expect_success 'what is drawn or written from a trace is 0600, as the trace is' '
	"$MEMSIGHT" report --html page.html named.trace >/dev/null &&
	"$MEMSIGHT" pprof -o prof.pb.gz named.trace &&
	"$MEMSIGHT" flamegraph -o flame.svg named.trace &&
	for f in rss.svg page.html prof.pb.gz flame.svg; do
		test "$(stat -c %a $f)" = 600 || { echo "$f is $(stat -c %a $f)"; return 1; }
	done
'

test_expect_success 'a cache directory that is another user'"'"'s, a link, or open to others is not trusted; one line says so' '
	mkdir planted && chown nobody planted && chmod 777 planted &&
	MEMSIGHT_CACHE_DIR=$PWD/planted "$MEMSIGHT" folded honest.trace >out 2>err &&
	test_cmp honest.folded out &&
	cat err &&
	test "$(grep -c "the cache directory .*/planted. is another user.s: working without a cache" err)" = 1 &&
	test -z "$(ls -A planted)" &&
	ln -s "$MEMSIGHT_CACHE_DIR" linked &&
	MEMSIGHT_CACHE_DIR=$PWD/linked "$MEMSIGHT" folded honest.trace >out 2>err &&
	test_cmp honest.folded out &&
	grep "the cache directory .*/linked. is no directory (a link?)" err &&
	mkdir mine && chmod 777 mine &&
	MEMSIGHT_CACHE_DIR=$PWD/mine "$MEMSIGHT" folded honest.trace >out 2>err &&
	test_cmp honest.folded out &&
	grep "the cache directory .*/mine. is writable by others: working without a cache; make it private (chmod 700)" err &&
	test "$(stat -c %a mine)" = 777 &&
	test -z "$(ls -A mine)"
'

# The paths a trace names are the stranger's: what lies there on this
# machine may be a FIFO or a device. The analyzer reads regular files
# only, and a debug file found beside an object by its debuglink name
# only when its build-id is the object's.
test_expect_success 'objects and debug files a trace names that are FIFOs or devices hold nothing up' '
	mkdir fp fp/.debug &&
	cat >fp/grow.c <<-\EOF &&
	#include <stdlib.h>
	#include <string.h>
	__attribute__((noinline)) void grow_beside(long n)
	{
		for (long i = 0; i < n; i++)
			memset(malloc(4096), 1, 4096);
	}
	int main(void) { grow_beside(32); return 0; }
	EOF
	cc -O1 -g -fno-omit-frame-pointer -fno-inline -o fp/grow fp/grow.c &&
	objcopy --only-keep-debug fp/grow fp/grow.dbg &&
	strip --strip-all fp/grow &&
	objcopy --add-gnu-debuglink=fp/grow.dbg fp/grow &&
	"$MEMSIGHT" record -q -e malloc -g dwarf --embed none -o fp.trace -- fp/grow &&
	MEMSIGHT_CACHE_DIR=$PWD/c1 timeout 30 "$MEMSIGHT" folded -e malloc fp.trace >fp.1 2>/dev/null &&
	grep ";main;grow_beside;malloc 32$" fp.1 &&
	mv fp/grow.dbg fp/grow.real.dbg && mkfifo fp/grow.dbg fp/.debug/grow.dbg &&
	MEMSIGHT_CACHE_DIR=$PWD/c2 timeout 30 "$MEMSIGHT" folded -e malloc fp.trace >fp.2 2>/dev/null &&
	! grep grow_beside fp.2 &&
	rm fp/grow.dbg && cp honest.debug fp/grow.dbg &&
	MEMSIGHT_CACHE_DIR=$PWD/c3 timeout 30 "$MEMSIGHT" folded -e malloc fp.trace >fp.3 2>/dev/null &&
	! grep -e grow_beside -e real_function fp.3 &&
	mv fp/grow fp/grow.real && mkfifo fp/grow &&
	MEMSIGHT_CACHE_DIR=$PWD/c4 timeout 30 "$MEMSIGHT" folded -e malloc fp.trace >fp.4 2>/dev/null &&
	rm fp/grow && ln -s /dev/zero fp/grow &&
	MEMSIGHT_CACHE_DIR=$PWD/c5 timeout 30 "$MEMSIGHT" folded -e malloc fp.trace >fp.5 2>/dev/null &&
	MEMSIGHT_CACHE_DIR=$PWD/c5 timeout 30 "$MEMSIGHT" report fp.trace >/dev/null 2>&1 &&
	MEMSIGHT_CACHE_DIR=$PWD/c5 timeout 30 "$MEMSIGHT" archive fp.trace 2>err &&
	cat err
'

test_done
