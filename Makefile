# memsight: build, test, demo and install.
#
#   make            build everything into build/
#   make demo       install what is missing, build, record the samples, show findings, write demo/*.svg
#   make check      install what is missing, build, run every test (TAP, through prove)
#   make bench      benchmarks against perf (tests/bench), prints ratios
#   make fuzz       the fuzz targets, FUZZ_SECONDS (default 3600) each, corpora in build-fuzz/
#   make install PREFIX=/usr/local   memsight in bin/, its helpers in libexec/memsight/, man pages,
#                   bash completion, the flight recorder's systemd unit
#
# V=1 shows full commands; DEVELOPER=1 adds -Werror and more warnings; SANITIZE=1
# builds with AddressSanitizer and UndefinedBehaviorSanitizer into build-san/.

.DELETE_ON_ERROR:
.SUFFIXES:

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
# The helpers (memsight-record, -analyze, -flamegraph) and the allocation
# sampler: memsight finds them at ../libexec/memsight from its own
# directory, wherever that is (formats/sibling.h), so this layout is fixed.
LIBEXECDIR = $(PREFIX)/libexec/memsight
MANDIR ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
B := build
VERSION := 0.1

CC ?= cc
CFLAGS ?= -O2 -g
LDFLAGS ?=
ifeq ($(SANITIZE),1)
B := build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CFLAGS += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif
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
	libzstd-dev zlib1g-dev systemtap-sdt-dev
# debuginfod: a local server for the --debuginfod test.
# clang and its runtimes: libFuzzer and the sanitizers.
TEST_PKGS := perl python3-jsonschema tmux gcc-multilib libxml2-utils libjemalloc2 libmimalloc2.0 libc6-dev openjdk-17-jdk-headless nodejs debuginfod valgrind clang libclang-rt-dev golang-go chromium sqlite3
BENCH_PKGS := linux-perf heaptrack bpftrace time nodejs redis-server redis-tools

FORMATS_SRC := \
	formats/allocfns.c \
	formats/cache.c \
	formats/elfcut.c \
	formats/meta.c \
	formats/msg.c \
	formats/opts.c \
	formats/regular.c \
	formats/replace.c \
	formats/sibling.c \
	formats/stackdump.c \
	formats/suggest.c \
	formats/termsafe.c \
	formats/trace.c \
	formats/trace_merge.c \
	formats/trace_read.c \
	formats/trace_window.c \
	formats/trace_write.c

RECORD_SRC := \
	record/command.c \
	record/leakcheck/leakcheck.c \
	record/leakcheck/reach.c \
	record/objects/archive.c \
	record/objects/embed.c \
	record/objects/jitmaps.c \
	record/objects/ksyms.c \
	record/objects/objset.c \
	record/options.c \
	record/probes/events.c \
	record/probes/lateprobe.c \
	record/probes/setup.c \
	record/probes/usdt.c \
	record/probes/uprobes.c \
	record/procs/cgroups.c \
	record/procs/execmap.c \
	record/procs/procfile.c \
	record/procs/procsnap.c \
	record/procs/proctrack.c \
	record/record.c \
	record/ring/flight.c \
	record/write/allocstream.c \
	record/write/drain.c \
	record/write/output.c \
	record/write/scrub.c \
	record/write/tracemeta.c \
	record/write/writeq.c

