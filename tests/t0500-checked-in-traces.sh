#!/bin/sh
# The analyzer on traces checked into samples/traces/ (made by
# samples/traces/make-traces.sh): runs everywhere, recording allowed or not.
# The sample printed its own truth at recording time: xor-8m.truth.
. "$(dirname "$0")/test-lib.sh"

T=$TOP/samples/traces/xor-8m.trace
D="--debug-dir $TOP/samples/traces/debug"
TRUTH=$TOP/samples/traces/xor-8m.truth

# Progress goes to a terminal (script(1) gives the command one), never
# into a pipe or a file, and not with -q; the delay is a second, 0 here.
test_expect_success 'progress on a terminal: what is read, how far; none into a pipe, none with -q, which keeps only warnings' '
	MEMSIGHT_PROGRESS_DELAY_MS=0 script -qec "\"$MEMSIGHT\" folded \"$T\" >/dev/null" /dev/null >tty.out &&
	tr "\r" "\n" <tty.out >tty.lines && cat tty.lines &&
	grep "^memsight folded: reading .*xor-8m.trace.: 100% (1 of 1 chunks, [1-9][0-9]* samples)" tty.lines &&
	grep "frame-pointer stacks ran into code built without frame pointers" tty.lines &&
	MEMSIGHT_PROGRESS_DELAY_MS=0 script -qec "\"$MEMSIGHT\" folded -q \"$T\" >/dev/null" /dev/null >q.out &&
	! grep -q . q.out &&
	MEMSIGHT_PROGRESS_DELAY_MS=0 "$MEMSIGHT" folded "$T" 2>pipe.err >/dev/null &&
	grep "frame-pointer stacks ran into code" pipe.err && ! grep reading pipe.err &&
	"$MEMSIGHT" folded "$T" 2>err >/dev/null && ! grep reading err
'

test_expect_success 'info: complete, no loss, the counts of every event' '
	"$MEMSIGHT" info "$T" >info &&
	grep -x "status:      complete" info &&
	grep -x "lost:        0" info &&
	grep -x "samples:     4319" info &&
	grep "^  page-faults  *faults  *4169 samples  with stacks$" info &&
	grep "^  syscalls:sys_enter_brk  *brk  *65 samples  with stacks$" info &&
	grep "^command:     exit status 0, the kernel counted 4195 page faults (0 major)$" info
'

test_expect_success 'info --json: the same facts as the text, as one object' '
	"$MEMSIGHT" info --json --dump "$T" >info.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>);
		my (\$pf) = grep { \$_->{name} eq q{page-faults} } @{\$d->{events}};
		die q{totals} unless \$d->{complete} && \$d->{lost} == 0 && \$d->{samples} == 4319;
		die q{faults} unless \$pf && \$pf->{samples} == 4169 && \$pf->{group} eq q{faults} && \$pf->{stacks};
		die q{command} unless \$d->{command}{exit_status} == 0 && \$d->{command}{page_faults} == 4195;
		die q{chunks} unless \$d->{chunks}{total} == @{\$d->{chunk_list}} && \$d->{chunk_list}[-1]{type} eq q{TRAILER}" <info.json
'

test_expect_success 'info --dump lists every chunk with its crc' '
	"$MEMSIGHT" info --dump "$T" >dump &&
	chunks=$(sed -n "s/^chunks:      \([0-9]*\),.*/\1/p" dump) &&
	test $(grep -c "^[0-9][0-9]* *0x[0-9a-f]\{10\} " dump) = "$chunks" &&
	grep " TRAILER " dump
'

test_expect_success 'report: the input-sized mmap of read_in_chunks, exact size and address' '
	"$MEMSIGHT" report $D "$T" >report &&
	size=$(sed -n "s/.*buffer mmap \([0-9]*\) bytes at .*/\1/p" "$TRUTH") &&
	addr=$(sed -n "s/.*buffer mmap [0-9]* bytes at \(0x[0-9a-f]*\)/\1/p" "$TRUTH") &&
	test "$size" = 8392704 &&
	grep "^  $size bytes (8.0 MiB) at $addr rw-p anonymous (pid [0-9]* xor_encoder)$" report
'

test_expect_success 'report: every page of the buffer faulted in read_in_chunks, heap grew by the chunks' '
	sed -n "/^top stacks by faults:/,/^$/p" report >top &&
	sed -n 2,5p top >first &&
	cat first &&
	grep "^  2048 faults from stack" first &&
	grep "^      read_in_chunks+0x[0-9a-f]* \[xor_encoder\] samples/xor_encoder.c:[0-9]*$" first &&
	grep "^      main+0x[0-9a-f]* \[xor_encoder\] samples/xor_encoder.c:[0-9]*$" first &&
	grep "^    [0-9]* xor_encoder  *65  *8519680 " report
'

