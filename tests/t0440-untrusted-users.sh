#!/bin/sh
# The root recorder and analyzer beside users they do not trust: each
# attack made as nobody, the way a local user with their own user and
# mount namespace (unshare -Urm, allowed on a stock Debian) would make it.
# What is checked: the secret never reaches the trace, a file planted
# never replaces or opens anything, nothing blocks.
. "$(dirname "$0")/test-lib.sh"

[ "$(id -u)" = 0 ] || skip_all "these attacks are made as nobody against a root memsight: run as root"
id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null || skip_all "no user nobody, or no setpriv"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
USERNS=
as_nobody unshare -Urm true 2>/dev/null && USERNS=1

# A directory nobody can use, and a secret only root reads.
chmod 711 "$TRASH" && mkdir pub && chmod 1777 pub
SECRET=$TRASH/secret && echo "memsight-root-secret-$$" >"$SECRET" && chmod 600 "$SECRET"

# watch_opens FILE: "watching", then once nothing happened for 6 s, how
# many times FILE was opened (inotify's IN_OPEN; an O_PATH look is none).
watch_opens() {
	timeout 60 python3 -c '
import ctypes, os, select, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20)
print("watching", flush=True)
n = 0
while select.select([fd], [], [], 6)[0]:
    os.read(fd, 4096); n += 1
print("opens", n)
' "$1"
}

# in_trace TRACE: how often the secret is in the trace, every chunk
# decompressed.
in_trace() {
	"$BUILD/test-tool" grep "$1" "memsight-root-secret-$$" | sed -n 's/^matches //p'
}

