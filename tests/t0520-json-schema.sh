#!/bin/sh
# Every command's --json against the one documented schema,
# formats/json.schema.json (checked with python3-jsonschema, which make
# test-deps installs): the keys each always has, their types, and the frame
# every stack is made of.
. "$(dirname "$0")/test-lib.sh"

T=$TOP/samples/traces/xor-8m.trace
D="--debug-dir $TOP/samples/traces/debug"
/usr/bin/python3 -c "import jsonschema" 2>/dev/null ||
	skip_all "python3-jsonschema is not installed (make test-deps installs it)"

valid() { json_valid "$@"; }

test_expect_success 'the schema is itself valid JSON Schema, with a definition for every command that takes --json' '
	/usr/bin/python3 -c "import json, jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(\"$TOP/formats/json.schema.json\")))" &&
	for c in $("$MEMSIGHT" --list-commands); do
		"$MEMSIGHT" $c -h | grep -q -- "--json" || continue
		grep -q "\"$c\": {" "$TOP/formats/json.schema.json" || { echo "no definition for $c"; return 1; }
	done
'

test_expect_success 'the views of the checked-in trace' '
	"$MEMSIGHT" info --json "$T" >info.json && valid info info.json &&
	for c in report functions faults brk mmaps events; do
		"$MEMSIGHT" $c --json $D "$T" >$c.json 2>/dev/null &&
		valid $c $c.json || { echo "$c"; return 1; }
	done &&
	printf "xor_encoder;main;read_in_chunks 10\nxor_encoder;main;do_sys_open_[k] 2\n" >base.folded &&
	"$MEMSIGHT" diff --json base.folded "$T" >diff.json 2>/dev/null &&
	valid diff diff.json
'

test_expect_success 'JSON is complete unless -T asks otherwise, and then says "truncated"' '
	for c in faults brk functions; do
		"$MEMSIGHT" $c --json $D "$T" >all.json 2>/dev/null &&
		! grep -q "\"truncated\"" all.json &&
		"$MEMSIGHT" $c --json -T 1 $D "$T" >one.json 2>/dev/null || return 1
	done &&
	"$MEMSIGHT" faults --json $D "$T" >all.json 2>/dev/null &&
	n=$(perl -MJSON::PP -e "local \$/; print scalar @{decode_json(<STDIN>)->{stacks}}" <all.json) &&
	test "$n" -gt 10 &&
	"$MEMSIGHT" faults --json -T 2 $D "$T" 2>/dev/null | grep -q "\"truncated\":{\"shown\":2,\"total\":$n}"
'

test_expect_success 'a frame without its function, or with a key the schema lacks, is refused' '
	sed "0,/\"function\":\"[^\"]*\",/s///" faults.json >bad1.json &&
	! cmp -s faults.json bad1.json &&
	! valid faults bad1.json 2>/dev/null &&
	sed "0,/\"kernel\":false/s//\"kernel\":false,\"extra\":1/" faults.json >bad2.json &&
	! cmp -s faults.json bad2.json &&
	! valid faults bad2.json 2>/dev/null
'

