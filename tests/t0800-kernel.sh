#!/bin/sh
# Kernel memory and the BCC-style memory views from one recording: event
# groups, filters and sampling, OOM kills in a memory-limited cgroup with
# their reclaim, shm calls, pipes' kernel memory, faults by file, RSS.
. "$(dirname "$0")/test-lib.sh"
test_skip_unless_recording

S=$SAMPLES
TRACEFS=/sys/kernel/tracing
[ -d $TRACEFS/events ] || TRACEFS=/sys/kernel/debug/tracing

# json FILE EXPR: evaluate a perl expression on the decoded JSON ($d).
json() { perl -MJSON::PP -e 'local $/; open my $f, "<", $ARGV[0] or die; my $d = decode_json(<$f>); '"$2" "$1"; }

test_expect_success 'every group records on this kernel, each event once' '
	"$MEMSIGHT" record -q -e kmem,reclaim,oom,shm,rss,migrate,compaction,swap,faults -o all.trace -- true &&
	"$MEMSIGHT" info all.trace >info &&
	for ev in kmem:kmalloc kmem:mm_page_free percpu:percpu_alloc_percpu vmscan:mm_vmscan_direct_reclaim_begin \
		vmscan:mm_vmscan_memcg_reclaim_end vmscan:mm_vmscan_kswapd_wake vmscan:mm_shrink_slab_end \
		oom:mark_victim syscalls:sys_enter_shmat kmem:rss_stat migrate:mm_migrate_pages \
		compaction:mm_compaction_end major-faults; do
		grep -q "^  $ev " info || { echo "no $ev"; exit 1; }
	done &&
	test "$(grep -c "^  major-faults " info)" = 1 &&
	# Faults are recorded once: by the exceptions tracepoints where the
	# kernel has them, else by the software event.
	if test -d $TRACEFS/events/exceptions; then
		grep -q "^  exceptions:page_fault_user " info && grep -q "^  exceptions:page_fault_kernel " info &&
		! grep -q "^  page-faults " info
	else
		grep -q "^  page-faults " info
	fi
'

# A pipe's own objects are those whose allocator (frame 0) alloc_pipe_info
# called (frame 1): a new slab's metadata allocated beneath is the slab's.

# A copy of tracefs holding only some events: a kernel that lacks the rest.
mkdir -p fakefs/events/syscalls fakefs/events/kmem
cp $TRACEFS/events/header_page fakefs/events/ 2>/dev/null
for e in raw_syscalls/sys_exit kmem/kmalloc; do
	mkdir -p fakefs/events/$e && cp $TRACEFS/events/$e/id $TRACEFS/events/$e/format fakefs/events/$e/
done

test_expect_success 'a group this kernel lacks: one line, the rest is recorded' '
	MEMSIGHT_TRACEFS=$TRASH/fakefs "$MEMSIGHT" record -q -e brk,oom -o lack.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "skipping group .oom.: this kernel has none of oom:mark_victim, oom:wake_reaper" err &&
	"$MEMSIGHT" info lack.trace | grep "^  syscalls:sys_exit_brk "
'

test_expect_success 'a group with some events missing: they are named, the others recorded' '
	MEMSIGHT_TRACEFS=$TRASH/fakefs "$MEMSIGHT" record -q -e kmem -o part.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "group .kmem. without kmem:kfree, kmem:kmem_cache_alloc" err &&
	"$MEMSIGHT" info part.trace | grep "^  kmem:kmalloc "
'

test_expect_success 'an unknown group name: one line, nothing recorded' '
	test_must_fail "$MEMSIGHT" record -e kmem,nosuch -o x.trace -- true 2>err &&
	test_one_line err && grep "unknown event group .nosuch.: known groups are brk, .*kmem" err &&
	test ! -e x.trace
'

test_expect_success '--filter reaches the kernel: every kmalloc kept is at least 4096 bytes' '
	"$MEMSIGHT" record -q -e kmem --filter "kmem:kmalloc:bytes_req >= 4096" -o filt.trace -- \
		"$S/pipe_hold" 20 >/dev/null &&
	"$MEMSIGHT" events -G -e kmem:kmalloc filt.trace >ev &&
	test -s ev &&
	! sed -n "s/.*bytes_req=\([0-9]*\).*/\1/p" ev | awk "\$1 < 4096 { bad = 1 } END { exit !bad }"
