#!/bin/sh
# memsight pprof: profiles that Go's own pprof reads, with the leaking
# function on top and the exact bytes, inline frames, labels, several
# traces merged, and traces recorded elsewhere (the checked-in ones).
. "$(dirname "$0")/test-lib.sh"

command -v go >/dev/null || skip_all "go is not installed (make test-deps installs golang-go): go tool pprof reads the profiles"
HOME=$TRASH GOCACHE=$TRASH/.gocache
export HOME GOCACHE
XOR=$TOP/samples/traces/xor-8m.trace
DEBUG=$TOP/samples/traces/debug

test_expect_success 'a trace recorded elsewhere: go tool pprof reads its faults profile' '
	"$MEMSIGHT" pprof --debug-dir "$DEBUG" -e faults -o x.pb.gz "$XOR" &&
	gzip -t x.pb.gz &&
	go tool pprof -top x.pb.gz >top 2>err &&
	cat top &&
	grep "^Type: faults$" top &&
	grep "^File: xor_encoder$" top &&
	total=$("$MEMSIGHT" folded --debug-dir "$DEBUG" -e faults "$XOR" 2>/dev/null | awk "{ s += \$NF } END { print s }") &&
	grep "Total samples = $total *$" top &&
	grep "^ *2048 .* read_in_chunks$" top
'

test_expect_success 'inline frames are lines of one location, with their source lines' '
	go tool pprof -raw x.pb.gz >raw 2>err &&
	awk "/^Locations/ { l = 1 } l" raw >locs &&
	grep -q "^ *[0-9]*: 0x[0-9a-f]* M=[0-9]* read_in_chunks samples/xor_encoder.c:[0-9]* s=0$" locs &&
	awk "/^ *[0-9]*: 0x/ { n = 0 } /^ +[^ 0-9]/ { n++ } n >= 1 { found = 1 } END { exit !found }" locs
'

