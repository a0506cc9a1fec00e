/*
 * record/probes/uprobes.c: allocation-function uprobes in tracefs.
 *
 * Why tracefs and not the uprobe PMU: fetchargs put the arguments, the
 * result and the caller's return address into the sample as fields, and
 * the kernel's event filter can then apply -z/-Z to the size before a
 * sample is written. The price is global state, hence the careful removal.
 * The functions and their fetchargs are formats/allocfns.h's table.
 */
#include "uprobes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../formats/allocfns.h"
#include "../../formats/sibling.h"
#include "../procs/procfile.h"
#include "usdt.h"

/* posix_memalign returns its pointer through memory: the return sample
 * carries this much of the caller's stack, where such pointers usually
 * live, so the analyzer can read it. */
#define POSIX_MEMALIGN_STACK 512

static struct {
	char group[64];
	char event[64];
} defined[(UPROBES_MAX_OBJECTS * 2 + UPROBES_MAX_LATE) * 2 * AF_NR];
static size_t nr_defined;
/* "aligned_alloc=memalign ...": functions probed once for a shared address. */
static char aliases[512];
/* The child that removes the definitions if the recorder dies (uprobes_guard),
 * and the pipe whose end tells it so. */
static pid_t guard_pid;
static int guard_fd = -1;
static void uprobes_guard(void);

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

static int allocator_name(const char *path)
{
	return alloc_object_is_allocator(path);
}

void uprobes_objects_add(struct uprobe_objects *o, const struct uprobe_object *ob)
{
	for (int i = 0; i < o->nr; i++)
		if (ob->dev && o->v[i].dev ? o->v[i].dev == ob->dev && o->v[i].ino == ob->ino
					   : !strcmp(o->v[i].path, ob->path))
			return;
	if (o->nr < UPROBES_MAX_OBJECTS)
		o->v[o->nr++] = *ob;
}

/* An object by path (pid 0) or as pid's mapping at start..end. */
static void objects_add(struct uprobe_objects *o, const char *path, pid_t pid, uint64_t start, uint64_t end)
{
	struct uprobe_object ob = { .pid = pid, .start = start, .end = end };
	char link[96];
	struct stat st;

	if (strlen(path) >= sizeof(ob.path))
		return;
	snprintf(ob.path, sizeof(ob.path), "%s", path);
	snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
		 (unsigned long long)end);
	/* stat only: nothing is opened yet. */
	if (!stat(pid ? link : path, &st) && S_ISREG(st.st_mode)) {
		ob.dev = st.st_dev;
		ob.ino = st.st_ino;
	}
	uprobes_objects_add(o, &ob);
}

/* An object opened for reading: by the recorder's own choice, or through
 * the mapping it was found as, with the rights of its process. Always a
 * regular file, never a FIFO or a device. A descriptor, or -errno. */
static int object_open(const struct uprobe_object *ob, struct stat *st)
{
	struct procfile_cred c;

	if (!ob->pid)
		return procfile_open_own(ob->path, st);
	procfile_cred_read(ob->pid, &c);
	return procfile_open_mapped(ob->pid, ob->start, ob->end, &c, 0, st);
}

/* ob opened for its definitions, its file's identity noted: the
 * descriptor, and the path the kernel is given for it, the descriptor
 * itself, which it resolves to the very file read (a path could name
 * another by then). -1 with a reason in err. */
static int object_hold(struct uprobe_object *ob, char *kpath, size_t len, char *err, size_t errlen)
{
	struct stat st;
	int fd = object_open(ob, &st);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open allocator object '%s': %s", ob->path, procfile_strerror(-fd));
		return -1;
	}
	ob->dev = st.st_dev;
	ob->ino = st.st_ino;
	snprintf(kpath, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The allocators of one process's maps (pid 0: this one's), libc first. */
static int objects_from_maps(struct uprobe_objects *o, pid_t pid, int all)
{
	char maps[64], *line = NULL;
	size_t alloc = 0;
	FILE *f;

	if (pid)
		snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	else
		snprintf(maps, sizeof(maps), "/proc/self/maps");
	if (!(f = fopen(maps, "re")))
		return -errno;
	while (getline(&line, &alloc, f) > 0) {
		char *p = strchr(line, '/');
		unsigned long long start, end;

		if (!p || sscanf(line, "%llx-%llx", &start, &end) != 2)
			continue;
		p[strcspn(p, "\n")] = 0;
		if (all ? allocator_name(p) : (!strncmp(strrchr(p, '/') + 1, "libc.so", 7) ||
					       !strncmp(strrchr(p, '/') + 1, "libc-2.", 7)))
			objects_add(o, p, pid, start, end);
	}
	free(line);
	fclose(f);
	return 0;
}