ANALYZE_SRC := \
	analyze/cmd/cmd.c \
	analyze/cmd/cmd_brk.c \
	analyze/cmd/cmd_compaction.c \
	analyze/cmd/cmd_diff.c \
	analyze/cmd/cmd_errors.c \
	analyze/cmd/cmd_events.c \
	analyze/cmd/cmd_faults.c \
	analyze/cmd/cmd_folded.c \
	analyze/cmd/cmd_info.c \
	analyze/cmd/cmd_leaks.c \
	analyze/cmd/cmd_mmaps.c \
	analyze/cmd/cmd_pprof.c \
	analyze/cmd/cmd_oom.c \
	analyze/cmd/cmd_reclaim.c \
	analyze/cmd/cmd_report.c \
	analyze/cmd/cmd_rss.c \
	analyze/cmd/cmd_shm.c \
	analyze/cmd/cmd_top.c \
	analyze/cmd/report_html.c \
	analyze/cmd/json.c \
	analyze/hashmap.c \
	analyze/sha256.c \
	analyze/main.c \
	analyze/model/allocs.c \
	analyze/model/heapprof.c \
	analyze/model/kallocs.c \
	analyze/model/memops.c \
	analyze/model/reach.c \
	analyze/model/stacktab.c \
	analyze/model/suppress.c \
	analyze/model/rssstat.c \
	analyze/model/stacktime.c \
	analyze/model/timeline.c \
	analyze/replay/fields.c \
	analyze/replay/frames.c \
	analyze/replay/machine.c \
	analyze/replay/cgroups.c \
	analyze/replay/chains.c \
	analyze/replay/sample.c \
	analyze/replay/session.c \
	analyze/stacks/jitsyms.c \
	analyze/stacks/symbols.c \
	analyze/stacks/symbols_embedded.c \
	analyze/stacks/symbols_find.c \
	analyze/stacks/symbols_inline.c \
	analyze/stacks/symbols_kernel.c \
	analyze/stacks/symbols_loader.c \
	analyze/stacks/unwind.c \
	analyze/stacks/unwind_access.c \
	analyze/stacks/unwind_libdw.c \
	analyze/stacks/unwind_libunwind.c

FLAMEGRAPH_SRC := \
	flamegraph/flamegraph.c \
	flamegraph/folded.c \
	flamegraph/svg.c \
	formats/msg.c \
	formats/opts.c \
	formats/regular.c \
	formats/replace.c \
	formats/sibling.c \
	formats/suggest.c \
	formats/termsafe.c

TOOL_SRC := \
	tests/helper/test-tool.c \
	tests/helper/test-unit.c

SAMPLES := \
	alloc_zoo \
	box_grow \
	churn_leak \
	cpu_hop \
	cxx_cases \
	cxx_leak \
	cxx_threads \
	deep_stack \
	dlsym_alloc \
	fault_kinds \
	fib_leak \
	file_touch \
	inline_alloc \
	jit_code \
	leak_cases \
	loop_leak \
	map_many \
	mem_errors \
	mem_hog \
	phases \
	quiet_errors \
	pipe_hold \
	rss_grow \
	shm_cycle \
	usdt_alloc \
	xor_encoder

# The same programs as most code is built: optimised, no frame pointers.
# DWARF unwinding must give them the attribution the others get.
NOFP_SAMPLES := alloc_zoo box_grow deep_stack fib_leak inline_alloc loop_leak xor_encoder
# Code built without unwind tables: its CFI is in .debug_frame alone.
NOUNWIND_SAMPLES := loop_leak

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

ANALYZE_LIBS := -ltraceevent -ldw -lunwind-x86_64 -lunwind -lelf -lzstd -lz -lstdc++ -lm

# libFuzzer targets (tests/fuzz), with AddressSanitizer and UBSan: the
# trace reader and every analyzer command, one chunk behind real META, the
# folded-stacks parser, the embedded-object loader.
FUZZ := build-fuzz
FUZZ_CC := clang
FUZZ_TARGETS := trace chunk folded embedded
FUZZ_SECONDS ?= 3600
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -DMEMSIGHT_VERSION='"$(VERSION)"' -MMD -MP \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-DFUZZ_TEMPLATE='"$(CURDIR)/samples/traces/xor-8m.trace"'
FUZZ_LINK := -fsanitize=fuzzer,address,undefined
fuzzobj = $(patsubst %.c,$(FUZZ)/obj/%.o,$(1))
FUZZ_ANALYZE := $(filter-out analyze/main.c,$(ANALYZE_SRC)) $(FORMATS_SRC) tests/fuzz/fuzz.c

PROGRAMS := $(B)/memsight $(B)/memsight-record $(B)/memsight-analyze $(B)/memsight-flamegraph
SAMPLER := $(B)/libmemsight-sample.so
SAMPLE_BINS := $(addprefix $(B)/samples/,$(SAMPLES)) $(addprefix $(B)/samples/nofp/,$(NOFP_SAMPLES)) \
	$(addprefix $(B)/samples/nounwind/,$(NOUNWIND_SAMPLES))

all: $(PROGRAMS) $(SAMPLER) $(B)/test-tool $(B)/test-record $(SAMPLE_BINS)

