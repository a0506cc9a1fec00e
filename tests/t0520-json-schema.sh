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