'

test_expect_success 'an invalid filter: one line, that event left out, the rest recorded' '
	"$MEMSIGHT" record -q -e kmem --filter "kmalloc:no_such_field > 1" -o badf.trace -- true 2>err &&
	cat err && test_one_line err &&
	grep "the kernel refused the filter .no_such_field > 1. on .kmem:kmalloc." err &&
	"$MEMSIGHT" info badf.trace >info &&
	! grep "^  kmem:kmalloc " info && grep "^  kmem:kfree " info
'

test_expect_success 'a filter on one syscall narrows it alone: the others of its event are all kept' '
	"$MEMSIGHT" record -q -e brk,mmap -o sys.trace -- true &&
	"$MEMSIGHT" record -q -e brk,mmap --filter "syscalls:sys_exit_munmap:ret != 0" -o sysf.trace -- true &&
	"$MEMSIGHT" info sys.trace >info && "$MEMSIGHT" info sysf.trace >infof &&
	grep "^  syscalls:sys_exit_munmap  *mmap  *[1-9][0-9]* samples" info &&
	grep "^  syscalls:sys_exit_munmap  *mmap  *0 samples" infof &&
	for ev in syscalls:sys_exit_brk syscalls:sys_exit_mmap; do
		test "$(grep "^  $ev " info)" = "$(grep "^  $ev " infof)" || exit 1
	done &&
	grep "^  syscalls:sys_exit_mmap  *mmap  *[1-9][0-9]* samples" infof &&
	grep "^  syscalls:sys_exit_brk  *brk  *[1-9][0-9]* samples" infof
'

test_expect_success 'brk and mmap share one event: sampling them apart is refused in one line' '
	test_must_fail "$MEMSIGHT" record -e brk/2,mmap -o x.trace -- true 2>err &&
	test_one_line err && grep "give them the same" err && test ! -e x.trace
'

test_expect_success 'a filter naming no recorded event: one line, nothing recorded' '
	test_must_fail "$MEMSIGHT" record -e kmem --filter "nosuch:x == 1" -o x.trace -- true 2>err &&
	test_one_line err && grep "names no recorded tracepoint" err
'

test_expect_alone 'a sampled group (kmem/10): the period is kept and results say they are estimates' '
	"$MEMSIGHT" record -q -e kmem/10 -o samp.trace -- "$S/pipe_hold" 50 >/dev/null &&
	"$MEMSIGHT" leaks --kernel samp.trace >leaks &&
	grep "(ESTIMATE)" leaks && grep "sampled recording (kmem/10)" leaks &&
	test_must_fail "$MEMSIGHT" record -e kmem/0 -o x.trace -- true 2>err && test_one_line err
'

# Only where nobody can run the build (a clone under a private directory
# cannot be) and the kernel asks for privilege at all.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null &&
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ] && as_nobody "$MEMSIGHT" record -h >/dev/null 2>&1; then
	test_expect_alone 'system-wide without privilege: one line saying what is needed' '
		out=/tmp/memsight-nobody.$$ &&
		test_must_fail as_nobody "$MEMSIGHT" record -a -e faults -d 0.1 -o $out.trace 2>err ;
		rm -f $out.trace &&
		cat err && test_one_line err &&
		grep "system-wide recording (-a) refused for .* it needs root or CAP_PERFMON" err
	'
	# Per process, the kernel samples need 1: the advice says so, not -1.
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ] &&
	test_expect_alone 'a process without privilege: the least perf_event_paranoid that works, or CAP_PERFMON' '
		out=/tmp/memsight-nobody.$$ &&
		test_must_fail as_nobody "$MEMSIGHT" record -e faults -o $out.trace -- true 2>err ;
		rm -f $out.trace &&
		cat err && test_one_line err &&
		grep "refused for .* it needs root or CAP_PERFMON, or kernel.perf_event_paranoid at most 1 (now [0-9]*: sysctl -w kernel.perf_event_paranoid=1)$" err
	'
fi