if recording_allowed; then
	test_expect_success 'leaks, with --leak-check, and of the kernel; shm, rss, reclaim, compaction' '
		"$MEMSIGHT" record -q -e malloc,shm,rss,reclaim,compaction,migrate -o m.trace -- "$SAMPLES/shm_cycle" 8192 >/dev/null &&
		"$MEMSIGHT" record -q -e malloc --leak-check -o lc.trace -- "$SAMPLES/leak_cases" tree >/dev/null &&
		"$MEMSIGHT" record -q -e kmem -o k.trace -- "$SAMPLES/pipe_hold" 20 100 >/dev/null &&
		"$MEMSIGHT" leaks --json m.trace >l1.json && valid leaks l1.json &&
		"$MEMSIGHT" leaks --json lc.trace >l2.json && valid leaks l2.json &&
		"$MEMSIGHT" leaks --kernel --json k.trace >l3.json && valid leaks l3.json &&
		for c in shm rss reclaim compaction; do
			"$MEMSIGHT" $c --json m.trace >$c.json 2>/dev/null &&
			valid $c $c.json || { echo "$c"; return 1; }
		done
	'

	# Every command that takes --json on every kind of recording: its
	# output validates, or it says in one line that the recording has none
	# of its events (or, for functions, which to name). Each command
	# validates on at least one of them. The
	# schema was narrower than the outputs: a stack shared by processes
	# (-a) has no pid, a recording of no command no "command", a leak
	# recorded long enough a growth rate, and an event the fields of its
	# own tracepoint.
	test_expect_success "every --json on every kind of recording: default, malloc, sampled, --leak-check, -a, a ring and its snapshot, signals, the kernel" '
		"$MEMSIGHT" record -q -o k-def.trace -- "$SAMPLES/xor_encoder" "$TOP/Makefile" /dev/null >/dev/null &&
		"$MEMSIGHT" record -q -e malloc -o k-mal.trace -- "$SAMPLES/loop_leak" 200 2 >/dev/null &&
		"$MEMSIGHT" record -q -e malloc --sample-bytes 64K -o k-samp.trace -- "$SAMPLES/alloc_zoo" churn 2000 >/dev/null &&
		"$MEMSIGHT" record -q -e malloc --leak-check -o k-lc.trace -- "$SAMPLES/leak_cases" tree >/dev/null &&
		"$MEMSIGHT" record -q -a -o k-all.trace -- sh -c "\"$SAMPLES/xor_encoder\" \"$TOP/Makefile\" /dev/null &
			\"$SAMPLES/xor_encoder\" \"$TOP/Makefile\" /dev/null; wait" >/dev/null &&
		rm -f truth &&
		{ "$MEMSIGHT" record -q --ring 16M --trigger signal -e faults,brk,mmap -o k-ring.trace -- \
			"$SAMPLES/phases" 64 64 16 1500 >truth 2>/dev/null & } &&
		rec=$! &&
		i=0 && while [ $i -lt 100 ] && ! grep -q "^phase_last" truth; do sleep 0.1; i=$((i + 1)); done &&
		kill -USR1 $rec && wait $rec && cp k-ring.*.signal.trace k-snap.trace &&
		{ "$MEMSIGHT" record -q -e malloc,faults,signals -o k-sig.trace -- "$SAMPLES/mem_errors" uaf >/dev/null 2>&1 || :; } &&
		"$MEMSIGHT" record -q -e kmem -o k-kern.trace -- "$SAMPLES/pipe_hold" 20 100 >/dev/null &&
		: >validated && : >tovalidate &&
		for t in k-def k-mal k-samp k-lc k-all k-ring k-snap k-sig k-kern; do
			for c in $("$MEMSIGHT" --list-commands); do
				case $c in record|diff|archive|folded|flamegraph|pprof|top) continue ;; esac
				k= && if [ $t = k-kern ] && [ $c = leaks ]; then k=--kernel; fi
				if "$MEMSIGHT" $c --json $k $t.trace >$t.$c.json 2>$t.$c.err; then
					echo "$c $t.$c.json" >>tovalidate &&
					echo $c >>validated
				else
					grep -q -e "has no .* events: record them with" -e "recorded no .*: name the events" $t.$c.err ||
						{ cat $t.$c.err; echo "$c on $t"; return 1; }
				fi
			done
		done &&
		json_valid_all <tovalidate &&
		for c in info events report functions leaks errors mmaps brk faults; do
			grep -qx $c validated || { echo "$c validated on none"; return 1; }
		done &&
		grep -q "\"growth_bytes_per_s\":[0-9]" k-mal.leaks.json &&
		grep -q "\"pid\":null" k-all.faults.json &&
		grep -q "\"writer\":null" k-snap.info.json
	'

	# Rings of one page lose most of a program's faults: every view that
	# counts says how many, as info does.
	test_expect_success 'every view that counts says in its JSON what was lost' '
		head -c $((16 << 20)) /dev/urandom >in.bin &&
		"$MEMSIGHT" record -q -m 1 -e faults,brk,mmap,signals -o lossy.trace -- "$SAMPLES/xor_encoder" in.bin \
			/dev/null >/dev/null 2>&1 &&
		lost=$("$MEMSIGHT" info lossy.trace | sed -n "s/^lost: *\([0-9]*\).*/\1/p") &&
		echo "lost $lost" && test "$lost" -gt 0 &&
		for c in faults brk mmaps functions events errors; do
			"$MEMSIGHT" $c --json lossy.trace >$c.json 2>/dev/null && valid $c $c.json &&
			grep -q "\"lost\":$lost[,}]" $c.json || { echo "$c"; return 1; }
		done
	'
fi

test_done
