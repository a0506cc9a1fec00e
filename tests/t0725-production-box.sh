#!/bin/sh
# The box memsight is for: recorded system-wide with no flags, programs
# built without frame pointers (as Debian builds them) whose growth goes
# through libc, a flight recorder saving a snapshot at an OOM kill in a
# memory cgroup, a "container" (its own mount and pid namespaces and a
# private root holding its program at a path the host lacks), --cgroup,
# and code that lies in no file (a memfd). Stacks must name the growth
# function and main wherever the trace is analyzed.
# Every case runs alone (tests/test-lib.sh): it records the whole system.
TEST_ALONE=1
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

G=$SAMPLES/nofp/box_grow

# The weight of folded lines (FILE) whose stack holds PATTERN.
weight() { awk -v p="$2" 'index($0, p) { s += $NF } END { print s + 0 }' "$1"; }

test_expect_success '-a, no flags: the faults and the brk growth of a program without frame pointers name grow_forever and main' '
	"$MEMSIGHT" record -q -a -o box.trace -- "$G" 64 400 >truth &&
	grep "^box_grow: grew 400 chunks of 64 KiB in grow_forever$" truth &&
	pid=$(sed -n "s/^box_grow: pid //p" truth) &&
	"$MEMSIGHT" info box.trace | grep "^call graph:  dwarf,8192$" &&
	"$MEMSIGHT" folded -e faults --no-kernel --pid $pid box.trace >faults &&
	cat faults &&
	test "$(weight faults ";__libc_start_call_main;main;grow_forever;__memset")" -ge 6000 &&
	test "$(weight faults ";main;grow_forever;")" -ge 6400 &&
	"$MEMSIGHT" folded -e brk -w bytes --pid $pid box.trace >brk &&
	cat brk &&
	test "$(weight brk ";__libc_start_call_main;main;grow_forever;__libc_malloc;")" -ge $((400 * 64 * 1024))
'

test_expect_success '-a carries the objects its stacks ran in: with the program gone, the same frames' '
	mkdir -p bin empty &&
	cp "$G" bin/box_grow &&
	"$MEMSIGHT" record -q -a -o gone.trace -- bin/box_grow 64 100 >/dev/null &&
	"$MEMSIGHT" info gone.trace >info &&
	grep "^  minimal .* $PWD/bin/box_grow$" info &&
	grep "^  minimal .* /usr/lib/x86_64-linux-gnu/libc.so.6$" info &&
	# What else ran on the box may have come and gone unread; never the
	# program'"'"'s own objects.
	{ ! sed -n "/^not carried/,\$p" info | grep -E "^  ($PWD/bin/box_grow|/usr/lib/x86_64-linux-gnu/(libc.so.6|ld-linux-x86-64.so.2)):" ||
		{ cat info; false; }; } &&
	"$MEMSIGHT" folded gone.trace >all.here 2>/dev/null &&
	grep -q ";main;grow_forever;" all.here &&
	rm -r bin &&
	MEMSIGHT_CACHE_DIR=$PWD/empty "$MEMSIGHT" folded gone.trace >all.there 2>/dev/null &&
	test_cmp all.here all.there
'

test_expect_success 'a ring carries the objects too: a copy of it names the same frames with the program gone' '
	mkdir -p bin2 &&
	cp "$G" bin2/box_grow &&
	"$MEMSIGHT" record -q -a --ring 32M -o ring.trace -- bin2/box_grow 64 200 >/dev/null &&
	cp ring.trace ring-copy.trace &&
	"$MEMSIGHT" info ring-copy.trace >info &&
	{ grep "^  minimal .* $PWD/bin2/box_grow$" info || { cat info; false; }; } &&
	"$MEMSIGHT" folded -e faults --no-kernel ring-copy.trace >ring.all 2>err &&
	{ grep -q ";main;grow_forever;" ring.all || { cat err ring.all; false; }; } &&
	rm -r bin2 &&
	MEMSIGHT_CACHE_DIR=$PWD/empty "$MEMSIGHT" folded -e faults --no-kernel ring-copy.trace >ring.gone 2>/dev/null &&
	# The program'"'"'s own stacks: what else ran on the box may have come
	# and gone with objects no one could read.
	grep "^box_grow[; ]" ring.all >ring.here &&
	grep "^box_grow[; ]" ring.gone >ring.there &&
	test_cmp ring.here ring.there
