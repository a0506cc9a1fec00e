#!/bin/sh
# The libFuzzer targets (tests/fuzz, built by make check): each one's seed
# corpus runs as a regression test, then each fuzzes for FUZZ_SHORT seconds
# (default 8: a check that new code did not open an easy crash, where make
# fuzz searches for an hour) from that corpus. A crash, a sanitizer report, a leak, a
# timeout or running out of memory fails the test and leaves the input in
# build-fuzz/ to reproduce it with: build-fuzz/fuzz-TARGET FILE.
. "$(dirname "$0")/test-lib.sh"

F=$TOP/build-fuzz
secs=${FUZZ_SHORT:-8}
for t in trace chunk folded embedded; do
	[ -x "$F/fuzz-$t" ] || skip_all "no fuzz targets (make fuzz-targets; needs clang and libclang-rt-dev)"
done

# The template the chunk target puts its chunk behind.
FUZZ_TEMPLATE=$TOP/samples/traces/xor-8m.trace
export FUZZ_TEMPLATE

for t in trace chunk folded embedded; do
	test_expect_success "fuzz-$t: every seed in tests/fuzz/corpus/$t runs clean" "
		ls '$TOP/tests/fuzz/corpus/$t'/* >seeds &&
		test -s seeds &&
		'$F/fuzz-$t' -close_fd_mask=3 -timeout=20 -rss_limit_mb=4096 -artifact_prefix='$F/' \$(cat seeds) 2>log;
		rc=\$?; tail -20 log; test \$rc = 0 &&
		grep -c '^Executed ' log >n && test \$(cat n) = \$(wc -l <seeds)
	"
done

for t in trace chunk folded embedded; do
	test_expect_success "fuzz-$t: $secs s of fuzzing from the corpus finds nothing" "
		mkdir -p work-$t &&
		'$F/fuzz-$t' -max_total_time=$secs -close_fd_mask=3 -timeout=20 -rss_limit_mb=4096 \
			-artifact_prefix='$F/' work-$t '$TOP/tests/fuzz/corpus/$t' 2>log;
		rc=\$?; grep -E '^#[0-9]+ +DONE|^Done ' log; tail -30 log | grep -v '^#' ; test \$rc = 0
	"
done

test_done
