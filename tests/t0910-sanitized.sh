#!/bin/sh
# The analyzer's, the trace format's and the flame graph's tests again, and
# the recorder's bad-input and hardening ones, on the AddressSanitizer and
# UndefinedBehaviorSanitizer build (make SANITIZE=1, which make check
# builds): any memory error, leak or undefined behaviour ends the program
# with status 99 and a report, and the test that ran it fails. The HTML
# pages are written by the sanitized build but not loaded in a browser
# again (MEMSIGHT_TEST_BROWSER=no): what the browser runs is the same bytes
# either way, and t0780 loads them on the normal build.
. "$(dirname "$0")/test-lib.sh"

san=$TOP/build-san
[ -x "$san/memsight-analyze" ] && [ -x "$san/memsight-flamegraph" ] && [ -x "$san/test-tool" ] ||
	skip_all "no sanitized build (make SANITIZE=1 sanitized)"

# A finding is fatal and names itself on stderr; leaks are findings too.
ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:exitcode=99
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
export ASAN_OPTIONS UBSAN_OPTIONS

for t in t0001-format t0300-flamegraph t0400-bad-input t0500-checked-in-traces t0420-record-hardening t0610-malloc-bad-input \
	t0650-errors t0725-production-box t0750-flight t0760-pprof t0770-sampled t0780-html; do
	test_expect_success "$t passes on the sanitized build" "
		MEMSIGHT_BUILD='$san' MEMSIGHT_TEST_BROWSER=no sh '$TOP/tests/$t.sh' >out 2>err;
		rc=\$?;
		cat out err;
		test \$rc -eq 0 &&
		! grep -q '^not ok' out &&
		! grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' err out
	"
done

test_done