'

# What else runs on the box (a browser, another test's node) may have
# deeper stacks, whole: only the program's own are held to the bound.
test_expect_success 'frame-pointer stacks that run into data are cut where they leave the code, and said so once' '
	"$MEMSIGHT" record -q -a -g fp -o fp.trace -- "$G" 64 100 >truth &&
	pid=$(sed -n "s/^box_grow: pid //p" truth) &&
	"$MEMSIGHT" folded -e faults --no-kernel fp.trace >/dev/null 2>err &&
	cat err &&
	# A busy box may lose events system-wide: that says itself, apart.
	grep -v "events were lost while recording" err >err.cut &&
	test_one_line err.cut &&
	grep "^memsight [a-z]*: [0-9]* of [0-9]* frame-pointer stacks ran into code built without frame pointers and were cut where they left the code; record with -g dwarf for whole stacks$" err &&
	"$MEMSIGHT" folded -e faults --no-kernel --pid $pid fp.trace >fp.folded 2>/dev/null &&
	grep -q "^box_grow;" fp.folded &&
	awk "/^#/ { next } { n = split(\$1, f, \";\"); if (n > 24) { print \"deeper than 24: \" \$0; bad++ } } END { exit bad > 0 }" fp.folded
'

memcg_32mib memsight-box
if [ -n "$CG" ]; then
	test_expect_success 'an OOM kill in a 32 MiB cgroup, a ring with no -g: the snapshot names grow_forever and main' '
		rm -f sys.*.trace &&
		{ "$MEMSIGHT" record -a --ring 32M --trigger oom --after 0.5 -e oom,faults,brk -o sys.trace 2>rec & } &&
		rec=$! && sleep 1 &&
		{ sh -c "echo \$\$ >$CG/cgroup.procs && exec $G 64 0" >truth 2>&1; test $? = 137; } &&
		i=0 && while [ $i -lt 100 ] && ! grep -q "snapshot .*trigger oom" rec; do sleep 0.1; i=$((i + 1)); done &&
		kill -INT $rec && wait $rec &&
		cat truth rec &&
		pid=$(sed -n "s/^box_grow: pid //p" truth) && test -n "$pid" &&
		snap=$(ls sys.*.oom.trace) &&
		"$MEMSIGHT" oom $snap | grep "^OOM kill at .*: victim pid $pid (box_grow)" &&
		"$MEMSIGHT" folded -e faults --no-kernel --pid $pid $snap >f &&
		test "$(weight f ";__libc_start_call_main;main;grow_forever;__memset")" -gt 1000
	'
	rmdir $CG 2>/dev/null
fi