memcg_32mib memsight-test
if [ -n "$CG" ]; then
	test_expect_success 'a hog in a 32 MiB cgroup: the OOM kill with the right victim, reclaim before it' '
		{ "$MEMSIGHT" record -e oom,reclaim -o oom.trace -- \
			sh -c "echo \$\$ >$CG/cgroup.procs && exec $S/mem_hog" >truth 2>rec; test $? = 137; } &&
		cat truth rec &&
		grep "1 OOM kill recorded" rec &&
		grep "^memsight record: the command was killed by SIGKILL$" rec &&
		pid=$(sed -n "s/^mem_hog: pid \([0-9]*\) comm mem_hog$/\1/p" truth) && test -n "$pid" &&
		"$MEMSIGHT" oom --json oom.trace >oom.json &&
		json_valid oom oom.json &&
		json oom.json "my \$k = \$d->{kills}; die unless @\$k == 1; my \$v = \$k->[0]{victim};
			die qq{pid \$v->{pid}} unless \$v->{pid} == $pid && \$v->{comm} eq q{mem_hog};
			die q{no anon rss} unless \$v->{anon_rss_kb} > 16384;
			die q{no context} unless \$k->[0]{context} =~ /--- meminfo/ && \$k->[0]{context} =~ /--- cgroup/;
			die q{no trigger stack} unless grep { \$_->{function} eq q{grow} } @{\$k->[0]{trigger}{frames}}" &&
		"$MEMSIGHT" oom oom.trace >oom.txt &&
		grep "^OOM kill at .*: victim pid $pid (mem_hog)" oom.txt &&
		grep "^	loadavg:" oom.txt
	'
	test_expect_success 'the reclaim histogram counts every memcg reclaim recorded before the kill' '
		pid=$(sed -n "s/^mem_hog: pid \([0-9]*\) comm mem_hog$/\1/p" truth) &&
		"$MEMSIGHT" events -G -e vmscan:mm_vmscan_memcg_reclaim_end oom.trace >ends &&
		n=$(wc -l <ends) && test "$n" -gt 0 &&
		"$MEMSIGHT" reclaim --json oom.trace >rec.json &&
		json rec.json "my \$n = 0; my \$h = 0; for my \$p (@{\$d->{processes}}) { \$n += \$p->{memcg}{count};
			\$h += \$_ for @{\$p->{memcg}{hist_log2_us}} }
			die qq{count \$n hist \$h events $n} unless \$n == $n && \$h == $n && \$d->{reclaims} == $n;
			die q{no latency} unless \$d->{slowest}[0]{latency_ns} > 0" &&
		"$MEMSIGHT" reclaim oom.trace | grep "^memcg reclaim, pid $pid mem_hog: $n reclaims"
	'
	test_expect_success 'reclaim flame graphs: one count per reclaim, latency in microseconds' '
		n=$(wc -l <ends) &&
		"$MEMSIGHT" folded -e reclaim oom.trace >count.folded &&
		test "$(awk "{ s += \$NF } END { print s }" count.folded)" = "$n" &&
		"$MEMSIGHT" folded -e reclaim -w latency oom.trace >lat.folded &&
		grep "^mem_hog;.*;grow;.*try_to_free_mem_cgroup_pages_\[k\] [0-9]*$" lat.folded &&
		us=$(awk "{ s += \$NF } END { print s }" lat.folded) &&
		json rec.json "my \$t = 0; \$t += \$_->{memcg}{total_ns} for @{\$d->{processes}};
			die qq{\$t vs $us} if abs(\$t / 1000 - $us) > $n" &&
		"$MEMSIGHT" flamegraph -e reclaim -w latency oom.trace >rec.svg && xmllint --noout rec.svg
	'
	rmdir $CG 2>/dev/null
fi

test_expect_success 'shm: every call with its arguments and result, as the sample made them' '
	"$MEMSIGHT" record -q -e shm -o shm.trace -- "$S/shm_cycle" 8192 >truth &&
	"$MEMSIGHT" shm -G shm.trace >view &&
	cat truth view &&
	awk "NR > 1 { r = \$NF; \$1 = \$2 = \$3 = \$NF = \"\"; gsub(/^ +| +$/, \"\"); gsub(/ +/, \" \"); print \$0 \" ret=\" r }" \
		view >got &&
	test_cmp truth got &&
	"$MEMSIGHT" shm --json shm.trace >shm.json &&
	N=$(($(wc -l <view) - 1)) perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
		die unless \$d->{trace} eq q{shm.trace} && @{\$d->{events}} == \$ENV{N} && \$ENV{N} > 0" <shm.json
'

