#!/bin/sh
# t0620-leaks-trust, its malloc family traced with uprobes on the allocator itself
# rather than through the preloaded wrapper: both paths pair the same.
MALLOC_VIA=uprobes exec sh "$(dirname "$0")/t0620-leaks-trust.sh"
