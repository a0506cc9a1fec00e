#!/bin/sh
# The trace format's, the analyzer's, the flame graph's and the recorder's
# bad-input tests, and top's (whose view commands follow a live trace,
# forking as they go), again on the AddressSanitizer and
# UndefinedBehaviorSanitizer build (make SANITIZE=1, which make check
# builds); none records the whole system, so they run beside the other
# tests. See test_sanitized in
# test-lib.sh; t0910 runs the rest.
. "$(dirname "$0")/test-lib.sh"

test_sanitized t0001-format t0300-flamegraph t0400-bad-input t0500-checked-in-traces t0610-malloc-bad-input \
	't0746-top&' t0760-pprof t0780-html

test_done