test_expect_success 'report --json: the same sections and figures as the text' '
	"$MEMSIGHT" report --json $D "$T" >report.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>); my \$f = \$d->{faults};
		die q{faults} unless \$f->{processes}[0]{faults} == 4169 && \$f->{stacks}[0]{faults} == 2048
			&& \$f->{stacks}[0]{frames}[0]{function} eq q{read_in_chunks} && !\$f->{estimate};
		die q{mmap} unless \$d->{mmap}{largest}[0]{bytes} == 8392704 && \$d->{mmap}{largest}[0]{anonymous};
		die q{brk} unless \$d->{brk}{processes}[0]{growth_bytes} == 8519680 && \$d->{brk}{processes}[0]{calls} == 65;
		die q{malloc} if defined \$d->{malloc}" <report.json &&
	test_must_fail "$MEMSIGHT" report --json --html x.html "$T" 2>err &&
	test_one_line err
'

test_expect_success 'folded: faults and brk bytes add up to the report' '
	"$MEMSIGHT" folded $D "$T" >faults &&
	test "$(awk "{ s += \$NF } END { print s }" faults)" = 4169 &&
	grep "^xor_encoder;.*;main;read_in_chunks 2048$" faults &&
	grep "^xor_encoder;.*;main;read_in_chunks;process_chunk 16$" faults &&
	"$MEMSIGHT" folded $D -e brk -w bytes "$T" >brk &&
	test "$(awk "{ s += \$NF } END { print s }" brk)" = 8519680 &&
	"$MEMSIGHT" folded $D -e mmap -w pages "$T" >pages &&
	test "$(awk "{ s += \$NF } END { print s }" pages)" = 2991
'

# Per function: SELF is where a stack ends, TOTAL where it passes; both
# are what the folded stacks say, summed by hand.
test_expect_success 'functions: self and total per function, as the folded stacks add up' '
	"$MEMSIGHT" functions $D --top 1000 "$T" >fn &&
	cat fn &&
	grep "^# memsight functions of .*: faults, weight count, 4169 in all; [0-9]* functions$" fn &&
	grep "^ *2048  *49.1% *2064  *49.5%  read_in_chunks \[xor_encoder\]$" fn &&
	sed -n 3p fn | grep "read_in_chunks" &&
	test "$(awk "NR > 2 { s += \$1 } END { print s }" fn)" = 4169 &&
	"$MEMSIGHT" folded $D "$T" >faults &&
	for f in main read_in_chunks process_chunk; do
		want=$(awk -v fn=$f "{ n = split(\$1, p, \";\"); for (i = 2; i <= n; i++) if (p[i] == fn) { s += \$NF; break } } END { print s }" faults) &&
		got=$(awk -v fn=$f "\$5 == fn { print \$3 }" fn) &&
		echo "$f: folded $want, functions $got" &&
		test "$want" = "$got" || return 1
	done &&
	"$MEMSIGHT" functions $D --json --sort total -T 3 "$T" >fn.json &&
	grep "^{\"trace\":\"[^\"]*\",\"lost\":0,\"event\":\"faults\",\"weight\":\"count\",\"estimate\":false,\"total\":4169,\"functions_total\":[0-9]*,\"functions_shown\":3,\"functions\":\[{\"function\":\"__libc_start_call_main\"" fn.json &&
	grep "{\"function\":\"read_in_chunks\",\"object\":\"xor_encoder\",\"kernel\":false,\"self\":2048,\"total\":2064}" fn.json
'

test_expect_success '--time, --comm, --pid and --tid choose the events every view counts; a choice of none says so' '
	"$MEMSIGHT" faults --time 0,5ms "$T" >early 2>/dev/null &&
	"$MEMSIGHT" faults --time 0.005, "$T" >late 2>/dev/null &&
	e=$(sed -n "1s/.*: \([0-9]*\) page faults.*/\1/p" early) &&
	l=$(sed -n "1s/.*: \([0-9]*\) page faults.*/\1/p" late) &&
	echo "early $e, late $l" &&
	test "$e" -gt 0 && test "$l" -gt 0 && test $((e + l)) = 4169 &&
	"$MEMSIGHT" folded --time 0.005, "$T" 2>/dev/null | awk "{ s += \$NF } END { exit s != $l }" &&
	pid=$("$MEMSIGHT" events -G -e brk "$T" 2>/dev/null | sed -n "1s/.* \([0-9]*\)\/[0-9]* .*/\1/p") &&
	"$MEMSIGHT" faults --comm xor_encoder --pid 1,$pid --tid $pid "$T" 2>/dev/null | grep "^# memsight faults of .*: 4169 page faults" &&
	"$MEMSIGHT" faults --comm nosuch "$T" >none 2>err &&
	cat err && test_one_line err &&
	grep "none of the 4319 events of .* is of the processes, threads, names or time asked for" err &&
	test_must_fail "$MEMSIGHT" faults --time 3,1 "$T" 2>err && test_one_line err &&
	test_must_fail "$MEMSIGHT" faults --pid x "$T" 2>err && test_one_line err