test_expect_alone 'pipes held open: kernel memory outstanding, by syscall path, N objects a site' '
	"$MEMSIGHT" record -q -a -e kmem -d 1 -o held.trace -- "$S/pipe_hold" 50 3000 >/dev/null &&
	pid=$("$MEMSIGHT" info held.trace | sed -n "s/^target: *system command //p") &&
	"$MEMSIGHT" leaks --kernel --pid $pid --json -T 100000 held.trace >held.json &&
	json held.json "my (\$fifty, \$pipe) = (0, 0);
		for my \$s (@{\$d->{stacks}}) { my @f = map { \$_->{function} // q{} } @{\$s->{frames}};
			next unless grep { \$_ eq q{do_pipe2} } @f;
			die q{no user stack} unless grep { \$_ eq q{main} } @f;
			\$fifty++ if \$s->{slab} == 50; \$pipe += \$s->{slab} if \$f[1] eq q{alloc_pipe_info} }
		die qq{\$fifty sites of 50, \$pipe pipe_info} unless \$fifty >= 5 && \$pipe == 100"
'

test_expect_success 'kmem flame graphs: the leaked weight is what leaks --kernel counts' '
	"$MEMSIGHT" leaks --kernel --json held.trace >all.json &&
	"$MEMSIGHT" folded -e kmem -w leaked held.trace >leaked.folded &&
	json all.json "die unless \$d->{leaked_bytes} == $(awk "{ s += \$NF } END { print s }" leaked.folded)" &&
	"$MEMSIGHT" folded -e kmem -w bytes held.trace | grep -q ";alloc_pipe_info_\[k\];" &&
	"$MEMSIGHT" flamegraph -e kmem -w leaked held.trace >kmem.svg && xmllint --noout kmem.svg &&
	grep "Outstanding Kernel Memory" kmem.svg &&
	test_must_fail "$MEMSIGHT" folded -e reclaim -w leaked held.trace 2>err && test_one_line err
'

test_expect_alone 'pipes closed: what the pipes allocated is freed, and the pairing balances' '
	"$MEMSIGHT" record -q -a -e kmem -o closed.trace -- "$S/pipe_hold" 50 0 300 >/dev/null &&
	pid=$("$MEMSIGHT" info closed.trace | sed -n "s/^target: *system command //p") &&
	"$MEMSIGHT" leaks --kernel --pid $pid --json --no-lines -T 100000 closed.trace >closed.json &&
	json closed.json "for my \$s (@{\$d->{stacks}}) { my @f = map { \$_->{function} // q{} } @{\$s->{frames}};
			die q{pipe_info outstanding} if \$f[1] eq q{alloc_pipe_info} }
		my \$c = \$d->{classes}{slab};
		die q{unbalanced} unless \$c->{allocations} == \$c->{matched_frees} + \$c->{outstanding} + \$c->{lost_frees};
		die q{too few frees} unless \$c->{matched_frees} >= 100"
'

# One frame schema in every JSON view: leaks of user memory wrote its own
# without "inlined" and "kernel".
test_expect_success 'leaks --json and leaks --kernel --json give frames the same keys' '
	"$MEMSIGHT" record -q -e malloc -o inl.trace -- "$SAMPLES/nofp/inline_alloc" 20 >/dev/null &&
	"$MEMSIGHT" leaks --json --no-lines inl.trace >user.json &&
	keys="for my \$s (@{\$d->{stacks}}) { for (@{\$s->{frames}}) { print join(q{,}, sort keys %\$_), q{ } } }" &&
	json user.json "$keys" | tr " " "\n" | grep . | sort -u >user.keys &&
	json closed.json "$keys" | tr " " "\n" | grep . | sort -u >kernel.keys &&
	cat user.keys kernel.keys &&
	echo "function,inlined,kernel,object,offset" >expect &&
	test_cmp expect user.keys &&
	test_cmp expect kernel.keys &&
	json user.json "my \$n = grep { \$_->{inlined} } map { @{\$_->{frames}} } @{\$d->{stacks}}; die q{no inlined frame} unless \$n" &&
	json closed.json "my \$n = grep { \$_->{kernel} } map { @{\$_->{frames}} } @{\$d->{stacks}}; die q{no kernel frame} unless \$n"
'

