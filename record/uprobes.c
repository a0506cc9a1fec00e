/*
 * record/uprobes.c: allocation-function uprobes in tracefs.
 *
 * Why tracefs and not the uprobe PMU: fetchargs put the arguments, the
 * result and the caller's return address into the sample as fields, and
 * the kernel's event filter can then apply -z/-Z to the size before a
 * sample is written. The price is global state, hence the careful removal.
 */
#include "uprobes.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* perf_regs.h numbering for x86_64: the stack pointer. */
#define X86_REG_SP 7

struct alloc_fn {
	const char *name;
	const char *args;	/* fetchargs of the entry probe */
	int ret;		/* has a return probe */
	int size_filter;	/* -z/-Z apply in the kernel: "size" is the whole request, and
				 * dropping the entry loses nothing the return needs */
};

static const struct alloc_fn fns[] = {
	{ "malloc", "size=%di:u64", 1, 1 },
	{ "calloc", "nmemb=%di:u64 size=%si:u64", 1, 0 },
	{ "realloc", "ptr=%di:u64 size=%si:u64", 1, 0 },
	{ "reallocarray", "ptr=%di:u64 nmemb=%si:u64 size=%dx:u64", 1, 0 },
	{ "free", "ptr=%di:u64", 0, 0 },
	{ "posix_memalign", "memptr=%di:u64 align=%si:u64 size=%dx:u64", 1, 1 },
	{ "aligned_alloc", "align=%di:u64 size=%si:u64", 1, 1 },
	{ "memalign", "align=%di:u64 size=%si:u64", 1, 1 },
	{ "valloc", "size=%di:u64", 1, 1 },
	{ "pvalloc", "size=%di:u64", 1, 1 },
};

#define NFNS (sizeof(fns) / sizeof(fns[0]))

/* posix_memalign returns its pointer through memory: the return sample
 * carries this much of the caller's stack, where such pointers usually
 * live, so the analyzer can read it. */
#define POSIX_MEMALIGN_STACK 512

static char group[64];
static char defined[2 * NFNS][48];
static size_t nr_defined;
/* "aligned_alloc=memalign ...": functions probed once for a shared address. */
static char aliases[256];

static int write_uprobe_events(const char *line)
{
	char path[512];
	const char *root = events_tracefs();
	int fd, r = 0;

	if (!root)
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		r = -errno;
	close(fd);
	return r;
}

int uprobes_find_libc(pid_t pid, char *path, size_t len)
{
	char maps[64], *line = NULL;
	size_t alloc = 0;
	FILE *f;
	int ret = -ENOENT;

	if (pid)
		snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	else
		snprintf(maps, sizeof(maps), "/proc/self/maps");
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (getline(&line, &alloc, f) > 0) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-2.", 7)) {
			snprintf(path, len, "%s", p);
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

/* File offsets of the allocation functions in obj (0 when absent). */
static int find_offsets(const char *obj, unsigned long long *off, char *err, size_t errlen)
{
	int fd = open(obj, O_RDONLY | O_CLOEXEC), found = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t nph;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open allocator object '%s': %s", obj, strerror(errno));
		return -1;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		snprintf(err, errlen, "'%s' is not an ELF object: give a shared library or executable to -O", obj);
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t k = 0; name && k < NFNS; k++) {
				if (off[k] || strcmp(name, fns[k].name))
					continue;
				/* A probe goes at a file offset: find the segment. */
				for (size_t p = 0; p < nph; p++) {
					GElf_Phdr ph;

					if (gelf_getphdr(elf, p, &ph) && ph.p_type == PT_LOAD && sym.st_value >= ph.p_vaddr &&
					    sym.st_value < ph.p_vaddr + ph.p_filesz) {
						off[k] = sym.st_value - ph.p_vaddr + ph.p_offset;
						found++;
					}
				}
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (!off[0] || !off[4]) {
		snprintf(err, errlen, "'%s' has no %s function: give the allocator's object to -O "
				      "(its libc, libjemalloc.so.2, or a static executable)",
			 obj, off[0] ? "free" : "malloc");
		return -1;
	}
	return found;
}

static int define(const char *line, const char *name, char *err, size_t errlen)
{
	int r = write_uprobe_events(line);

	if (r) {
		snprintf(err, errlen, "tracefs refused the uprobe '%s' (%s): %s", name, strerror(-r),
			 r == -ENODEV || r == -ENOENT ? "is the kernel built with CONFIG_UPROBE_EVENTS?"
						      : "see /sys/kernel/tracing/error_log");
		return -1;
	}
	snprintf(defined[nr_defined++], sizeof(defined[0]), "%s", name);
	return 0;
}

static int load_event(const char *name, const char *fn, int entry, const struct uprobe_opts *u,
		      const struct rec_opts_events *o, struct rec_event **evs, size_t *nr, int size_filter)
{
	char rel[256];
	char *idtext, *format;
	struct rec_event e;

	snprintf(rel, sizeof(rel), "events/%s/%s/id", group, name);
	idtext = events_tracefs_read(rel, NULL);
	snprintf(rel, sizeof(rel), "events/%s/%s/format", group, name);
	format = events_tracefs_read(rel, NULL);
	if (!idtext || !format) {
		free(idtext);
		free(format);
		return -ENODEV;
	}
	memset(&e, 0, sizeof(e));
	snprintf(e.name, sizeof(e.name), "%s:%s", group, name);
	e.group = "malloc";
	e.format = format;
	events_attr_common(&e.attr, o);
	e.attr.type = PERF_TYPE_TRACEPOINT;
	e.attr.config = strtoull(idtext, NULL, 10);
	free(idtext);
	e.attr.sample_period = 1;
	e.attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			     PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
	if (entry && strcmp(fn, "free")) {
		/* Stacks at entry, never at return: a pending return probe
		 * has replaced a return address on the stack by then. */
		events_stack_attr(&e.attr, o);
		/* The kernel part of a uprobe's callchain is only the trap
		 * that took it: walking it costs more than the user walk. */
		e.attr.exclude_callchain_kernel = 1;
		if (e.attr.exclude_callchain_user)
			e.attr.sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
		/* -s N: one entry in N, counted in the kernel. Returns and
		 * frees are all kept, so every free still finds its pointer.
		 * realloc and posix_memalign entries are all kept: without
		 * them the old block, or the result, would be unknown. */
		if (strcmp(fn, "realloc") && strcmp(fn, "reallocarray") && strcmp(fn, "posix_memalign"))
			e.attr.sample_period = u->sample ? u->sample : 1;
	}
	if (!entry && !strcmp(fn, "posix_memalign")) {
		e.attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		e.attr.sample_regs_user = 1ull << X86_REG_SP;
		e.attr.sample_stack_user = POSIX_MEMALIGN_STACK;
	}
	e.callchain_off = events_callchain_offset(e.attr.sample_type);
	{
		size_t n = 0;

		if (u->exclude_pid)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "common_pid != %d", (int)u->exclude_pid);
		if (entry && size_filter && u->min_size)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "%ssize >= %llu", n ? " && " : "",
				      u->min_size);
		if (entry && size_filter && u->max_size)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "%ssize <= %llu", n ? " && " : "",
				      u->max_size);
	}
	if (events_push(evs, nr, &e)) {
		free(format);
		return -ENOMEM;
	}
	return 0;
}