'

# --last: the window ends at the trace's last event. The truth from the
# events' own times: a cut in the widest gap between two events of the
# trace's second half (far wider than the microseconds events prints),
# and what each view counts after it.
test_expect_success '--last SECS: the events of the last SECS seconds up to the trace'"'"'s last, as their own times say' '
	"$MEMSIGHT" events -G "$T" 2>/dev/null | sed -n "s/.*\] \([0-9]*\.[0-9]*\): \([a-z_:-]*\):.*/\1 \2/p" >times &&
	test $(wc -l <times) = 4319 &&
	perl -ane "push @t, [\$F[0], \$F[1]]; END { @t = sort { \$a->[0] <=> \$b->[0] } @t; my (\$f, \$l) = (\$t[0][0], \$t[-1][0]);
		my (\$gi, \$g) = (0, 0); for my \$i (1 .. \$#t) { next if \$t[\$i][0] < \$f + (\$l - \$f) / 2;
		my \$d = \$t[\$i][0] - \$t[\$i - 1][0]; (\$gi, \$g) = (\$i, \$d) if \$d > \$g }
		printf qq(%.6f %d %d %.6f\n), \$l - (\$t[\$gi - 1][0] + \$g / 2), scalar(grep { \$_->[1] eq q(page-faults) } @t[\$gi .. \$#t]),
			@t - \$gi, \$g }" times >cut &&
	read x faults all gap <cut &&
	echo "--last $x: $faults faults, $all events after a gap of $gap s" &&
	perl -e "exit !(\$ARGV[0] >= 0.00005 && \$ARGV[1] > 0 && \$ARGV[1] < 4169)" "$gap" "$faults" &&
	"$MEMSIGHT" faults --last "$x" "$T" 2>/dev/null | grep "^# memsight faults of .*: $faults page faults" &&
	test "$("$MEMSIGHT" events -G --last "$x" "$T" 2>/dev/null | wc -l)" = "$all" &&
	"$MEMSIGHT" folded --last "$x" "$T" 2>/dev/null | awk "{ s += \$NF } END { exit s != $faults }" &&
	"$MEMSIGHT" faults --last 1h "$T" 2>/dev/null | grep "^# memsight faults of .*: 4169 page faults" &&
	test_must_fail "$MEMSIGHT" faults --last 0 "$T" 2>err && test_one_line err &&
	grep "^memsight faults: --last .0.: give the seconds to keep before the trace.s last event, more than 0" err
'

test_expect_success 'events: one header line per sample, stacks follow' '
	"$MEMSIGHT" events $D "$T" >events &&
	test $(grep -c "^ *[^ 	].* [0-9]*/[0-9]* *\[[0-9]*\] [0-9]*\.[0-9]*: " events) = 4319 &&
	"$MEMSIGHT" events -G -e brk $D "$T" >brk.ev &&
	test $(wc -l <brk.ev) = 130 &&
	grep "sys_exit_brk: 0x" brk.ev
'

test_expect_success 'events --json: one object, every event in its array, fields by name, frames in the shared schema' '
	"$MEMSIGHT" events --json $D "$T" >events.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>); my (%n, \$rim, \$exits);
		for my \$e (@{\$d->{events}}) {
			\$n{\$e->{event}}++;
			\$rim++ if grep { \$_->{function} eq q{read_in_chunks} && \$_->{object} eq q{xor_encoder} } @{\$e->{frames}};
			\$exits++ if \$e->{event} eq q{syscalls:sys_exit_brk} && \$e->{fields}{ret} > 0;
		}
		die q{all} unless @{\$d->{events}} == 4319; die q{faults} unless \$n{q{page-faults}} == 4169;
		die q{brk} unless \$exits == 65; die q{frames} unless \$rim >= 2048" <events.json &&
	"$MEMSIGHT" events --json -G -e brk $D "$T" >brk.json &&
	! grep -q "\"frames\"" brk.json &&
	perl -MJSON::PP -e "local \$/; die unless @{decode_json(<STDIN>)->{events}} == 130" <brk.json
'

test_expect_success 'a cut copy still analyzes, and says where it stopped' '
	size=$(stat -c %s "$T") &&
	head -c $((size - 300)) "$T" >cut.trace &&
	"$MEMSIGHT" report $D cut.trace >cut.report 2>cut.err &&
	grep "warning: .cut.trace. cut short at byte" cut.err &&
	grep "read_in_chunks" cut.report
'

# Faults of every kind (samples/fault_kinds 64), frame-pointer stacks.
FK=$TOP/samples/traces/fault-kinds.trace
FKTRUTH=$TOP/samples/traces/fault-kinds.truth