# A frame of an object this machine does not have (here one the trace's
# own copy does not name): its location keeps its mapping, build-id and
# file offset, with no line and no function made up, so that pprof or a
# backend that has the object names it; no location lacks a mapping.
test_expect_success 'an object not found: the location keeps its mapping, build-id and offset, and no made-up name' '
	"$MEMSIGHT" pprof -e faults -o nf.pb.gz "$XOR" 2>err && cat err &&
	grep "frames unnamed in .*xor_encoder" err &&
	go tool pprof -raw nf.pb.gz >nf.raw 2>/dev/null &&
	awk "/^Locations/ { l = 1; next } /^Mappings/ { l = 0; m = 1; next }
		l && /^ *[0-9]+: 0x/ { locs++; if (\$3 !~ /^M=[1-9]/) bad++ }
		m && /^[0-9]+: 0x/ { maps++ }
		END { print locs, \"locations,\", maps, \"mappings,\", bad + 0, \"without one\"; exit bad || !locs || !maps }" nf.raw &&
	grep "^1: 0x0/0xffffffffffffffff/0x0 .*/xor_encoder 71484c6ff441761fdf122b8807bfab8d46772bb4 " nf.raw &&
	grep "^ *[0-9]*: 0x10e0 M=1 *$" nf.raw &&
	! grep "\[xor_encoder\]+0x" nf.raw
'

# As perf script writes to a pipe: no -o and standard output not a
# terminal is standard output. At a terminal (script(1) gives one) the
# gzipped bytes would be noise: refused.
test_expect_success 'no -o: standard output when it is a file or a pipe, refused at a terminal' '
	"$MEMSIGHT" pprof --debug-dir "$DEBUG" -e faults "$XOR" >redirected.pb.gz &&
	cmp x.pb.gz redirected.pb.gz &&
	"$MEMSIGHT" pprof --debug-dir "$DEBUG" -e faults "$XOR" | cmp - x.pb.gz &&
	if command -v script >/dev/null; then
		test_must_fail script -qec "\"$MEMSIGHT\" pprof \"$XOR\"" /dev/null >tty.out &&
		grep "give the profile.s file with -o FILE, or redirect standard output" tty.out
	fi
'

test_expect_success 'bad input: an unknown event, a type the event lacks' '
	test_must_fail "$MEMSIGHT" pprof -e nonsense -o p.pb.gz "$XOR" 2>err &&
	test_one_line err && grep "unknown event .nonsense. for a profile: use malloc, kmem, faults, brk or mmap" err &&
	test_must_fail "$MEMSIGHT" pprof -e faults -w inuse_space -o p.pb.gz "$XOR" 2>err &&
	cat err && test_one_line err && grep "no sample type .inuse_space. for faults: use faults" err
'

if recording_allowed; then
	test_expect_success 'a leak: the leaking function on top, its exact bytes and count' '
		"$MEMSIGHT" record -q -e malloc -o leak.trace -- "$SAMPLES/loop_leak" 1000 >truth &&
		grep "^loop_leak: 1000 allocations of 4 bytes from leak(), 4000 bytes leaked$" truth &&
		"$MEMSIGHT" pprof -o leak.pb.gz leak.trace &&
		go tool pprof -top leak.pb.gz >top 2>err &&
		cat top &&
		grep "^Type: inuse_space$" top &&
		grep "^File: loop_leak$" top &&
		go tool pprof -sample_index=inuse_space -unit=B -top leak.pb.gz >top 2>err &&
		grep "^ *4000B .* leak$" top &&
		go tool pprof -sample_index=alloc_objects -top leak.pb.gz >top 2>err &&
		grep "^ *1000 .* leak$" top &&
		go tool pprof -raw leak.pb.gz >raw 2>err &&
		grep "^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]$" raw &&
		grep "^ *1000 *4000 *1000 *4000: " raw &&
		grep "comm:\[loop_leak\] host:\[$(hostname)\]" raw
	'

	test_expect_success 'inuse holds what leaks holds: libc'"'"'s one-time allocations are left out, and kept on asking' '
		"$MEMSIGHT" pprof -o sup.pb.gz leak.trace 2>err &&
		cat err &&
		grep "inuse leaves out [0-9]* bytes still held that leaks suppresses too" err &&
		"$MEMSIGHT" leaks --json leak.trace >leaks.json &&
		held=$(sed -n "s/.*\"leaked_bytes\":\([0-9]*\),.*/\1/p" leaks.json) &&
		go tool pprof -sample_index=inuse_space -unit=B -top sup.pb.gz >top 2>/dev/null &&
		cat top &&
		grep "of ${held}B total" top &&
		"$MEMSIGHT" pprof --no-default-suppressions -o all.pb.gz leak.trace 2>err &&
		! grep "leaves out" err &&
		go tool pprof -sample_index=inuse_space -unit=B -top all.pb.gz >top 2>/dev/null &&
		! grep "of ${held}B total" top
	'

	test_expect_success 'two traces merge into one profile, a pid label each' '
		"$MEMSIGHT" record -q -e malloc -o leak2.trace -- "$SAMPLES/loop_leak" 500 >/dev/null &&
		"$MEMSIGHT" pprof -o both.pb.gz leak.trace leak2.trace &&
		go tool pprof -sample_index=inuse_space -unit=B -top both.pb.gz >top 2>err &&
		grep "^ *6000B .* leak$" top &&
		go tool pprof -raw both.pb.gz >raw 2>err &&
		test $(grep -o "pid:\[[0-9]*\]" raw | sort -u | wc -l) = 2 &&
		go tool pprof -tagfocus=pid=$(grep -o "pid:\[[0-9]*\]" raw | head -1 | tr -dc 0-9) -top both.pb.gz >one 2>err &&
		grep "Total samples" one
	'

	test_expect_success 'brk and mmap: calls and space' '
		"$MEMSIGHT" record -q -g fp -e brk,mmap -o mm.trace -- "$SAMPLES/xor_encoder" /dev/null >/dev/null 2>&1 ;
		"$MEMSIGHT" pprof -e mmap -o mm.pb.gz mm.trace &&
		go tool pprof -raw mm.pb.gz >raw 2>err &&
		grep "^calls/count space/bytes\[dflt\]$" raw
	'

	test_expect_success 'faults/4: each recorded fault counts for 4, as faults counts them' '
		"$MEMSIGHT" record -q -e faults/4 -o f4.trace -- "$SAMPLES/loop_leak" 10 >/dev/null &&
		"$MEMSIGHT" pprof -e faults -o f4.pb.gz f4.trace 2>err &&
		grep "kept one faults event in 4: values are estimates, scaled by 4" err &&
		got=$("$MEMSIGHT" faults f4.trace 2>/dev/null | sed -n "s/^# memsight faults of .*: \([0-9]*\) page faults.*/\1/p") &&
		test $((got % 4)) = 0 &&
		go tool pprof -top f4.pb.gz >top 2>/dev/null &&
		cat top &&
		grep "Total samples = $got *$" top
	'
fi

test_done
