# memsight: build, test, demo and install.
#
#   make            build everything into build/
#   make demo       install what is missing, build, record the samples, show findings, write demo/*.svg
#   make check      install what is missing, build, run every test (TAP, through prove)
#   make bench      benchmarks against perf (tests/bench), prints ratios
#   make install PREFIX=/usr/local
#
# V=1 shows full commands; DEVELOPER=1 adds -Werror and more warnings.

.DELETE_ON_ERROR:
.SUFFIXES:

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
B := build
VERSION := 0.1

CC ?= cc
CFLAGS ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -DMEMSIGHT_VERSION='"$(VERSION)"' -MMD -MP
ifeq ($(DEVELOPER),1)
ALL_CFLAGS += -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
endif

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2);
endif

# Debian packages the build, the tests and the demo need.
BUILD_PKGS := gcc g++ make pkg-config libtraceevent-dev libdw-dev libelf-dev libdebuginfod-dev libunwind-dev \
	libzstd-dev zlib1g-dev
# debuginfod: a local server for the --debuginfod test.
TEST_PKGS := perl libxml2-utils libjemalloc2 libc6-dev debuginfod valgrind
BENCH_PKGS := linux-perf heaptrack bpftrace time

FORMATS_SRC := \
	formats/allocfns.c \
	formats/cache.c \
	formats/meta.c \
	formats/stackdump.c \
	formats/trace.c

RECORD_SRC := \
	record/embed.c \
	record/events.c \
	record/ksyms.c \
	record/leakcheck.c \
	record/procsnap.c \
	record/reach.c \
	record/record.c \
	record/scrub.c \
	record/uprobes.c \
	record/writeq.c

ANALYZE_SRC := \
	analyze/allocs.c \
	analyze/kallocs.c \
	analyze/cmd_snoop.c \
	analyze/cmd_faults.c \
	analyze/cmd_reclaim.c \
	analyze/cmd_oom.c \
	analyze/cmd_rss.c \
	analyze/cmd.c \
	analyze/cmd_events.c \
	analyze/cmd_folded.c \
	analyze/cmd_info.c \
	analyze/cmd_leaks.c \
	analyze/cmd_report.c \
	analyze/hashmap.c \
	analyze/heapprof.c \
	analyze/machine.c \
	analyze/main.c \
	analyze/memops.c \
	analyze/reach.c \
	analyze/session.c \
	analyze/stacktab.c \
	analyze/suppress.c \
	analyze/symbols.c \
	analyze/unwind.c \
	analyze/unwind_libdw.c \
	analyze/unwind_libunwind.c

FLAMEGRAPH_SRC := \
	flamegraph/flamegraph.c \
	flamegraph/svg.c

TOOL_SRC := \
	tests/helper/test-tool.c

SAMPLES := \
	alloc_zoo \
	cxx_leak \
	cxx_threads \
	fib_leak \
	file_touch \
	inline_alloc \
	loop_leak \
	mem_hog \
	pipe_hold \
	rss_grow \
	shm_cycle \
	xor_encoder

# The same programs as most code is built: optimised, no frame pointers.
# DWARF unwinding must give them the attribution the others get.
NOFP_SAMPLES := alloc_zoo fib_leak inline_alloc loop_leak xor_encoder
# Code built without unwind tables: its CFI is in .debug_frame alone.
NOUNWIND_SAMPLES := loop_leak

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

PROGRAMS := $(B)/memsight $(B)/memsight-record $(B)/memsight-analyze $(B)/memsight-flamegraph
SAMPLE_BINS := $(addprefix $(B)/samples/,$(SAMPLES)) $(addprefix $(B)/samples/nofp/,$(NOFP_SAMPLES)) \
	$(addprefix $(B)/samples/nounwind/,$(NOUNWIND_SAMPLES))

all: $(PROGRAMS) $(B)/test-tool $(SAMPLE_BINS)

$(B)/obj/%.o: %.c
	$(call say,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/memsight: $(call obj,memsight.c)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^

$(B)/memsight-record: $(call obj,$(RECORD_SRC) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ -lelf -lzstd -lz

$(B)/memsight-analyze: $(call obj,$(ANALYZE_SRC) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ -ltraceevent -ldw -lunwind-x86_64 -lunwind -lelf -lzstd -lz -lstdc++

$(B)/memsight-flamegraph: $(call obj,$(FLAMEGRAPH_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^

$(B)/test-tool: $(call obj,$(TOOL_SRC) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ -lzstd -lz

# Samples keep frame pointers: the frame-pointer stacks of issue 2 need them.
SAMPLE_CFLAGS := -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -Wall -Wextra
NOFP_CFLAGS := -O2 -g -fomit-frame-pointer -Wall -Wextra
$(B)/samples/nofp/%: samples/%.c
	$(call say,CC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(NOFP_CFLAGS) -o $@ $< -pthread

$(B)/samples/nounwind/%: samples/%.c
	$(call say,CC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(NOFP_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -o $@ $< -pthread

$(B)/samples/%: samples/%.c
	$(call say,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(SAMPLE_CFLAGS) -o $@ $< -pthread

$(B)/samples/%: samples/%.cc
	$(call say,CXX,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(SAMPLE_CFLAGS) -o $@ $<

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# Install what is missing: as root through apt-get, otherwise say what to run.
define install_pkgs
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing: $$missing"; \
			(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else \
			echo "missing packages; run as root: apt-get install -y $$missing"; exit 1; \
		fi; \
	fi
endef

deps:
	$(call install_pkgs,$(BUILD_PKGS))

test-deps:
	$(call install_pkgs,$(BUILD_PKGS) $(TEST_PKGS))

bench-deps:
	$(call install_pkgs,$(BUILD_PKGS) $(BENCH_PKGS))

check: test-deps
	$(MAKE) all
	prove -f tests/t[0-9]*.sh

demo: deps
	$(MAKE) all
	sh tests/demo.sh

bench: bench-deps
	$(MAKE) all
	sh tests/bench/bench-record.sh && sh tests/bench/bench-default.sh
	sh tests/bench/bench-malloc.sh && sh tests/bench/bench-dwarf.sh && sh tests/bench/bench-kmem.sh

install: $(PROGRAMS)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(PROGRAMS) $(DESTDIR)$(BINDIR)/

clean:
	rm -rf $(B) demo

.PHONY: all deps test-deps bench-deps check demo bench install clean