# A container as runtimes make one: its own mount and pid namespaces, a
# private root with its own libc and loader, its program at /opt/app/app,
# a path the host does not have.
container_root() {
	mkdir -p "$1/opt/app" "$1/lib/x86_64-linux-gnu" "$1/lib64" &&
	cp "$G" "$1/opt/app/app" &&
	cp /lib/x86_64-linux-gnu/libc.so.6 "$1/lib/x86_64-linux-gnu/" &&
	cp /lib64/ld-linux-x86-64.so.2 "$1/lib64/"
}
if command -v unshare >/dev/null && command -v chroot >/dev/null && unshare -m -p -f true 2>/dev/null; then
	test_expect_success 'a container: its program is named though the host lacks its path, and again once its root is gone' '
		container_root ct &&
		! test -e /opt/app/app &&
		n=0 &&
		while :; do
			"$MEMSIGHT" record -q -a -o ct.trace -- unshare -m -p -f chroot ct /opt/app/app 64 300 1 >truth \
				2>rec.err || exit 1
			"$MEMSIGHT" info ct.trace | grep -q "^lost: *0$" && break
			# A slow build on a busy host can overflow the rings: after
			# four tries, the last recording must still pass what follows
			# (its faults under grow_forever have a wide margin).
			n=$((n + 1)) && echo "attempt $n lost events" && test $n -lt 4 || break
		done &&
		grep "^box_grow: pid 1$" truth &&
		"$MEMSIGHT" folded -e faults --no-kernel ct.trace >ct.here 2>/dev/null &&
		test "$(weight ct.here "app;_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;grow_forever;")" -ge 4800 &&
		"$MEMSIGHT" info ct.trace | grep "^  minimal .* /opt/app/app$" &&
		"$MEMSIGHT" report ct.trace >report &&
		sed -n "/^== cgroups/,\$p" report &&
		grep -E "(^  |, )[0-9]+ \(1 inside\) app(,|$)" report &&
		rm -rf ct &&
		MEMSIGHT_CACHE_DIR=$PWD/empty "$MEMSIGHT" folded -e faults --no-kernel ct.trace >ct.there 2>/dev/null &&
		test_cmp ct.here ct.there
	'

	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -n "$v2" ] && mkdir "$v2/memsight-ct-$$" 2>/dev/null; then
		test_expect_success '--cgroup: a container'"'"'s cgroup, and the processes outside it are not recorded' '
			container_root ct2 &&
			"$MEMSIGHT" record -q -a --cgroup "$v2/memsight-ct-$$" -o cg.trace -- sh -c "
				sh -c \"echo \\\$\\\$ >$v2/memsight-ct-$$/cgroup.procs && exec unshare -m -p -f chroot ct2 /opt/app/app 64 200\" &
				$G 64 200 >/dev/null; wait" >truth &&
			"$MEMSIGHT" faults --json cg.trace >cg.json &&
			cat cg.json &&
			grep "\"comm\":\"app\"" cg.json &&
			grep "\"cgroup\":\"/memsight-ct-$$\"" cg.json &&
			! grep "\"comm\":\"box_grow\"" cg.json &&
			"$MEMSIGHT" info cg.trace | grep "^recorded by: .* --cgroup $v2/memsight-ct-$$ " &&
			"$MEMSIGHT" folded --cgroup /memsight-ct-$$ cg.trace >in &&
			test -s in && ! grep -v "^app;\|^unshare;\|^chroot;\|^sh;" in
		'
		rmdir "$v2/memsight-ct-$$"
	fi
fi

test_expect_success 'code in a memfd (a program run by fexecve) is named from the object the trace carries' '
	"$MEMSIGHT" record -q -o memfd.trace -- "$G" --memfd 64 100 >truth &&
	grep "^box_grow: grew 100 chunks" truth &&
	"$MEMSIGHT" folded -e faults --no-kernel memfd.trace >mf &&
	cat mf &&
	test "$(weight mf "memfd:box_grow;_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;main;grow_forever;")" -ge 1600 &&
	! "$MEMSIGHT" info memfd.trace | grep "^not carried"
'

test_expect_success 'bad --cgroup: a path that is no cgroup, or without -a, or a trace without cgroups: one line each' '
	test_must_fail "$MEMSIGHT" record -a --cgroup /sys/fs/cgroup/no-such-cgroup -o x.trace -- true 2>err &&
	test_one_line err && grep "^memsight record: --cgroup ./sys/fs/cgroup/no-such-cgroup.: No such file or directory; give a cgroup.s directory" err &&
	test_must_fail "$MEMSIGHT" record -a --cgroup /etc -o x.trace -- true 2>err &&
	test_one_line err && grep "^memsight record: --cgroup ./etc. is not a cgroup.s directory" err &&
	test_must_fail "$MEMSIGHT" record --cgroup /sys/fs/cgroup -o x.trace -- true 2>err &&
	test_one_line err && grep "^memsight record: --cgroup records the processes of one cgroup across the system: give -a too$" err &&
	"$MEMSIGHT" record -q -o plain.trace -- "$G" 4 10 >/dev/null &&
	test_must_fail "$MEMSIGHT" faults --cgroup /x plain.trace 2>err &&
	test_one_line err && grep "has no cgroups: its samples were not recorded system-wide (record with -a)" err &&
	test_must_fail "$MEMSIGHT" faults --cgroup /no-such box.trace 2>err &&
	test_one_line err && grep "^memsight faults: --cgroup ./no-such. names no cgroup of .box.trace." err
'

test_done