$(B)/obj/%.o: %.c
	$(call say,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -I$(B)/gen -c -o $@ $<

# report --html's script, written as JavaScript, made a C string: each
# line quoted, and no "</script" that would end the page's element early.
$(B)/gen/report_js.inc: analyze/cmd/report.js
	$(call say,GEN,$@)
	@mkdir -p $(dir $@)
	$(Q)! grep -qi '</script' $< || { echo "$<: '</script' would end the page's script"; exit 1; }
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' $< >$@.tmp && mv $@.tmp $@
$(B)/obj/analyze/cmd/report_html.o $(FUZZ)/obj/analyze/cmd/report_html.o: $(B)/gen/report_js.inc

$(B)/memsight: $(call obj,memsight.c formats/sibling.c formats/suggest.c)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

$(B)/memsight-record: $(call obj,$(RECORD_SRC) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ -lelf -lzstd -lz

# The sampler is preloaded into other programs: position independent,
# with frame pointers (a frame-pointer walk passes through it), and never
# sanitized (the sanitizers' runtimes cannot be preloaded into anything).
$(SAMPLER): record/sampler/sampler.c record/sampler/wrap.c record/sampler/slow.c record/sampler/exec.c record/sampler/stream.c \
		record/sampler/guard.c record/sampler/guard.h formats/guard.h \
		record/sampler/sampler.h record/sampler/stream.h record/sampler/pack.h record/procs/execmap.h
	$(call say,LINK,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -g -std=gnu11 -Wall -Wextra -fPIC -shared -fno-omit-frame-pointer -o $@ $(filter %.c,$^) -lm -pthread

$(B)/memsight-analyze: $(call obj,$(ANALYZE_SRC) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(ANALYZE_LIBS)

$(B)/memsight-flamegraph: $(call obj,$(FLAMEGRAPH_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

# The unit tests link the analyzer's internals: all of it but its main.
$(B)/test-tool: $(call obj,$(TOOL_SRC) $(filter-out analyze/main.c,$(ANALYZE_SRC)) $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(ANALYZE_LIBS) -lm

# The recorder's unit tests: the parts they test, and formats/.
$(B)/test-record: $(call obj,tests/helper/test-record.c record/write/scrub.c record/procs/execmap.c \
		record/procs/proctrack.c record/probes/events.c record/leakcheck/reach.c $(FORMATS_SRC))
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ -lelf -lzstd -lz

# Samples keep frame pointers: the frame-pointer stack tests need them.
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

$(FUZZ)/obj/%.o: %.c
	$(call say,FUZZCC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(B)/gen -c -o $@ $<

$(FUZZ)/fuzz-trace $(FUZZ)/fuzz-chunk $(FUZZ)/fuzz-embedded: $(FUZZ)/fuzz-%: $(call fuzzobj,tests/fuzz/fuzz_%.c $(FUZZ_ANALYZE))
	$(call say,LINK,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_LINK) -pthread -o $@ $^ $(ANALYZE_LIBS)

$(FUZZ)/fuzz-folded: $(call fuzzobj,tests/fuzz/fuzz_folded.c flamegraph/folded.c flamegraph/svg.c formats/msg.c formats/termsafe.c)
	$(call say,LINK,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_LINK) -o $@ $^

fuzz-targets: $(addprefix $(FUZZ)/fuzz-,$(FUZZ_TARGETS))

# Long runs: FUZZ_SECONDS each, one after another (FUZZ_TARGETS="chunk
# folded" picks), new inputs kept in build-fuzz/corpus-TARGET (the seeds in
# tests/fuzz/corpus stay as they are), libFuzzer's log in
# build-fuzz/fuzz-TARGET.log; a crash leaves its input as build-fuzz/crash-*.
fuzz: test-deps fuzz-targets
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ)/corpus-$$t && \
		echo "fuzzing $$t for $(FUZZ_SECONDS) s, log in $(FUZZ)/fuzz-$$t.log" && \
		$(FUZZ)/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=3 -timeout=20 -rss_limit_mb=4096 \
			-print_final_stats=1 -artifact_prefix=$(FUZZ)/ $(FUZZ)/corpus-$$t tests/fuzz/corpus/$$t \
			2>$(FUZZ)/fuzz-$$t.log || { tail -40 $(FUZZ)/fuzz-$$t.log; exit 1; }; \
		grep -E '^#[0-9]+ +DONE|^stat::' $(FUZZ)/fuzz-$$t.log; \
	done

-include $(shell find $(B)/obj $(FUZZ)/obj -name '*.d' 2>/dev/null)

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

# The browser tests drive Debian's chromium with playwright-core, the
# version tests/browser/package-lock.json pins, from the npm registry.
test-deps:
	$(call install_pkgs,$(BUILD_PKGS) $(TEST_PKGS))
	@command -v npm >/dev/null || { echo "installing: npm"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }
	@test -f tests/browser/node_modules/playwright-core/package.json || \
		{ echo "installing: playwright-core (npm, into tests/browser)"; \
		  cd tests/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null; }

bench-deps:
	$(call install_pkgs,$(BUILD_PKGS) $(BENCH_PKGS))

# The sanitized build and the fuzz targets are built here too: the tests
# run the analyzer's and the flame graph's tests on the one and each
# target's corpus, and a short run, on the others.
# The tests run two at a time, the slowest first so that none starts
# last. A case that records the whole system, or reads or changes what
# every recording sees, runs with no other case beside it
# (test_expect_alone: tests/test-lib.sh).
ALL_TESTS := $(sort $(wildcard tests/t[0-9]*.sh))
SLOW_TESTS := tests/t0910-sanitized.sh tests/t0621-leaks-trust-uprobes.sh tests/t0911-sanitized-analyzer.sh \
	tests/t0640-leak-check-valgrind.sh tests/t0780-html.sh tests/t0920-fuzz.sh tests/t0790-jit.sh
JOBS := $(shell nproc 2>/dev/null || echo 2)

check: test-deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) -j$(JOBS) SANITIZE=1 sanitized
	$(MAKE) -j$(JOBS) fuzz-targets
	prove -j2 -f $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(ALL_TESTS))

sanitized: $(PROGRAMS) $(SAMPLER) $(B)/test-tool $(B)/test-record

demo: deps
	$(MAKE) all
	sh tests/demo.sh

bench: bench-deps test-deps
	$(MAKE) all
	sh tests/bench/bench-record.sh && sh tests/bench/bench-default.sh
	sh tests/bench/bench-malloc.sh && sh tests/bench/bench-dwarf.sh && sh tests/bench/bench-kmem.sh
	sh tests/bench/bench-wholebox.sh && sh tests/bench/bench-faults.sh && sh tests/bench/bench-flight.sh && sh tests/bench/bench-outputs.sh
	sh tests/bench/bench-page.sh && sh tests/bench/bench-top.sh
	sh tests/bench/bench-analyze.sh

# The man pages and bash completion, made from what memsight says (-h),
# and the commands' guides.
GUIDES := $(wildcard record/*.md analyze/cmd/*.md flamegraph/*.md)
$(B)/cli/completion/memsight: $(PROGRAMS) analyze/cli-files.sh $(filter-out record/README.md,$(GUIDES))
	$(call say,GEN,$(B)/cli)
	$(Q)sh analyze/cli-files.sh $(B)/memsight $(B)/cli

cli-files: $(B)/cli/completion/memsight

install: $(PROGRAMS) $(SAMPLER) $(B)/cli/completion/memsight
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(COMPLETIONDIR) \
		$(DESTDIR)$(SYSTEMDDIR)
	install -m 755 $(B)/memsight $(DESTDIR)$(BINDIR)/
	install -m 755 $(filter-out $(B)/memsight,$(PROGRAMS)) $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 $(SAMPLER) $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 $(B)/cli/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(B)/cli/completion/memsight $(DESTDIR)$(COMPLETIONDIR)/
	sed 's|/usr/local/bin/memsight|$(BINDIR)/memsight|' record/ring/memsight-flight.service \
		>$(DESTDIR)$(SYSTEMDDIR)/memsight-flight.service
	chmod 644 $(DESTDIR)$(SYSTEMDDIR)/memsight-flight.service

clean:
	rm -rf build build-san $(FUZZ) demo

.PHONY: all deps test-deps bench-deps check sanitized fuzz fuzz-targets demo bench install cli-files clean
