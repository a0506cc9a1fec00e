#!/bin/sh
# The recorder's hardening tests and the tests that record the whole
# system, again on the AddressSanitizer and UndefinedBehaviorSanitizer build
# (make SANITIZE=1, which make check builds), their cases alone where
# their own runs have them alone; t0911 runs the analyzer's, the trace format's and the flame
# graph's beside the other tests. See test_sanitized in test-lib.sh.
. "$(dirname "$0")/test-lib.sh"

test_sanitized t0420-record-hardening t0650-errors t0725-production-box t0750-flight t0770-sampled

test_done