# record_around OUT ARGS -- ATTACK: a 3 s system-wide recording with ATTACK
# (a command line for sh, run as nobody) started once it records.
record_around() {
	out=$1 && shift && rm -f "$out.pid" &&
	{ "$MEMSIGHT" record -q -a -d 3 --pidfile "$out.pid" -o "$out" "$@" & } &&
	i=0 && while [ ! -s "$out.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done &&
	timeout 20 setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "$ATTACK" &&
	wait
}

# The analyzer's outputs, written as root where nobody can reach: a link
# nobody planted at the path or on its way is never followed, a file is
# never made in a directory nobody can write.
T=$TOP/samples/traces/xor-8m.trace
test_expect_success 'outputs never follow a link another user planted, nor go where another user can write' '
	echo "root data" >victim && chmod 644 victim && sum=$(cksum <victim) &&
	mkdir vdir && mkdir evil && chown nobody evil &&
	as_nobody ln -s "$TRASH/victim" evil/out.html &&
	as_nobody ln -s "$TRASH/victim" evil/out.svg &&
	as_nobody ln -s "$TRASH/victim" evil/out.pb.gz &&
	as_nobody ln -s "$TRASH/vdir" evil/sub &&
	for c in "report --html evil/out.html" "flamegraph -o evil/out.svg" "pprof -o evil/out.pb.gz" \
		"rss --svg evil/out.svg" "report --html evil/sub/new.html" "flamegraph -o evil/sub/new.svg" \
		"rss --svg evil/new.svg"; do
		test_must_fail "$MEMSIGHT" $c "$T" 2>err >/dev/null && cat err && test_one_line err &&
		grep "cannot create .evil/.*: .*another user" err || return 1
	done &&
	test "$(cksum <victim)" = "$sum" && test -z "$(ls -A vdir)" &&
	test "$(ls -A evil | sort | tr "\n" " ")" = "out.html out.pb.gz out.svg sub "
'

# A trace names the files its stacks ran in; here, one of them is now a
# device. Reading the trace (report, archive) looks at it and never opens
# it.
recording_allowed &&
test_expect_success 'an object a trace names that is now a device is looked at, never opened' '
	mkdir obj && cp "$SAMPLES/loop_leak" obj/prog &&
	"$MEMSIGHT" record -q -e malloc --embed none -o dev.trace -- obj/prog 10 >/dev/null &&
	rm obj/prog && mknod obj/prog c 1 3 &&
	{ watch_opens "$TRASH/obj/prog" >watch2 & } &&
	while ! grep -q watching watch2 2>/dev/null; do sleep 0.1; done &&
	timeout 60 "$MEMSIGHT" report dev.trace >/dev/null 2>&1 &&
	timeout 60 "$MEMSIGHT" leaks dev.trace >/dev/null 2>&1 &&
	timeout 60 "$MEMSIGHT" archive -o dev2.trace dev.trace 2>/dev/null &&
	wait && cat watch2 && grep "^opens 0$" watch2
'

test_expect_success 'outputs still go where the user says: a new file, a file replaced, /dev/stdout, a link of root'"'"'s' '
	"$MEMSIGHT" flamegraph -o mine.svg "$T" && head -c 5 mine.svg | grep "<?xml" &&
	"$MEMSIGHT" flamegraph -o mine.svg "$T" &&
	"$MEMSIGHT" flamegraph -o /dev/stdout "$T" >out.svg && head -c 5 out.svg | grep "<?xml" &&
	ln -s vdir mylink && "$MEMSIGHT" report --html mylink/r.html "$T" >/dev/null && test -s vdir/r.html &&
	mkdir pub/sticky-out && "$MEMSIGHT" pprof -o pub/p.pb.gz "$T" && test -s pub/p.pb.gz
'

# MEMSIGHT_CACHE_DIR named by mistake: a shared directory keeps its mode
# and its files; a private one loses only the cache's own files when the
# cache is trimmed.
test_expect_success 'a cache directory memsight did not make is never changed, and only its own files go' '
	K=$TOP/samples/traces/fault-kinds.trace &&
	mkdir shared && chmod 1777 shared && echo pdf >shared/a.pdf && as_nobody touch shared/b.pdf &&
	MEMSIGHT_CACHE_DIR=$PWD/shared MEMSIGHT_CACHE_MAX=1 "$MEMSIGHT" folded "$K" >/dev/null 2>err &&
	grep "cache directory .*shared. is writable by others" err &&
	test "$(stat -c %a shared)" = 1777 && test "$(ls shared | tr "\n" " ")" = "a.pdf b.pdf " &&
	mkdir priv && chmod 700 priv && echo x >priv/x.pdf && echo y >priv/build.mk && echo z >priv/memsight-notes &&
	chown nobody priv/memsight-notes &&
	MEMSIGHT_CACHE_DIR=$PWD/priv MEMSIGHT_CACHE_MAX=1 "$MEMSIGHT" folded "$K" >/dev/null &&
	MEMSIGHT_CACHE_DIR=$PWD/priv MEMSIGHT_CACHE_MAX=1 "$MEMSIGHT" folded "$T" >/dev/null 2>&1 &&
	ls -l priv && test "$(stat -c %a priv)" = 700 &&
	test -f priv/x.pdf && test -f priv/build.mk && test -f priv/memsight-notes &&
	test "$(ls priv | grep -c "^memsight-.*debugcut$")" = 1
'

# A flight recorder's ring is the evidence: nothing replaces it while it
# records, --force included.
recording_allowed &&
test_expect_success 'a live ring is replaced neither by archive -o nor by a second recorder' '
	{ "$MEMSIGHT" record -q --ring 8M -e faults --pidfile live.pid -o live.trace -- sleep 4 & } &&
	i=0 && while [ ! -s live.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done &&
	ino=$(stat -c %i live.trace) && cp "$T" other.trace &&
	test_must_fail "$MEMSIGHT" archive -o live.trace other.trace 2>err && cat err && test_one_line err &&
	grep "live.trace. is a trace a running recorder writes" err &&
	test_must_fail "$MEMSIGHT" record -q -e faults -o live.trace -- true 2>err && cat err && test_one_line err &&
	test_must_fail "$MEMSIGHT" record -q --force -e faults -o live.trace -- true 2>err && test_one_line err &&
	grep "live.trace. is a trace a running recorder writes" err &&
	test "$(stat -c %i live.trace)" = "$ino" &&
	wait && "$MEMSIGHT" info live.trace >info && grep "^status: " info && ! grep "^status: .*cut" info
'

# A flight recorder's snapshots against another user's crash loop: a
# program that crashes 30 times saves one snapshot, and when snapshots are
# pruned the first of each cause stays (here the operator's SIGUSR1),
# beside the newest.
wait_for() { i=0; while ! eval "$1" && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done; eval "$1"; }
if recording_allowed; then
	cp "$SAMPLES/mem_errors" pub/crasher && chmod 755 pub/crasher
	CRASHES="for i in \$(seq 30); do $TRASH/pub/crasher null; sleep 0.05; done"

	test_expect_alone 'a crash loop of another user saves one snapshot; the rest are counted, not written' '
		mkdir fl && { "$MEMSIGHT" record -q -a --ring 16M -e faults,signals --trigger crash --trigger signal \
			--after 0.2 --pidfile fl.pid -o fl/ring.trace & } &&
		wait_for "test -s fl.pid" && kill -USR1 $(cat fl.pid) &&
		wait_for "ls fl | grep -q signal.trace" &&
		as_nobody sh -c "$CRASHES" >/dev/null 2>&1; sleep 1 &&
		kill -INT $(cat fl.pid) && wait && ls fl &&
		test "$(ls fl | grep -c "\.crash\.trace$")" = 1 && test "$(ls fl | grep -c "\.signal\.trace$")" = 1 &&
		"$MEMSIGHT" info fl/ring.trace >info && grep "^snapshots:" info &&
		grep "^snapshots:   2 saved, 0 failed, [1-9][0-9]* triggers held back" info
	'

	test_expect_alone 'with no limits, pruning keeps the first snapshot of each cause' '
		mkdir fl2 && { "$MEMSIGHT" record -a --ring 16M -e faults,signals --trigger crash --trigger signal \
			--after 0 --trigger-holdoff 0 --max-snapshots 2 --pidfile fl2.pid -o fl2/ring.trace 2>notes & } &&
		wait_for "test -s fl2.pid" && kill -USR1 $(cat fl2.pid) &&
		wait_for "ls fl2 | grep -q signal.trace" &&
		as_nobody sh -c "$CRASHES" >/dev/null 2>&1; sleep 1 &&
		kill -INT $(cat fl2.pid) && wait && ls fl2 &&
		first=$(sed -n "s/^memsight record: snapshot .\(.*\.crash\.trace\).: trigger crash.*/\1/p" notes | head -1) &&
		test "$(grep -c "^memsight record: snapshot .*crash.trace" notes)" -gt 2 &&
		test -f "$first" && test "$(ls fl2 | grep -c "\.signal\.trace$")" = 1 &&
		test "$(ls fl2 | grep -c "\.crash\.trace$")" = 2
	'
fi

# What a process names (its functions, its JIT code, its cgroup, itself)
# reaches a terminal without a control byte: every text result and every
# message, the recorder's note of a crash included.
if recording_allowed; then
	test_expect_alone 'escapes in a symbol, a JIT name, a cgroup and a crashing process'"'"'s name never reach the terminal' '
		ESC=$(printf "\033") &&
		cat >esc.c <<-\EOF &&
		#include <stdlib.h>
		#include <string.h>
		#include <sys/prctl.h>
		__attribute__((noinline)) void growESCred(void)
		{
			for (int i = 0; i < 64; i++)
				memset(malloc(1 << 16), 1, 1 << 16);
		}
		int main(void)
		{
			prctl(PR_SET_NAME, "c\033]0;t\007", 0, 0, 0);
			growESCred();
			*(volatile int *)0 = 1;
			return 0;
		}
		EOF
		cc -O1 -fno-omit-frame-pointer -c -o esc.o esc.c &&
		objcopy --redefine-sym "growESCred=grow${ESC}[31mred" esc.o && cc -o esc esc.o &&
		{ "$MEMSIGHT" record -e malloc,faults,signals --ring 16M --trigger crash --after 0 -o esc.trace -- ./esc \
			2>rec.err; true; } &&
		grep "trigger crash" rec.err &&
		"$MEMSIGHT" record -q -e faults -o jit.trace -- sh -c "\"$SAMPLES/jit_code\" perfmap \"$PWD\" 800 >jit.truth & sleep 0.3;
			sed -i \"s/jit_alpha/jit_${ESC}[31malpha/\" /tmp/perf-\$!.map; wait" &&
		for c in leaks folded functions report errors info events; do
			"$MEMSIGHT" $c esc.trace || return 1
		done >esc.out 2>&1 &&
		for c in folded faults report; do "$MEMSIGHT" $c jit.trace || return 1; done >jit.out 2>&1 &&
		v2=$(awk "\$3 == \"cgroup2\" { print \$2; exit }" /proc/mounts) && : >cg.out &&
		if [ -n "$v2" ] && mkdir "$v2/cg${ESC}[31mx-$$"; then
			"$MEMSIGHT" record -q -a -e faults -o cg.trace -- \
				sh -c "echo \$\$ >\"$v2/cg${ESC}[31mx-$$/cgroup.procs\" && exec \"$SAMPLES/box_grow\" 64 50" \
				>/dev/null &&
			"$MEMSIGHT" report cg.trace >cg.out 2>&1; rc=$?; rmdir "$v2/cg${ESC}[31mx-$$"; test $rc = 0 &&
			grep "cg?\[31mx" cg.out
		fi &&
		grep "grow?\[31mred" esc.out && grep "jit_?\[31malpha" jit.out &&
		! grep -l "$ESC\|$(printf "\007")" rec.err esc.out jit.out cg.out
	'
fi

# A recorder stopped (or starved) while its command allocates: with
# --no-block, the default of --sample-bytes, the program goes on and what
# it could not report is counted lost; with --block, the default for every
# call, it waits, as documented, and nothing is lost. The program waits at
# a gate, its wrapper already connected, until the recorder is stopped: a
# fast machine would otherwise finish churn first.
if recording_allowed; then
	test_expect_success 'a stopped recorder: --no-block never holds the program, and counts what it dropped' '
		for mode in --no-block --block; do
			rm -f st.pid st.out st.go &&
			{ ALLOC_ZOO_GATE=st.go "$MEMSIGHT" record -q $mode -e malloc --pidfile st.pid -o st$mode.trace -- \
				"$SAMPLES/alloc_zoo" churn 20000 >st.out 2>/dev/null & } &&
			wait_for "test -s st.pid && grep -q \"at the gate\" st.out" && kill -STOP $(cat st.pid) && : >st.go && sleep 0.3 &&
			if [ $mode = --no-block ]; then
				wait_for "grep -q leaked st.out"
			else
				sleep 1.5 && ! grep leaked st.out
			fi; ok=$?; kill -CONT $(cat st.pid); wait; test $ok = 0 || return 1
		done &&
		"$MEMSIGHT" info st--no-block.trace >nb.info && grep "^lost: *[1-9]" nb.info &&
		"$MEMSIGHT" info st--block.trace >b.info && grep "^lost: *0$" b.info &&
		"$MEMSIGHT" leaks st--block.trace | grep "^# memsight leaks of .st--block.trace.: 0 bytes"
	'
fi

# A snapshot that cannot be written (the ring's disk is full) is a
# failure the exit status says, not only a line on stderr.
if recording_allowed && mkdir small && mount -t tmpfs -o size=9m tmpfs small 2>/dev/null; then
	test_expect_success 'a snapshot that could not be saved makes the recorder exit 1' '
		{ "$MEMSIGHT" record --ring 8M -e faults --trigger signal --after 0 --pidfile sm.pid -o small/ring.trace \
			-- sleep 2 2>sm.err; echo $? >sm.rc; } &
		wait_for "test -s sm.pid" && sleep 0.3 &&
		{ dd if=/dev/zero of=small/fill bs=64k 2>/dev/null; true; } &&
		kill -USR1 $(cat sm.pid) && wait &&
		cat sm.err && test "$(cat sm.rc)" = 1 && grep "snapshot for trigger signal failed" sm.err &&
		! grep "disk is full; recording stopped" sm.err
	'
	umount small
fi

# A disk that fills while the wrapper reports every call: the trace keeps
# the mappings of every sample it holds (its stacks resolve, the wrapper is
# seen), says what it lost in every view, and the command goes on
# unrecorded at its own speed.
if recording_allowed && mkdir full && mount -t tmpfs -o size=4m tmpfs full 2>/dev/null; then
	test_expect_success 'a full disk keeps what its samples need, and every view says what was not written' '
		"$MEMSIGHT" record -e malloc -o full/m.trace -- "$SAMPLES/alloc_zoo" churn 100000 >out 2>err; rc=$? &&
		cat err && test $rc = 1 && grep "^alloc_zoo: leaked 0 bytes" out &&
		grep "NOT WRITTEN [0-9]* of [0-9]* records: the disk holding the trace filled; the trace holds what reached the disk, and the mappings of every sample in it" err &&
		"$MEMSIGHT" leaks full/m.trace >leaks.txt 2>leaks.err &&
		cat leaks.txt leaks.err &&
		! grep "without memsight.s wrapper" leaks.txt && ! grep "stop short" leaks.err &&
		grep "^# INCOMPLETE: records were not written (the disk holding the trace filled)" leaks.txt &&
		"$MEMSIGHT" leaks --json full/m.trace >leaks.json &&
		grep "\"incomplete\":true" leaks.json && ! grep "\"lost\":0[,}]" leaks.json
	'
	umount full
fi

# --cgroup keeps a process, not a number: once a process of the cgroup
# exits, a process outside it that is given its pid (ns_last_pid) is not
# recorded. Where the cgroup is not of the perf_event hierarchy (a v1
# memory cgroup) the recorder filters by pid itself.
memcg_32mib memsight-reuse
if recording_allowed && [ -n "$CG" ] && [ -w /proc/sys/kernel/ns_last_pid ]; then
	test_expect_alone '--cgroup: a pid of the cgroup given to a process outside it after an exit is not recorded' '
		cp "$SAMPLES/box_grow" outsider &&
		{ "$MEMSIGHT" record -q -a --cgroup "$CG" -e faults -d 6 --pidfile cg.pid -o reuse.trace & } &&
		i=0 && while [ ! -s cg.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done &&
		sh -c "echo \$\$ >$CG/cgroup.procs && echo \$\$ >inside.pid && exec sleep 1.5" &&
		p=$(cat inside.pid) && echo $((p - 1)) >/proc/sys/kernel/ns_last_pid &&
		sh -c "echo \$\$ >outside.pid; exec ./outsider 64 200" >/dev/null &&
		echo "inside $p, outside $(cat outside.pid)" &&
		wait && "$MEMSIGHT" folded -e faults reuse.trace >reuse.folded 2>/dev/null &&
		if [ "$(cat outside.pid)" = "$p" ]; then
			! grep "^outsider;" reuse.folded
		else
			echo "# another process took pid $p first: the check of the outsider is void"
		fi
	'
fi
[ -n "$CG" ] && rmdir "$CG" 2>/dev/null

# One user's runtimes cannot take the room of another's: nobody's three
# Another user's process that maps one page of a file 30,000 times: what
# a ring restates of the processes as each segment begins would take more
# than the segment, which stopped the recorder at the first one. It goes
# on, that process restating fewer of its mappings, and says so; a
# program beside it still has its stacks named in the window.
if recording_allowed; then
	cp "$SAMPLES/map_many" pub/map_many && chmod 755 pub/map_many

	test_expect_alone 'a user'"'"'s process with 30,000 mappings: a ring goes on, cuts that process'"'"'s restatements to fit, and says so' '
		rm -f mm.pid && { "$MEMSIGHT" record -a --ring 16M --compression none -e faults --pidfile mm.pid \
			-o mm.trace 2>mm.err & } &&
		rec=$! && wait_for "test -s mm.pid" &&
		{ as_nobody "$TRASH/pub/map_many" 30000 3000 >mm.out & } &&
		wait_for "grep -q mapped mm.out" &&
		"$SAMPLES/phases" 16 64 16 >/dev/null &&
		kill -INT $rec && wait $rec && wait &&
		cat mm.out mm.err && ! grep "cannot write" mm.err &&
		grep "warning: at [1-9][0-9]* of the ring.s [0-9]* segments the processes. mappings did not fit in half a segment: the processes that map the most restate fewer there" mm.err &&
		"$MEMSIGHT" folded mm.trace >mm.folded 2>/dev/null && grep -q "^phases;.*;main;phase_middle " mm.folded
	'
fi

# 30 MiB perf maps get 64 MiB at most, and root's small one after them is
# still carried. Root's process lingers: whose a process's files must be
# is read while it lives, and a recorder busy copying may see it late.
if recording_allowed; then
	test_expect_alone 'JIT maps are budgeted per user: one user'"'"'s big maps leave room for another'"'"'s' '
		cat >pub/bigmap.sh <<-\EOF &&
		for i in 1 2 3; do
			sh -c '"'"'yes "7f0000001000 10 nobodys_function" | head -c 31457280 >/tmp/perf-$$.map; echo $$ >>"$1"'"'"' big "$1"
		done
		EOF
		: >pub/big.pids && chmod 666 pub/big.pids &&
		ATTACK="sh $TRASH/pub/bigmap.sh $TRASH/pub/big.pids" &&
		rm -f jit.pid && { "$MEMSIGHT" record -q -a -d 60 -e faults --pidfile jit.pid -o budget.trace & } &&
		wait_for "test -s jit.pid" && as_nobody sh -c "$ATTACK" &&
		sh -c "echo \"7f0000002000 10 roots_function\" >/tmp/perf-\$\$.map; echo \$\$ >root.pid; sleep 2" &&
		sleep 0.5 && kill -INT $(cat jit.pid) && wait && for p in $(cat pub/big.pids root.pid); do rm -f /tmp/perf-$p.map; done &&
		"$MEMSIGHT" info budget.trace >budget.info 2>/dev/null &&
		grep "perf-map" budget.info &&
		n=$(for p in $(cat pub/big.pids); do grep "perf-map  pid $p " budget.info; done | wc -l) &&
		echo "nobody: $n of 3 carried" && test $n = 2 &&
		grep "perf-map  pid $(cat root.pid) .* 1 functions" budget.info
	'
fi

if recording_allowed && [ -n "$USERNS" ]; then
	# The process whose files are planted is started inside the
	# namespace, so the recorder sees it there from its first mapping.
	cat >pub/plant.sh <<-\EOF
	# plant.sh KIND WHAT [PIDFILE]: a process in this (private) mount
	# namespace whose perf map is WHAT bind-mounted over it (bind), a link
	# to WHAT on a private /tmp (link), or a FIFO there (fifo); its pid
	# written to PIDFILE.
	# A child: a process of its own, in this namespace from its start.
	sh -c '
		f=/tmp/perf-$$.map
		[ -z "$3" ] || echo $$ >"$3"
		case $1 in
		bind) touch $f && mount --bind "$2" $f ;;
		link) mount -t tmpfs none /tmp && ln -s "$2" $f ;;
		fifo) mount -t tmpfs none /tmp && mkfifo $f ;;
		esac
		sleep 0.2' plant "$@"
	EOF
	chmod 644 pub/plant.sh

	# Others' programs (a JIT of another test) may have perf maps of
	# their own while this records the whole system: only the planted
	# process's is looked for.
	test_expect_success 'a perf map bind-mounted over by a root-only file is not copied; nor one through a link' '
		ATTACK="unshare -Urm sh $TRASH/pub/plant.sh bind $SECRET" &&
		record_around bind.trace -e faults &&
		test "$(in_trace bind.trace)" = 0 &&
		ATTACK="unshare -Urm sh $TRASH/pub/plant.sh link $SECRET $TRASH/pub/link.pid" &&
		record_around link.trace -e faults &&
		test "$(in_trace link.trace)" = 0 &&
		"$MEMSIGHT" info link.trace >info && test -s pub/link.pid &&
		! grep "perf-map  pid $(cat pub/link.pid) " info
	'
	# The file the bind mount covered is on the host /tmp, owned by nobody:
	# gone, so that no later process of its pid finds it there.
	find /tmp -maxdepth 1 -name "perf-*.map" -user nobody -newer pub/plant.sh -delete 2>/dev/null

	# A device's open can do something (a watchdog is armed by it): the
	# recorder looks at what a path is before it opens it. A node of the
	# test's own, watched for opens with inotify.
	test_expect_success 'a device or a FIFO at a perf map is never opened, and nothing waits on it' '
		mknod "$TRASH/pub/dev" c 1 3 && chmod 666 "$TRASH/pub/dev" &&
		{ watch_opens "$TRASH/pub/dev" >watch & } &&
		while ! grep -q watching watch 2>/dev/null; do sleep 0.1; done &&
		ATTACK="unshare -Urm sh $TRASH/pub/plant.sh bind $TRASH/pub/dev; unshare -Urm sh $TRASH/pub/plant.sh fifo" &&
		record_around dev.trace -e faults &&
		wait && cat watch && grep "^opens 0$" watch
	'

	# A running program of nobody's, and a FIFO mounted over the file it
	# runs from, in its namespace: what the recorder reads of its objects
	# it reads through the mappings, never a path that may block.
	test_expect_success 'record -e malloc -p: a FIFO mounted over a mapped object blocks nothing' '
		mkdir pub/run && chmod 777 pub/run &&
		cat >pub/run/target.sh <<-\EOF &&
		cp /bin/sleep "$1/sleep" && "$1/sleep" 30 &
		sleep 0.2 && mkfifo "$1/fifo" && mount --bind "$1/fifo" "$1/sleep" && echo $! >"$1/pid"
		wait
		EOF
		{ as_nobody unshare -Urm sh pub/run/target.sh "$TRASH/pub/run" & } &&
		i=0 && while [ ! -s pub/run/pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done &&
		pid=$(cat pub/run/pid) &&
		timeout -s KILL 30 "$MEMSIGHT" record -q -e malloc -p $pid -d 0.5 -o p.trace; rc=$? &&
		kill $pid; wait; test $rc = 0
	'
else
	echo "# recording, or a user namespace for nobody, is not possible here: the recorder's attacks are skipped"
fi

test_done