test_expect_success 'fault kinds: copy-on-write in the child writer, first touches, exactly 64 each' '
	"$MEMSIGHT" info "$FK" | grep "^  exceptions:page_fault_user  *faults  *[1-9][0-9]* samples  with stacks$" &&
	"$MEMSIGHT" folded $D -e faults --fault-type cow "$FK" 2>/dev/null >cow &&
	test "$(awk "/;cow_writer( |;)/ { s += \$NF } END { print s }" cow)" = 64 &&
	"$MEMSIGHT" folded $D -e faults --fault-type write "$FK" 2>/dev/null >write &&
	test "$(awk "/;first_touch( |;)/ { s += \$NF } END { print s }" write)" = 64 &&
	! grep -q first_touch cow
'

test_expect_success 'fault kinds: the 64 pages read() filled, each a kernel-mode write fault' '
	addr=$(sed -n "s/^fault_kinds: read_zero 64 pages at \(0x[0-9a-f]*\)$/\1/p" "$FKTRUTH") &&
	"$MEMSIGHT" events --no-stacks -e page-faults "$FK" >ev &&
	awk -v lo=$(printf %d $addr) -v hi=$(($(printf %d $addr) + 64 * 4096)) "
		function hex(s,  i, v) { v = 0; sub(/^0x/, \"\", s); for (i = 1; i <= length(s); i++) v = v * 16 + index(\"0123456789abcdef\", substr(s, i, 1)) - 1; return v }
		/: write,kernel error_code / { a = hex(\$(NF-2)); if (a >= lo && a < hi) n++ }
		/: [a-z,]* error_code / { a = hex(\$(NF-2)); if (a >= lo && a < hi) all++ }
		END { print n + 0, all + 0; exit !(n == 64 && all == 64) }
	" ev
'

# A whole box runs thousands of processes: past --procs, a table keeps the
# heaviest and sums the rest in one row. The sample's parent and child
# fault 198 and 80 times.
test_expect_success 'report --procs: the heaviest processes, then one row for the rest' '
	"$MEMSIGHT" report $D "$FK" 2>/dev/null >all &&
	sed -n "/^ *PID COMM/,/^$/p" all >rows &&
	test $(grep -c " fault_kinds  *[0-9]" rows) = 2 &&
	awk "\$2 == \"fault_kinds\" { print \$1 }" rows >pids &&
	sort -n pids | test_cmp - pids &&
	"$MEMSIGHT" report $D --procs 1 "$FK" 2>/dev/null >one &&
	sed -n "/^ *PID COMM/,/^$/p" one >rows1 &&
	grep "^ *[0-9]* fault_kinds  *198  *0  *148  *50 " rows1 &&
	grep "^ *- (1 more)  *80  *0  *68  *12  *320.0 KiB$" rows1 &&
	test $(wc -l <rows1) = 4 &&
	"$MEMSIGHT" report $D --procs 0 "$FK" 2>/dev/null >none &&
	test_cmp all none
'

# The sample's parent and its forked child ran the same loader code: one
# stack of the command, which counts both, not a stack per process.
test_expect_success 'faults: a path two processes of one command ran is one stack that counts them' '
	"$MEMSIGHT" faults $D --top 1000 "$FK" 2>/dev/null >merged &&
	grep "^[0-9]* faults from stack (fault_kinds, 2 processes)" merged &&
	grep "^[0-9]* faults from stack (pid [0-9]* fault_kinds)" merged &&
	"$MEMSIGHT" faults $D --json --top 1000 "$FK" 2>/dev/null >merged.json &&
	perl -MJSON::PP -e "local \$/; my \$d = decode_json(<STDIN>); my (\$two, \$one, \$n) = (0, 0, 0);
		for my \$st (@{\$d->{stacks}}) { \$n += \$st->{faults};
			if (\$st->{processes} == 2) { die q{pid} if defined \$st->{pid}; \$two++ }
			elsif (\$st->{processes} == 1) { die q{pid} unless \$st->{pid} > 0; \$one++ } else { die q{count} } }
		die qq{\$two \$one} unless \$two && \$one; die qq{sum \$n} unless \$n == 278" <merged.json
'

# Many of the sample's fault stacks have one fault each: their order must
# not follow anything that changes from run to run (addresses hashed).
test_expect_success 'stacks of equal weight come in the same order every run' '
	for i in 1 2 3; do
		"$MEMSIGHT" faults $D --top 100 "$T" >faults.$i &&
		"$MEMSIGHT" report $D "$T" >report.$i || return 1
	done &&
	test $(grep -c "^1 faults from stack" faults.1) -ge 2 &&
	test_cmp faults.1 faults.2 && test_cmp faults.1 faults.3 &&
	test_cmp report.1 report.2 && test_cmp report.1 report.3
'

test_done
