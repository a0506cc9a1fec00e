#!/bin/sh
# memsight diff: per-stack growth between two recordings, exact, largest
# first, new and gone stacks marked, and a gate for CI; and the
# differential flame graph of the same two.
. "$(dirname "$0")/test-lib.sh"

printf 'app;main;load 100\napp;main;parse 50\napp;main;old 30\n' >base.folded
printf 'app;main;load 100\napp;main;parse 250\napp;main;cache 70\n' >new.folded

test_expect_success 'folded stacks: deltas largest growth first, new and gone marked, totals' '
	"$MEMSIGHT" diff base.folded new.folded >out &&
	cat out &&
	grep -x "# memsight diff of .base.folded. and .new.folded.: 180 then 420, +240" out &&
	sed -n 4p out | grep -E "^ +\+200 +50 +250  grew   app;main;parse$" &&
	sed -n 5p out | grep -E "^ +\+70 +0 +70  new    app;main;cache$" &&
	sed -n 6p out | grep -E "^ +-30 +30 +0  gone   app;main;old$" &&
	! grep "app;main;load" out
'

test_expect_success 'the gate: exit 3 past --fail-over, 0 within it; --json carries the same' '
	test_expect_code() { want=$1; shift; "$@"; test $? = $want; } &&
	test_expect_code 3 "$MEMSIGHT" diff --fail-over 239 base.folded new.folded >/dev/null &&
	test_expect_code 0 "$MEMSIGHT" diff --fail-over 240 base.folded new.folded >/dev/null &&
	"$MEMSIGHT" diff --json base.folded new.folded >out.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
		die unless \$d->{delta} == 240 && \$d->{stacks}[0]{status} eq q{grew} && \$d->{stacks}[0]{delta} == 200
			&& \$d->{stacks}[2]{status} eq q{gone}" <out.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>); my \$s = \$d->{stacks}[0];
		die unless \$s->{comm} eq q{app} && @{\$s->{frames}} == 2
			&& \$s->{frames}[0]{function} eq q{parse} && \$s->{frames}[1]{function} eq q{main}
			&& !\$s->{frames}[0]{kernel} && !defined \$s->{frames}[0]{object}
			&& !\$d->{base_estimate} && !\$d->{new_estimate}" <out.json &&
	printf "app;main;do_sys_open_[k] 5\n" >k.folded &&
	"$MEMSIGHT" diff --json base.folded k.folded | grep "{\"function\":\"do_sys_open\",\"offset\":null,\"object\":null,\"kernel\":true,\"inlined\":null}"
'

test_expect_success 'a differential flame graph of folded stacks: well-formed, red grew, blue shrank, the change in tooltips' '
	"$MEMSIGHT" flamegraph --diff base.folded new.folded >d.svg &&
	xmllint --noout d.svg &&
	grep -q "<title>parse (250 samples, [0-9.]*%, +200 since the base)</title><rect [^>]*fill=\"rgb(255," d.svg &&
	grep -q "<title>cache (70 samples, [0-9.]*%, +70 since the base)</title>" d.svg &&
	grep -q "<title>load (100 samples, [0-9.]*%, +0 since the base)</title><rect [^>]*fill=\"rgb(245,245,245)\"" d.svg &&
	printf "app;main;load 100\napp;main;parse 10\n" >shrunk.folded &&
	"$MEMSIGHT" flamegraph --diff base.folded shrunk.folded >s.svg &&
	grep -q "<title>parse (10 samples, [0-9.]*%, -40 since the base)</title><rect [^>]*fill=\"rgb([0-9]*,[0-9]*,255)\"" s.svg &&
	test_must_fail "$MEMSIGHT" flamegraph --diff base.folded 2>err &&
	test_one_line err && grep "diff takes two inputs, BASE and NEW" err
'

test_expect_success 'bad input: one line each, non-zero exit' '
	test_must_fail "$MEMSIGHT" diff base.folded 2>err &&
	test_one_line err && grep "give two files, BASE and NEW" err &&
	printf "app;main nan\n" >bad.folded &&
	test_must_fail "$MEMSIGHT" diff base.folded bad.folded 2>err &&
	test_one_line err && grep "bad.folded:1: the weight .nan. is not a number" err &&
	test_must_fail "$MEMSIGHT" diff base.folded nosuch 2>err &&
	test_one_line err && grep "cannot open .nosuch." err &&
	mkdir adir && mkfifo afifo &&
	for odd in adir afifo /dev/zero; do
		test_must_fail timeout 10 "$MEMSIGHT" diff base.folded $odd 2>err &&
		test_one_line err && grep "is not a regular file" err || return 1
	done
'

if recording_allowed; then
	test_expect_success 'two recordings of a leak, 1000 and 3000 iterations: exactly 8000 bytes more at leak()' '
		"$MEMSIGHT" record -q -e malloc -o l1.trace -- "$SAMPLES/loop_leak" 1000 >t1 &&
		"$MEMSIGHT" record -q -e malloc -o l3.trace -- "$SAMPLES/loop_leak" 3000 >t3 &&
		grep "4000 bytes leaked" t1 && grep "12000 bytes leaked" t3 &&
		"$MEMSIGHT" diff l1.trace l3.trace >out 2>/dev/null &&
		cat out &&
		grep ", malloc by leaked: .*, +8000$" out &&
		sed -n 4p out | grep -E "^ +\+8000 +4000 +12000  grew   loop_leak;.*;leak;malloc$" &&
		"$MEMSIGHT" diff --fail-over 7999 l1.trace l3.trace >/dev/null 2>&1; test $? = 3
	'

	test_expect_success 'a sampled recording on one side: diff says its figures are estimates' '
		"$MEMSIGHT" record -q -e faults -o f1.trace -- "$SAMPLES/loop_leak" 10 >/dev/null &&
		"$MEMSIGHT" record -q -e faults/4 -o f4.trace -- "$SAMPLES/loop_leak" 10 >/dev/null &&
		"$MEMSIGHT" diff f1.trace f4.trace >out 2>/dev/null &&
		grep -x "# ESTIMATE: NEW is a sampled recording; its figures are estimates" out &&
		"$MEMSIGHT" diff --json f1.trace f4.trace 2>/dev/null | grep "\"base_estimate\":false,\"new_estimate\":true," &&
		"$MEMSIGHT" diff f1.trace f1.trace >same 2>/dev/null &&
		! grep ESTIMATE same
	'

	# A side that never recorded the event is refused, not a diff of
	# zeros: a malloc trace against a fault trace, or both with -e faults.
	test_expect_success 'diff of a trace without the event: one line naming what it holds, not zeros' '
		test_must_fail "$MEMSIGHT" diff l1.trace f1.trace >out 2>err &&
		test_one_line err && grep "^memsight diff: .l1.trace. has no faults events: record them with .memsight record -e faults. (it holds malloc" err &&
		test ! -s out &&
		test_must_fail "$MEMSIGHT" diff -e faults l1.trace l3.trace >out 2>err &&
		test_one_line err && grep "^memsight diff: .l1.trace. has no faults events" err &&
		test ! -s out
	'

	test_expect_success 'the differential flame graph of the two: well-formed, +8000 bytes at leak()' '
		"$MEMSIGHT" flamegraph --diff -e malloc -w leaked l1.trace l3.trace >leak.svg 2>/dev/null &&
		xmllint --noout leak.svg &&
		grep -q "<title>leak (12000 bytes, [0-9.]*%, +8000 since the base)</title>" leak.svg
	'
fi

test_done
