#!/bin/sh
# make install as a Debian tool is laid out: memsight in bin/, its helpers
# and the allocation sampler in libexec/memsight/, found from wherever
# PREFIX put them; man pages that are the commands' -h; bash completion;
# the flight recorder's unit naming the installed memsight.
. "$(dirname "$0")/test-lib.sh"

P=$TRASH/prefix

test_expect_success 'make install PREFIX=... lays the files out' '
	make -s -C "$TOP" install PREFIX="$P" >out 2>&1 || { cat out; false; } &&
	test -x "$P/bin/memsight" &&
	for h in memsight-record memsight-analyze memsight-flamegraph; do
		test -x "$P/libexec/memsight/$h" && test ! -e "$P/bin/$h" || return 1
	done &&
	test -f "$P/libexec/memsight/libmemsight-sample.so" &&
	test -f "$P/share/bash-completion/completions/memsight" &&
	grep "^ExecStart=$P/bin/memsight record -a " "$P/lib/systemd/system/memsight-flight.service"
'

test_expect_success 'the installed memsight runs its own helpers, wherever it was put' '
	mv "$P" "$TRASH/moved" &&
	"$TRASH/moved/bin/memsight" info "$TOP/samples/traces/xor-8m.trace" | grep -x "status:      complete" &&
	"$TRASH/moved/bin/memsight" flamegraph -o x.svg "$TOP/samples/traces/xor-8m.trace" 2>/dev/null &&
	grep -q "<svg" x.svg &&
	mv "$TRASH/moved" "$P"
'

if recording_allowed; then
	test_expect_success 'the installed recorder finds its sampler: --sample-bytes and the wrapper work' '
		"$P/bin/memsight" record -q -e malloc --sample-bytes 1K -o s.trace -- "$SAMPLES/loop_leak" 10 >/dev/null &&
		"$P/bin/memsight" info s.trace | grep "^malloc wrapper: "
	'
fi

test_expect_success 'each man page is its command'"'"'s -h, word for word' '
	for c in $("$MEMSIGHT" --list-commands) ""; do
		page="$P/share/man/man1/memsight${c:+-$c}.1" &&
		test -f "$page" &&
		sed -n "/^\.SH DESCRIPTION$/,/^\.fi$/p" "$page" | sed -e "1,2d;\$d" -e "s/^\\\\&//" -e "s/\\\\e/\\\\/g" >page.txt &&
		"$MEMSIGHT" $c -h >help.txt &&
		test_cmp help.txt page.txt || return 1
	done &&
	man -l "$P/share/man/man1/memsight-leaks.1" 2>/dev/null | grep -q "memsight-leaks - allocations still outstanding"
'

test_expect_success 'a command'"'"'s man page goes on with its guide, the file the README points to' '
	man -l "$P/share/man/man1/memsight-errors.1" 2>/dev/null >errors.man &&
	grep -q "^EXPLAIN A CRASH$" errors.man &&
	grep -q "memsight record -e malloc,faults,signals" errors.man &&
	grep -q "(analyze/cmd/errors.md)" "$TOP/README.md" &&
	man -l "$P/share/man/man1/memsight-record.1" 2>/dev/null | grep -q "^LEAVE IT RUNNING: THE FLIGHT RECORDER$" &&
	for p in "$P"/share/man/man1/*.1; do
		groff -man -ww -z "$p" 2>warn && ! test -s warn || { echo "$p:"; cat warn; return 1; }
	done
'

test_expect_success 'bash completion: commands, then a command'"'"'s options' '
	cat >complete.sh <<-EOF &&
	. "$P/share/bash-completion/completions/memsight"
	COMP_WORDS=(memsight lea); COMP_CWORD=1; _memsight; echo "\${COMPREPLY[@]}"
	COMP_WORDS=(memsight leaks --fail); COMP_CWORD=2; _memsight; echo "\${COMPREPLY[@]}"
	EOF
	bash complete.sh >got &&
	printf "leaks\n--fail-over\n" >want &&
	test_cmp want got
'

test_done