int uprobes_add(const struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs,
		size_t *nr, char *err, size_t errlen)
{
	unsigned long long off[NFNS] = { 0 };
	size_t start = *nr;

	if (find_offsets(u->object, off, err, errlen) < 0)
		return -1;
	snprintf(group, sizeof(group), "memsight_%d", (int)getpid());
	aliases[0] = 0;
	for (size_t k = 0; k < NFNS; k++) {
		char line[1024], name[48], also[128] = "";
		int dup = 0;

		if (!off[k])
			continue;
		/* One probe per address: aliases (memalign and aligned_alloc
		 * share code in glibc) would each fire otherwise. */
		for (size_t j = 0; j < k; j++)
			dup |= off[j] == off[k];
		if (dup)
			continue;
		for (size_t j = k + 1; j < NFNS; j++)
			if (off[j] == off[k])
				snprintf(also + strlen(also), sizeof(also) - strlen(also), "%s%s", also[0] ? "," : "",
					 fns[j].name);
		/* For a shared address, the 8 bytes before the return address:
		 * the call instruction, whose PLT slot names the function the
		 * program called. */
		if (also[0])
			snprintf(aliases + strlen(aliases), sizeof(aliases) - strlen(aliases), "%s%s=%s",
				 aliases[0] ? " " : "", fns[k].name, also);
		snprintf(name, sizeof(name), "%s", fns[k].name);
		snprintf(line, sizeof(line), "p:%s/%s %s:0x%llx %s caller=+0($stack):u64%s\n", group, name, u->object,
			 off[k], fns[k].args, also[0] ? " insn=-8(+0($stack)):u64" : "");
		if (define(line, name, err, errlen) ||
		    load_event(name, fns[k].name, 1, u, o, evs, nr, fns[k].size_filter))
			goto fail;
		if (!fns[k].ret)
			continue;
		snprintf(name, sizeof(name), "%s_ret", fns[k].name);
		snprintf(line, sizeof(line), "r:%s/%s %s:0x%llx ret=$retval:u64\n", group, name, u->object, off[k]);
		if (define(line, name, err, errlen) || load_event(name, fns[k].name, 0, u, o, evs, nr, 0))
			goto fail;
	}
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "cannot set up the uprobes of '%s'", u->object);
	events_free(*evs + start, *nr - start);
	*nr = start;
	uprobes_remove();
	return -1;
}

const char *uprobes_aliases(void)
{
	return aliases;
}

void uprobes_remove(void)
{
	char line[128];

	for (size_t i = nr_defined; i-- > 0;) {
		snprintf(line, sizeof(line), "-:%s/%s\n", group, defined[i]);
		write_uprobe_events(line);
	}
	nr_defined = 0;
}

void uprobes_remove_stale(void)
{
	size_t len;
	char *text = events_tracefs_read("uprobe_events", &len), *p, *save = NULL;

	if (!text)
		return;
	for (p = strtok_r(text, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		int pid;
		char ev[128], line[192], comm[64] = "", path[64];
		FILE *f;

		/* "p:memsight_123/malloc /path:0x..." or "r:..." */
		if (sscanf(p, "%*[pr]:memsight_%d/%127s", &pid, ev) != 2)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if ((f = fopen(path, "re"))) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		/* A live memsight-record owns its probes; anything else is a
		 * leftover of one that was killed. */
		if (!strncmp(comm, "memsight-record", 15))
			continue;
		snprintf(line, sizeof(line), "-:memsight_%d/%s\n", pid, ev);
		write_uprobe_events(line);
	}
	free(text);
}