int uprobes_find_allocators(pid_t pid, struct uprobe_objects *o)
{
	int r;

	o->nr = 0;
	/* libc first, then whatever else allocates. */
	if ((r = objects_from_maps(o, pid, 0)) || (r = objects_from_maps(o, pid, 1)))
		return r;
	return o->nr ? 0 : -ENOENT;
}

static int elf_dynamic(int fd);

int uprobes_await_allocators(pid_t pid, struct uprobe_objects *o, int wait_ms)
{
	struct procfile_cred c;
	struct stat st;
	char exe[64];
	int r = uprobes_find_allocators(pid, o), fd, dyn;

	if (r != -ENOENT)
		return r;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	procfile_cred_read(pid, &c);
	fd = procfile_open_link(exe, &c, 0, &st);
	dyn = elf_dynamic(fd);
	if (fd >= 0)
		close(fd);
	if (dyn != 1)
		return r;
	for (int waited = 0; r == -ENOENT && waited < wait_ms; waited += 2) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		r = uprobes_find_allocators(pid, o);
	}
	return r;
}

int uprobes_system_allocators(struct uprobe_objects *o)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (uprobes_find_allocators(0, o))
		o->nr = 0;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]) || atoi(de->d_name) == getpid())
			continue;
		objects_from_maps(o, atoi(de->d_name), 1);
	}
	if (d)
		closedir(d);
	return o->nr ? 0 : -ENOENT;
}

int uprobes_command_path(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, X_OK) ? -1 : 0;
	}
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t l = strcspn(p, ":");

		snprintf(out, len, "%.*s/%s", (int)l, l ? p : ".", cmd);
		if (!access(out, X_OK))
			return 0;
		p += l + (p[l] == ':');
	}
	return -1;
}

/* 1 for a dynamically linked ELF (it has an interpreter), 0 for a static
 * one, -1 for no ELF (or fd < 0). */
static int elf_dynamic(int fd)
{
	int ret = -1;
	Elf *elf;
	size_t nph;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &nph)) {
		ret = 0;
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_INTERP)
				ret = 1;
		}
	}
	if (elf)
		elf_end(elf);
	return ret;
}

/* Ask the dynamic loader which objects path would map, as ldd does:
 * LD_TRACE_LOADED_OBJECTS makes it list them and exit before the program
 * runs (only ever for a dynamic ELF: a static one would run). The
 * environment is the command's own, LD_PRELOAD included. Its answer for
 * the last path asked is kept: setting up one recording asks of the same
 * program more than once, and each asking runs its loader (about 10 ms).
 * Returns the list, NULL when the loader gave none. */
static const char *loader_list(const char *path)
{
	static char buf[65536], asked[PATH_MAX];
	static size_t n;
	int fds[2], st;
	pid_t child;

	if (asked[0] && !strcmp(asked, path))
		return n ? buf : NULL;
	asked[0] = 0;
	n = 0;
	if (pipe2(fds, O_CLOEXEC))
		return NULL;
	child = fork();
	if (child < 0) {
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	if (!child) {
		int null = open("/dev/null", O_RDWR);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 0), dup2(null, 2);
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		struct pollfd p = { fds[0], POLLIN, 0 };
		ssize_t r;

		/* A loader that hangs is given up on, not waited for. */
		if (poll(&p, 1, 5000) <= 0)
			break;
		r = read(fds[0], buf + n, sizeof(buf) - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (n += r) == sizeof(buf) - 1)
			break;
	}
	close(fds[0]);
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	buf[n] = 0;
	snprintf(asked, sizeof(asked), "%s", path);
	return n ? buf : NULL;
}

/* Each object the dynamic loader would load for the program at path, as
 * LD_TRACE_LOADED_OBJECTS lists them, handed to fn in its order. */
static int loader_each(const char *path, void (*fn)(const char *obj, void *arg), void *arg)
{
	const char *list = loader_list(path);

	if (!list)
		return -ENOENT;
	/* "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", and for
	 * what LD_PRELOAD names "\t/usr/lib/.../libjemalloc.so.2 (0x...)". */
	for (const char *line = list, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		const char *arrow = strstr(line, "=> /"), *sp;

		nl = strchr(line, '\n');
		if (arrow && (!nl || arrow < nl))
			arrow += 3;
		else if (line[strspn(line, " \t")] == '/')
			arrow = line + strspn(line, " \t");
		else
			continue;
		sp = arrow + strcspn(arrow, " \n");
		if (*sp == ' ') {
			char p[PATH_MAX], real[PATH_MAX];

			/* As the kernel names the mapping (/lib is a link to
			 * /usr/lib on merged systems), so that a trace's maps
			 * and its list of probed objects compare. */
			snprintf(p, sizeof(p), "%.*s", (int)(sp - arrow), arrow);
			fn(realpath(p, real) ? real : p, arg);
		}
	}
	return 0;
}