test_expect_success 'faults by file: one fault a page of the mapped file, anonymous pages apart' '
	"$MEMSIGHT" record -q -e faults,mmap -o ft.trace -- "$S/file_touch" "$TRASH/ft.data" 32 16 >truth &&
	grep "^file_touch: 32 file pages of $TRASH/ft.data, 16 anonymous pages$" truth &&
	"$MEMSIGHT" faults --json ft.trace >ft.json &&
	json ft.json "my (\$f) = grep { \$_->{name} eq q{$TRASH/ft.data} } @{\$d->{files}};
		die q{file} unless \$f && \$f->{file_backed} && \$f->{faults} == 32;
		my (\$a) = grep { grep { (\$_->{function} // q{}) eq q{touch_anon} } @{\$_->{frames}} } @{\$d->{stacks}};
		die q{anon} unless \$a && \$a->{faults} == 16;
		die q{kinds} if \$d->{kinds} && (\$f->{kinds}{write} != 32 || \$f->{kinds}{read} || \$f->{kinds}{cow})" &&
	"$MEMSIGHT" faults ft.trace >ft.txt &&
	grep -E "^        32        0( +[0-9]+)*  file   $TRASH/ft.data$" ft.txt
'

test_expect_success 'report: faults of one mapping the kernel merged show as one mapping' '
	"$MEMSIGHT" record -q -e faults,mmap -o merged.trace -- "$S/file_touch" "$TRASH/m.data" 4 16 8 >truth &&
	grep "^file_touch: 4 file pages of $TRASH/m.data, 16 anonymous pages, then 8 below them (one mapping)$" truth &&
	"$MEMSIGHT" report -T 100 merged.trace >report &&
	sed -n "/^top mappings by faults:/,/^$/p" report >maps &&
	cat maps &&
	awk "
		function hex(s,  i, v) { v = 0; sub(/^0x/, \"\", s); for (i = 1; i <= length(s); i++) v = v * 16 + index(\"0123456789abcdef\", substr(s, i, 1)) - 1; return v }
		/ faults  0x/ { split(\$3, r, \"-\"); lo[NR] = hex(r[1]); hi[NR] = hex(r[2]); n[NR] = \$1; anon[NR] = \$4 == \"//anon\" }
		END {
			for (i in lo) for (j in lo) if (i < j && lo[i] < hi[j] && lo[j] < hi[i]) { print \"overlap\"; exit 1 }
			for (i in lo) if (anon[i] && n[i] >= 24 && hi[i] - lo[i] >= 98304) found = 1
			exit !found
		}
	" maps
'

test_expect_success 'mmaps: the file and anonymous mappings with size, protection, flags, file' '
	"$MEMSIGHT" mmaps -G ft.trace >view &&
	cat view &&
	grep " mmap  *131072 rw-  SHARED  *0x[0-9a-f]*  *$TRASH/ft.data$" view &&
	grep " mmap  *65536 rw-  PRIVATE|ANONYMOUS  *0x[0-9a-f]* *$" view
'

test_expect_success 'brk: heap growth by stack adds up to the whole' '
	"$MEMSIGHT" record -q -e brk -o brk.trace -- "$S/loop_leak" 20000 >/dev/null &&
	"$MEMSIGHT" brk --json -T 1000 brk.trace >brk.json &&
	json brk.json "my \$t = 0; \$t += \$_->{bytes} for @{\$d->{stacks}};
		die qq{\$t} unless \$t == \$d->{grow_bytes} && \$t >= 20000 * 32"
'

test_expect_success 'rss: the last value of the chart is what the sample read from /proc' '
	"$S/rss_grow" 16 1500 2000 >truth &
	hog=$! &&
	"$MEMSIGHT" record -q -e rss -p $hog -d 3 -o rss.trace &&
	wait $hog &&
	tail -1 truth >last && cat last &&
	"$MEMSIGHT" rss --json --pid $hog rss.trace >rss.json &&
	"$MEMSIGHT" rss --svg rss.svg --pid $hog rss.trace >/dev/null &&
	xmllint --noout rss.svg &&
	set -- $(sed "s/.* anon \([0-9]*\) file \([0-9]*\) shmem \([0-9]*\)/\1 \2 \3/" last) &&
	json rss.json "my \$l = \$d->{processes}[0]{last};
		for ([anon => $1], [file => $2], [shmem => $3]) { my (\$k, \$v) = @\$_;
			die qq{\$k \$l->{\$k} vs \$v} if abs(\$l->{\$k} - \$v) > 4096 }" &&
	grep -q "data-last-bytes=\"$(json rss.json "print \$d->{processes}[0]{last}{resident}")\"" rss.svg
'

# kernel_frames_true TRACE: every kernel frame events names is a text
# symbol of kallsyms whose address plus the offset is the frame's.
kernel_frames_true() {
	"$MEMSIGHT" events "$1" | awk "/kernel\.kallsyms/ { print \$1, \$2 }" >frames &&
	test -s frames &&
	perl -e 'my %a; open my $k, "<", "/proc/kallsyms" or die;
		while (<$k>) { my ($x, $t, $n) = split; push @{$a{$n}}, hex $x if $t =~ /^[tTwW]$/ }
		open my $f, "<", "frames" or die; my $n = 0;
		while (<$f>) { my ($ip, $s) = split; $n++;
			my ($name, $off) = $s =~ /^(.*)\+0x([0-9a-f]+)$/ or die "unnamed: $_";
			grep { $_ + hex($off) == hex($ip) } @{$a{$name} // []} or die "wrong: $_" }
		print "$n frames\n"'
}

entry="$MEMSIGHT_CACHE_DIR/memsight-kallsyms-$(cat /proc/sys/kernel/random/boot_id).ksyms"
test_expect_alone 'kernel symbols: the boot'"'"'s cached core symbols name frames as kallsyms does' '
	rm -f "$entry" &&
	"$MEMSIGHT" record -q -o ks1.trace -- cat /etc/hostname >/dev/null &&
	test -s "$entry" && kernel_frames_true ks1.trace &&
	# The next recording reads the entry (and so touches it).
	touch -d "1 hour ago" "$entry" && touch -d "30 minutes ago" older &&
	"$MEMSIGHT" record -q -o ks2.trace -- cat /etc/hostname >/dev/null &&
	test "$entry" -nt older && kernel_frames_true ks2.trace &&
	# A damaged entry is read as none, and made again.
	head -c 100 "$entry" >cut && cat cut >"$entry" &&
	"$MEMSIGHT" record -q -o ks3.trace -- cat /etc/hostname >/dev/null &&
	kernel_frames_true ks3.trace && test "$(wc -c <"$entry")" -gt 100
'

# kernel.kptr_restrict=2 hides the addresses from root too: what the cache
# kept before is not shown either. One recording, the setting put back.
test_expect_alone 'kernel symbols: none from the cache while kallsyms hides the addresses' '
	test -s "$entry" && old=$(cat /proc/sys/kernel/kptr_restrict) &&
	{ echo 2 >/proc/sys/kernel/kptr_restrict || { echo "# cannot set kptr_restrict: skipped"; return 0; }; } &&
	"$MEMSIGHT" record -q -o ks4.trace -- cat /etc/hostname >/dev/null; rc=$? &&
	echo "$old" >/proc/sys/kernel/kptr_restrict && test $rc = 0 &&
	"$MEMSIGHT" info ks4.trace | grep "^kernel syms: 0$" &&
	! "$MEMSIGHT" events ks4.trace | grep "+0x[0-9a-f]* (\[kernel.kallsyms\])"
'

# A FIFO is replaced by the entry made from kallsyms; a directory is left
# as it is, and the recording reads kallsyms.
test_expect_success 'kernel symbols: a FIFO or a directory where the boot'"'"'s entry goes is no entry, and waits for nothing' '
	rm -f "$entry" && mkfifo "$entry" &&
	timeout 30 "$MEMSIGHT" record -q -o ks5.trace -- cat /etc/hostname >/dev/null &&
	test -f "$entry" && kernel_frames_true ks5.trace &&
	rm -f "$entry" && mkdir "$entry" &&
	timeout 30 "$MEMSIGHT" record -q -o ks6.trace -- cat /etc/hostname >/dev/null &&
	test -d "$entry" && kernel_frames_true ks6.trace &&
	rmdir "$entry"
'

test_expect_success 'analyzer views on a trace without their events: one line each' '
	for v in mmaps brk reclaim compaction oom rss faults shm; do
		t=shm.trace && [ $v = shm ] && t=ft.trace
		test_must_fail "$MEMSIGHT" $v $t 2>err || exit 1
		test_one_line err && grep "record them with .memsight record -e.* (it holds [a-z]" err || exit 1
	done &&
	test_must_fail "$MEMSIGHT" leaks --kernel shm.trace 2>err && test_one_line err
'

test_done