static void add_libc(const char *obj, void *arg)
{
	if (!strncmp(strrchr(obj, '/') + 1, "libc.so", 7))
		objects_add(arg, obj, 0, 0, 0);
}

static void add_allocator(const char *obj, void *arg)
{
	if (allocator_name(obj))
		objects_add(arg, obj, 0, 0, 0);
}

/* elf_dynamic of a file this recorder chose by path. */
static int path_dynamic(const char *path)
{
	struct stat st;
	int fd = procfile_open_own(path, &st), dyn = elf_dynamic(fd);

	if (fd >= 0)
		close(fd);
	return dyn;
}

/* The allocators the program at path would load, libc first, as for a
 * running process. */
static int loader_objects(const char *path, struct uprobe_objects *o)
{
	if (loader_each(path, add_libc, o))
		return -ENOENT;
	loader_each(path, add_allocator, o);
	return o->nr ? 0 : -ENOENT;
}

/* The program a command runs: its path (a script's interpreter's), and
 * whether it is dynamically linked (1), static (0), or neither (-1). */
static int command_program(const char *argv0, char *path, size_t len)
{
	char line[PATH_MAX];
	FILE *f;
	int dyn;

	struct stat st;
	int fd;

	if (uprobes_command_path(argv0, path, len))
		return -1;
	dyn = path_dynamic(path);
	if (dyn >= 0)
		return dyn;
	/* A script: its interpreter's objects, and what the environment
	 * preloads into it. */
	if ((fd = procfile_open_own(path, &st)) < 0 || !(f = fdopen(fd, "re"))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, "#!", 2)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	snprintf(path, len, "%s", line + 2 + strspn(line + 2, " \t"));
	path[strcspn(path, " \t\n")] = 0;
	return path_dynamic(path);
}

int uprobes_command_allocators(char *const *argv, struct uprobe_objects *o, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int dyn = command_program(argv[0], path, sizeof(path));

	o->nr = 0;
	why[0] = 0;
	if (dyn == 0) {
		/* Static: the executable holds its allocator. */
		objects_add(o, path, 0, 0, 0);
		snprintf(why, whylen, "the static executable '%s'", path);
		return 0;
	}
	if (dyn < 0)
		return -ENOENT;
	return loader_objects(path, o);
}

/* Whether the object ob has otel_memory probes, and is not memsight's
 * own wrapper (probed as the wrapper). */
static int emits_otel(const struct uprobe_object *ob)
{
	const char *base = strrchr(ob->path, '/');
	struct usdt_site *v = NULL;
	struct stat st;
	int fd, n;

	if (!strncmp(base ? base + 1 : ob->path, "libmemsight-sample", 18))
		return 0;
	if ((fd = object_open(ob, &st)) < 0)
		return 0;
	n = usdt_sites(fd, "otel_memory", &v);
	close(fd);
	free(v);
	return n > 0;
}

static void add_emitter(const char *obj, void *arg)
{
	struct uprobe_objects one = { .nr = 0 };

	objects_add(&one, obj, 0, 0, 0);
	if (one.nr && emits_otel(&one.v[0]))
		uprobes_objects_add(arg, &one.v[0]);
}

int uprobes_command_emitters(char *const *argv, struct uprobe_objects *o)
{
	char path[PATH_MAX];
	int dyn = command_program(argv[0], path, sizeof(path));

	o->nr = 0;
	if (dyn < 0)
		return 0;
	add_emitter(path, o);
	if (dyn)
		loader_each(path, add_emitter, o);
	return o->nr;
}

int uprobes_pid_emitters(pid_t pid, struct uprobe_objects *o)
{
	char maps[64], *line = NULL;
	size_t alloc = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "re")))
		return 0;
	while (getline(&line, &alloc, f) > 0) {
		char *p = strchr(line, '/');
		unsigned long long start, end;
		struct uprobe_objects one = { .nr = 0 };
		int known = 0;

		if (!p || !strstr(line, " r-xp ") || sscanf(line, "%llx-%llx", &start, &end) != 2)
			continue;
		p[strcspn(p, "\n")] = 0;
		/* Read as the process maps it: through the mapping. */
		objects_add(&one, p, pid, start, end);
		for (int i = 0; i < o->nr && one.nr; i++)
			known |= one.v[0].dev ? o->v[i].dev == one.v[0].dev && o->v[i].ino == one.v[0].ino
					      : !strcmp(o->v[i].path, p);
		if (one.nr && !known && emits_otel(&one.v[0]))
			uprobes_objects_add(o, &one.v[0]);
	}
	free(line);
	fclose(f);
	return o->nr;
}

int uprobes_resolve_object(const char *name, const struct uprobe_objects *found, struct uprobe_object *out)
{
	size_t l = strlen(name);

	if (strchr(name, '/')) {
		struct uprobe_objects one = { .nr = 0 };

		objects_add(&one, name, 0, 0, 0);
		if (!one.nr)
			return -ENOENT;
		*out = one.v[0];
		return 0;
	}
	/* A soname or basename: the first mapped object it names. */
	for (int i = 0; i < found->nr; i++) {
		const char *base = strrchr(found->v[i].path, '/');

		base = base ? base + 1 : found->v[i].path;
		if (!strncmp(base, name, l)) {
			*out = found->v[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* File offsets of the allocation functions in obj (0 when absent). */
int uprobes_find_sampler(pid_t pid, struct uprobe_object *ob)
{
	char file[64], line[PATH_MAX + 256];
	struct uprobe_objects one = { .nr = 0 };
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (!one.nr && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *nl = strchr(line, '\n');
		unsigned long long start, end;

		if (nl)
			*nl = 0;
		if (p && strstr(p, "/" UPROBES_SAMPLER) && sscanf(line, "%llx-%llx", &start, &end) == 2)
			objects_add(&one, p, pid, start, end);
	}
	fclose(f);
	if (!one.nr)
		return -ENOENT;
	*ob = one.v[0];
	return 0;
}

int uprobes_sampler_library(char *path, size_t len)
{
	return sibling_path(UPROBES_SAMPLER, R_OK, path, len) ? -ENOENT : 0;
}

static int find_offsets(int fd, const char *obj, unsigned long long *off, char *err, size_t errlen)
{
	int found = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t nph;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		snprintf(err, errlen, "'%s' is not an ELF object: give a shared library or executable to -O", obj);
		if (elf)
			elf_end(elf);
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
			for (size_t k = 0; name && k < AF_NR; k++) {
				/* The probe points of samplers are USDT probes
				 * (add_usdt), never a function's entry. */
				if (off[k] || k >= AF_SAMPLED_FIRST || strcmp(name, alloc_fns[k].symbol))
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
	if (!off[AF_MALLOC] || !off[AF_FREE]) {
		snprintf(err, errlen, "'%s' has no %s function: give the allocator's object to -O "
				      "(its libc, libjemalloc.so.2, or a static executable)",
			 obj, off[AF_MALLOC] ? "free" : "malloc");
		return -1;
	}
	return found;
}

static int define(const char *line, const char *group, const char *event, char *err, size_t errlen)
{
	int r;

	if (nr_defined == sizeof(defined) / sizeof(defined[0])) {
		snprintf(err, errlen, "too many uprobes for one recording (%zu): probe fewer objects", nr_defined);
		return -1;
	}
	r = write_uprobe_events(line);

	if (r) {
		snprintf(err, errlen, "tracefs refused the uprobe '%s/%s' (%s): %s", group, event, strerror(-r),
			 r == -ENODEV || r == -ENOENT ? "is the kernel built with CONFIG_UPROBE_EVENTS?"
			 : geteuid()		      ? "defining uprobes needs root"
						      : "see /sys/kernel/tracing/error_log");
		return -1;
	}
	/* An event of several probes is removed once. */
	for (size_t i = 0; i < nr_defined; i++)
		if (!strcmp(defined[i].group, group) && !strcmp(defined[i].event, event))
			return 0;
	snprintf(defined[nr_defined].group, sizeof(defined[0].group), "%s", group);
	snprintf(defined[nr_defined++].event, sizeof(defined[0].event), "%s", event);
	return 0;
}

/* dump_max: the most bytes of stack a sample of this event needs, 0 when
 * not known. */
static int load_event(const char *group, const char *name, enum alloc_fn fn, int entry, unsigned dump_max,
		      const struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs,
		      size_t *nr)
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
	if (entry && (alloc_fns[fn].op != ALLOC_OP_FREE || u->free_stacks)) {
		/* Stacks at entry, never at return: a pending return probe
		 * has replaced a return address on the stack by then. */
		events_stack_attr(&e.attr, o);
		if (dump_max && (e.attr.sample_type & PERF_SAMPLE_STACK_USER) && dump_max < e.attr.sample_stack_user)
			e.attr.sample_stack_user = dump_max;
		/* The kernel part of a uprobe's callchain is only the trap
		 * that took it: walking it costs more than the user walk. */
		e.attr.exclude_callchain_kernel = 1;
		if (e.attr.exclude_callchain_user)
			e.attr.sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
		/* -s N: one entry in N, counted in the kernel. Returns and
		 * frees are all kept, so every free still finds its pointer;
		 * so are the entries whose return needs them. */
		if (!(alloc_fns[fn].flags & ALLOC_FN_EVERY) && alloc_fns[fn].op != ALLOC_OP_FREE)
			e.attr.sample_period = u->sample ? u->sample : 1;
	}
	if (!entry && alloc_fns[fn].op == ALLOC_OP_ALLOC_OUT) {
		e.attr.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		e.attr.sample_regs_user = 1ull << REC_REG_SP;
		e.attr.sample_stack_user = POSIX_MEMALIGN_STACK;
		e.dump_data = 1;
	}
	e.callchain_off = events_callchain_offset(e.attr.sample_type);
	{
		size_t n = 0;
		int filter = entry && (alloc_fns[fn].flags & ALLOC_FN_SIZE_FILTER);

		if (u->exclude_pid)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "common_pid != %d", (int)u->exclude_pid);
		if (filter && u->min_size)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "%ssize >= %llu", n ? " && " : "",
				      u->min_size);
		if (filter && u->max_size)
			n += snprintf(e.filter + n, sizeof(e.filter) - n, "%ssize <= %llu", n ? " && " : "",
				      u->max_size);
	}
	if (events_push(evs, nr, &e)) {
		free(format);
		return -ENOMEM;
	}
	return 0;
}

/* The otel_memory USDT probes of an object, under group: an event for
 * each site of alloc and free, its arguments as the site's note gives
 * them, its semaphore raised while the event is attached. A wrapper the
 * recording preloaded (one_site) reports at its probe sites only what its
 * stream cannot carry: its two sites are one event (AF_OTEL_SITES), with
 * a kind as a constant, where no kernel filter or period (-z, -Z, -s)
 * would drop its frees with the allocations. */
static int usdt_define(int fd, const char *kpath, const char *object, const char *group, int wrapper,
		       const struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs, size_t *nr,
		       char *err, size_t errlen)
{
	static const char *const alloc_args[] = { "ptr", "size", "weight" };
	int merge = wrapper && u->one_site && !u->min_size && !u->max_size && u->sample <= 1;
	struct usdt_site *v = NULL;
	int n = usdt_sites(fd, "otel_memory", &v), sites[2] = { 0, 0 };

	for (int i = 0; i < n; i++) {
		int alloc = !strcmp(v[i].name, "alloc"), k = alloc ? 0 : 1, want = alloc ? 3 : 1;
		char line[1024], name[64], sem[32] = "";
		unsigned dump_max;
		size_t l;

		if ((!alloc && strcmp(v[i].name, "free")) || v[i].nargs < want)
			continue;
		/* A site sized by a constant fourth argument, which a wrapper
		 * the recording preloaded does not use (uprobe_opts). */
		if (alloc && wrapper && u->one_site && v[i].nargs >= 4 && v[i].args[3][0] == '\\')
			continue;
		if (merge && sites[k])
			continue;
		if (merge)
			snprintf(name, sizeof(name), "%s", alloc_fns[AF_OTEL_SITES].symbol);
		else if (sites[k])
			snprintf(name, sizeof(name), "%s__%d", alloc_fns[alloc ? AF_OTEL_ALLOC : AF_OTEL_FREE].symbol,
				 sites[k] + 1);
		else
			snprintf(name, sizeof(name), "%s", alloc_fns[alloc ? AF_OTEL_ALLOC : AF_OTEL_FREE].symbol);
		sites[k]++;
		if (v[i].semaphore)
			snprintf(sem, sizeof(sem), "(0x%llx)", (unsigned long long)v[i].semaphore);
		l = snprintf(line, sizeof(line), "p:%s/%s %s:0x%llx%s", group, name, kpath,
			     (unsigned long long)v[i].offset, sem);
		for (int a = 0; a < want; a++) {
			if (!v[i].args[a][0]) {
				snprintf(err, errlen, "the otel_memory:%s probe of '%s' keeps its argument %d where a uprobe "
						      "cannot read it (%s)",
					 v[i].name, object, a + 1, "an index register or a symbol");
				free(v);
				return -1;
			}
			l += snprintf(line + l, sizeof(line) - l, " %s=%s", alloc_args[a], v[i].args[a]);
		}
		/* The probes of one event have the same fields. */
		if (merge)
			l += snprintf(line + l, sizeof(line) - l, "%s kind=\\%d:u64",
				      alloc ? "" : " size=\\0:u64 weight=\\0:u64", alloc ? OTEL_KIND_ALLOC : OTEL_KIND_FREE);
		snprintf(line + l, sizeof(line) - l, "\n");
		/* A constant fourth argument of alloc: the bytes of stack the
		 * site's frames take (memsight's sampler has a site for each
		 * of a few depths). */
		dump_max = 0;
		if (alloc && v[i].nargs >= 4 && v[i].args[3][0] == '\\') {
			long long b = strtoll(v[i].args[3] + 1, NULL, 10);

			dump_max = b >= 64 && b <= 65528 ? (unsigned)(b + 7) / 8 * 8 : 0;
		}
		if (define(line, group, name, err, errlen))
			goto fail;
		/* The event is read once both of its probes are in it. */
		if (merge)
			continue;
		if (load_event(group, name, alloc ? AF_OTEL_ALLOC : AF_OTEL_FREE, 1, dump_max, u, o, evs, nr))
			goto fail;
	}
	free(v);
	if (wrapper && (!sites[0] || !sites[1])) {
		snprintf(err, errlen, "'%s' has no otel_memory alloc and free probes: it is not memsight's sampler, "
				      "or another version of it",
			 object);
		return -1;
	}
	if (merge && load_event(group, alloc_fns[AF_OTEL_SITES].symbol, AF_OTEL_SITES, 1, 0, u, o, evs, nr))
		return -1;
	return 0;
fail:
	free(v);
	return -1;
}

static int add_usdt(struct uprobe_object *ob, const char *group, int wrapper, const struct uprobe_opts *u,
		    const struct rec_opts_events *o, struct rec_event **evs, size_t *nr, char *err, size_t errlen)
{
	char kpath[64];
	int fd = object_hold(ob, kpath, sizeof(kpath), err, errlen), r;

	if (fd < 0)
		return -1;
	r = usdt_define(fd, kpath, ob->path, group, wrapper, u, o, evs, nr, err, errlen);
	close(fd);
	return r;
}

/* A function's entry fields as the merged events have them: each of
 * the family's argument names, the function's own fetch or 0. */
static void merged_fields(enum alloc_fn k, char *out, size_t len)
{
	static const char *const names[] = { "size", "nmemb", "ptr", "memptr", "align" };
	size_t l = 0;

	out[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *a = alloc_fns[k].args, *at = NULL;
		size_t nl = strlen(names[i]);

		for (const char *p = a; *p; p += strcspn(p, " "), p += *p == ' ')
			if (!strncmp(p, names[i], nl) && p[nl] == '=')
				at = p;
		if (at)
			l += snprintf(out + l, l < len ? len - l : 0, " %.*s", (int)strcspn(at, " "), at);
		else
			l += snprintf(out + l, l < len ? len - l : 0, " %s=\\0:u64", names[i]);
	}
}

/* The probes of one allocator object, under group. Without -s, -z or
 * -Z, which give the functions' events attributes and filters of their
 * own, the entries of the allocating functions are one event, those of
 * the freeing ones another, and the returns a third (AF_ALLOCS, AF_FREES):
 * as a recording ends each event waits out the kernel's grace periods,
 * one after another, about 40 ms here. */
static int object_define(int fd, const char *object, const char *kpath, const char *group,
			 const struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs, size_t *nr,
			 char *err, size_t errlen)
{
	unsigned long long off[AF_NR] = { 0 };
	int merge = !u->min_size && !u->max_size && u->sample <= 1, have[3] = { 0, 0, 0 };
	static const enum alloc_fn merged[3] = { AF_ALLOCS, AF_FREES, AF_ALLOCS };

	if (find_offsets(fd, object, off, err, errlen) < 0)
		return -1;
	for (size_t k = 0; k < AF_NR; k++) {
		char line[1024], name[64], also[256] = "", fields[256];
		int dup = 0, frees = alloc_fns[k].op == ALLOC_OP_FREE;

		if (!off[k])
			continue;
		/* One probe per address: aliases (memalign and aligned_alloc
		 * share code in glibc) would each fire otherwise. */
		for (size_t j = 0; j < k; j++)
			dup |= off[j] == off[k];
		if (dup)
			continue;
		for (size_t j = k + 1; j < AF_NR; j++)
			if (off[j] == off[k])
				snprintf(also + strlen(also), sizeof(also) - strlen(also), "%s%s", also[0] ? "," : "",
					 alloc_fns[j].symbol);
		/* For a shared address, the 8 bytes before the return address:
		 * the call instruction, whose PLT slot names the function the
		 * program called. */
		if (also[0] && !strstr(aliases, alloc_fns[k].symbol))
			snprintf(aliases + strlen(aliases), sizeof(aliases) - strlen(aliases), "%s%s=%s",
				 aliases[0] ? " " : "", alloc_fns[k].symbol, also);
		if (merge) {
			merged_fields(k, fields, sizeof(fields));
			snprintf(name, sizeof(name), "%s", alloc_fns[merged[frees]].symbol);
			snprintf(line, sizeof(line), "p:%s/%s %s:0x%llx%s caller=+0($stack):u64 insn=%s fn=\\%zu:u64\n",
				 group, name, kpath, off[k], fields, also[0] ? "-8(+0($stack)):u64" : "\\0:u64", k);
			if (define(line, group, name, err, errlen))
				return -1;
			have[frees] = 1;
		} else {
			snprintf(name, sizeof(name), "%s", alloc_fns[k].symbol);
			snprintf(line, sizeof(line), "p:%s/%s %s:0x%llx %s caller=+0($stack):u64%s\n", group, name,
				 kpath, off[k], alloc_fns[k].args, also[0] ? " insn=-8(+0($stack)):u64" : "");
			if (define(line, group, name, err, errlen) || load_event(group, name, k, 1, 0, u, o, evs, nr))
				return -1;
		}
		if (frees || alloc_fns[k].op == ALLOC_OP_ALLOC_AT)
			continue;
		/* posix_memalign's return takes stack bytes: an event of its
		 * own. */
		if (merge && alloc_fns[k].op != ALLOC_OP_ALLOC_OUT) {
			snprintf(name, sizeof(name), "%s" UPROBES_RETURN_SUFFIX, alloc_fns[AF_ALLOCS].symbol);
			snprintf(line, sizeof(line), "r:%s/%s %s:0x%llx ret=$retval:u64 fn=\\%zu:u64\n", group, name,
				 kpath, off[k], k);
			if (define(line, group, name, err, errlen))
				return -1;
			have[2] = 1;
			continue;
		}
		snprintf(name, sizeof(name), "%s" UPROBES_RETURN_SUFFIX, alloc_fns[k].symbol);
		snprintf(line, sizeof(line), "r:%s/%s %s:0x%llx ret=$retval:u64\n", group, name, kpath, off[k]);
		if (define(line, group, name, err, errlen) || load_event(group, name, k, 0, 0, u, o, evs, nr))
			return -1;
	}
	/* Each merged event read once all its probes are in it. */
	for (int c = 0; c < 3; c++) {
		char name[64];

		if (!have[c])
			continue;
		snprintf(name, sizeof(name), "%s%s", alloc_fns[merged[c]].symbol, c == 2 ? UPROBES_RETURN_SUFFIX : "");
		if (load_event(group, name, merged[c], c < 2, 0, u, o, evs, nr))
			return -1;
	}
	return 0;
}

/* The probes of one object, under group: its USDT probes when it is the
 * sampler, its functions' entries and returns otherwise. */
static int add_object(struct uprobe_object *ob, const char *group, const struct uprobe_opts *u,
		      const struct rec_opts_events *o, struct rec_event **evs, size_t *nr, char *err, size_t errlen)
{
	char kpath[64];
	int fd, r;

	if (u->sampled)
		return add_usdt(ob, group, 1, u, o, evs, nr, err, errlen);
	if ((fd = object_hold(ob, kpath, sizeof(kpath), err, errlen)) < 0)
		return -1;
	r = object_define(fd, ob->path, kpath, group, u, o, evs, nr, err, errlen);
	close(fd);
	return r;
}

int uprobes_add(struct uprobe_opts *u, const struct rec_opts_events *o, struct rec_event **evs, size_t *nr,
		char *err, size_t errlen)
{
	size_t start = *nr;

	/* Before the first definition: a recorder killed while it defines
	 * or opens them leaves none behind. */
	uprobes_guard();
	aliases[0] = 0;
	for (int i = 0; i < u->objects.nr + u->emitters.nr; i++) {
		char group[64];

		/* A group per object: the same function names in each. */
		if (i)
			snprintf(group, sizeof(group), "memsight_%d_%d", (int)getpid(), i + 1);
		else
			snprintf(group, sizeof(group), "memsight_%d", (int)getpid());
		if (i < u->objects.nr ? add_object(&u->objects.v[i], group, u, o, evs, nr, err, errlen)
				      : add_usdt(&u->emitters.v[i - u->objects.nr], group, 0, u, o, evs, nr, err, errlen))
			goto fail;
	}
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "cannot set up the uprobes of the allocator");
	events_free(*evs + start, *nr - start);
	*nr = start;
	uprobes_remove();
	return -1;
}

int uprobes_add_late(struct uprobe_object *ob, int index, const struct uprobe_opts *u,
		     const struct rec_opts_events *o, struct rec_event **evs, size_t *nr, char *err, size_t errlen)
{
	size_t start = *nr, defs = nr_defined;
	char group[64];

	uprobes_guard();
	snprintf(group, sizeof(group), "memsight_%d_%d", (int)getpid(), index);
	if (!add_object(ob, group, u, o, evs, nr, err, errlen))
		return 0;
	events_free(*evs + start, *nr - start);
	*nr = start;
	/* Only this object's definitions go: the others are in use. */
	for (size_t i = nr_defined; i-- > defs;) {
		char line[192];

		snprintf(line, sizeof(line), "-:%s/%s\n", defined[i].group, defined[i].event);
		write_uprobe_events(line);
	}
	nr_defined = defs;
	return -1;
}

const char *uprobes_aliases(void)
{
	return aliases;
}

/* Remove every definition under the groups of recorder pid (memsight_PID
 * and memsight_PID_N), trying those the kernel still holds (EBUSY) again:
 * every 10 ms for 3 s, then every 0.5 s for a minute. A killed recorder's
 * command lives on with the events it inherited, and its probes can go
 * only once it ends. */
static void remove_groups_of(pid_t pid)
{
	for (int round = 0; round < 300 + 120; round++) {
		size_t len, left = 0;
		char *text = events_tracefs_read("uprobe_events", &len), *p, *save = NULL;

		if (!text)
			return;
		for (p = strtok_r(text, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
			char grp[64], ev[128], line[256];
			int owner, n = 0;

			if (sscanf(p, "%*[pr]:%63[^/]/%127s", grp, ev) != 2 ||
			    sscanf(grp, "memsight_%d%n", &owner, &n) != 1 || owner != pid ||
			    (grp[n] && grp[n] != '_'))
				continue;
			snprintf(line, sizeof(line), "-:%s/%s\n", grp, ev);
			left += write_uprobe_events(line) == -EBUSY;
		}
		free(text);
		if (!left)
			return;
		nanosleep(&(struct timespec){ 0, (round < 300 ? 10 : 500) * 1000 * 1000 }, NULL);
	}
}

static void uprobes_guard(void)
{
	int p[2];
	char c;
	pid_t owner = getpid();

	if (guard_pid > 0 || pipe2(p, O_CLOEXEC))
		return;
	guard_pid = fork();
	if (guard_pid == 0) {
		sigset_t all;

		/* Only a kill of its own ends it: not the Ctrl-C of the
		 * recorder's terminal, which comes before the cleanup. It keeps
		 * nothing of the recorder's open but the pipe: not its perf
		 * events, which would never be released, nor its standard
		 * streams, which a reader of the recorder's output waits on. */
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		prctl(PR_SET_NAME, "memsight-guard");
		dup2(p[0], 0);
		close_range(1, ~0u, 0);
		while (read(0, &c, 1) < 0 && errno == EINTR)
			;
		/* By group, not by this copy of the list: probes of
		 * allocators found later were defined after the fork. */
		remove_groups_of(owner);
		_exit(0);
	}
	close(p[0]);
	if (guard_pid < 0) {
		guard_pid = 0;
		close(p[1]);
		return;
	}
	guard_fd = p[1];
}

void uprobes_guard_end(void)
{
	if (guard_fd >= 0)
		close(guard_fd);
	guard_fd = -1;
	if (guard_pid > 0)
		while (waitpid(guard_pid, NULL, 0) < 0 && errno == EINTR)
			;
	guard_pid = 0;
}

/* An event's last perf user can let go of it a little after its fd is
 * closed (the events of a target that exited are freed with their task's
 * context), and until then the kernel refuses the removal with EBUSY: try
 * those again for up to 3 s rather than leave probes behind. */
void uprobes_remove(void)
{
	static unsigned char busy[sizeof(defined) / sizeof(defined[0])];
	char line[192];

	for (int round = 0; nr_defined && round < 300; round++) {
		size_t kept = 0;

		if (round)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
		/* Returns go before their entries: the last defined first. */
		for (size_t i = nr_defined; i-- > 0;) {
			snprintf(line, sizeof(line), "-:%s/%s\n", defined[i].group, defined[i].event);
			busy[i] = write_uprobe_events(line) == -EBUSY;
		}
		for (size_t i = 0; i < nr_defined; i++)
			if (busy[i])
				defined[kept++] = defined[i];
		nr_defined = kept;
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
		char grp[64], ev[128], line[256], comm[64] = "", path[64];
		FILE *f;

		/* "p:memsight_123/malloc /path:0x..." or "r:memsight_123_2/..." */
		if (sscanf(p, "%*[pr]:%63[^/]/%127s", grp, ev) != 2 || sscanf(grp, "memsight_%d", &pid) != 1)
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
		snprintf(line, sizeof(line), "-:%s/%s\n", grp, ev);
		write_uprobe_events(line);
	}
	free(text);
}
