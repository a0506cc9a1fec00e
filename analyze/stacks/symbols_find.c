/*
 * analyze/stacks/symbols_find.c: finding an object's files on this machine, in the trace or
 * from debuginfod, by build-id: the one libdwfl names from (the debug file
 * first), and the object itself for unwinding, with its PLT slots.
 */
#include "symbols_int.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../formats/cache.h"
#include "../../formats/regular.h"
#include "../../formats/elfcut.h"

/* libdwfl searches only the system's debug tree itself: a debug file
 * beside the object is looked for by debug_beside, which opens nothing
 * but regular files. (Its own search would block on a FIFO planted where
 * a trace's object path points.) */
static char debuginfo_dirs[] = "/usr/lib/debug";
static char *debuginfo_path = debuginfo_dirs;

/*
 * A separate debug file whose DWARF is compressed (Debian's are) is
 * inflated whole by libdw each time it is opened: 0.11 s for libc's. Its
 * debug cut (formats/elfcut.h), uncompressed and with the same notes, is
 * kept in the cache directory, named by build-id, and read in its place
 * from the next run on.
 */

/* The cut's name for build-id bid into buf; 0, or -1 without a cache. */
static int cut_name(const unsigned char *bid, int bid_len, char *buf, size_t len)
{
	char dir[PATH_MAX], hex[41];
	int n;

	if (bid_len <= 0 || cache_dir(dir, sizeof(dir)))
		return -1;
	symbols_build_id_hex(bid, bid_len, hex);
	n = snprintf(buf, len, "%s/" CACHE_ENTRY_PREFIX "%s.local.debugcut", dir, hex);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

int symbols_file_open(const char *path)
{
	struct stat st;
	int fd = regular_open(path, &st);

	return fd < 0 ? -1 : fd;
}

/* The cut of build-id bid at name open, or -1. One that is not an ELF
 * file with that build-id (a crash before its blocks reached the disk,
 * say) is removed (not a directory) to be made again: otherwise its
 * frames would go unnamed on every run, without a word. */
static int cut_open(const char *name, const unsigned char *bid, int bid_len)
{
	int fd, ok = 0;
	Elf *elf = NULL;
	const void *got;
	struct stat st;

	/* Never blocking on a FIFO someone left under the name. */
	if ((fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)) < 0)
		return -1;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		ok = dwelf_elf_gnu_build_id(elf, &got) == bid_len && !memcmp(got, bid, bid_len);
	if (elf)
		elf_end(elf);
	if (ok) {
		cache_touch(fd);
		return fd;
	}
	close(fd);
	unlink(name);
	return -1;
}

/* The file to open for the debug file at path: its cut when there is one
 * or one can be made, else path itself. */
static const char *debug_plain(const unsigned char *bid, int bid_len, const char *path, char *buf, size_t len)
{
	char tmp[PATH_MAX + 16];
	int fd, src, ok;
	Elf *elf;

	if (cut_name(bid, bid_len, buf, len))
		return path;
	if ((fd = cut_open(buf, bid, bid_len)) >= 0) {
		close(fd);
		return buf;
	}
	if (!elfcut_debug_compressed(path))
		return path;
	fd = cache_temp(buf, tmp, sizeof(tmp));
	if (fd < 0)
		return path;
	src = symbols_file_open(path);
	elf = src < 0 ? NULL : elf_begin(src, ELF_C_READ_MMAP, NULL);
	ok = elf && !elfcut_write(elf, ELFCUT_DEBUG, fd);
	if (elf)
		elf_end(elf);
	if (src >= 0)
		close(src);
	/* Complete (a full disk fails the write): only now under its name. */
	if (!close(fd) && ok && !rename(tmp, buf)) {
		char dir[PATH_MAX];

		if (!cache_dir_of(buf, dir, sizeof(dir)))
			cache_trim(dir);
		return buf;
	}
	unlink(tmp);
	return path;
}

/* The debug file of the object at file_name that sits beside it, or in
 * .debug/ beside it, under its .gnu_debuglink name or the object's name
 * with .debug added, when its build-id is the object's (bid, n): a
 * descriptor with its name in *name, or -1. */
static int debug_beside(const unsigned char *bid, int n, const char *file_name, const char *link, char **name)
{
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	char path[PATH_MAX], self[NAME_MAX + 8];

	if (!slash || n <= 0)
		return -1;
	if (!link) {
		snprintf(self, sizeof(self), "%.*s.debug", NAME_MAX, slash + 1);
		link = self;
	}
	if (strchr(link, '/'))
		return -1;
	for (int i = 0; i < 2; i++) {
		Elf *elf;
		const void *got;
		int fd, ok;

		if (snprintf(path, sizeof(path), "%.*s/%s%s", (int)(slash - file_name), file_name, i ? ".debug/" : "",
			     link) >= (int)sizeof(path) || !strcmp(path, file_name) || (fd = symbols_file_open(path)) < 0)
			continue;
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		ok = elf && dwelf_elf_gnu_build_id(elf, &got) == n && !memcmp(got, bid, n);
		if (elf)
			elf_end(elf);
		if (ok && (*name = strdup(path)))
			return fd;
		close(fd);
	}
	return -1;
}

/* libdwfl's own search for a module's debug file (by build-id, then
 * .gnu_debuglink), after the cut of one found before. The search opens
 * what it finds itself, so a cut made now serves the next run. */
static int find_debuginfo_plain(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
				const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
				char **debuginfo_file_name)
{
	const unsigned char *bid;
	GElf_Addr vaddr;
	char buf[PATH_MAX];
	int n = dwfl_module_build_id(mod, &bid, &vaddr), fd;

	if (n > 0 && !cut_name(bid, n, buf, sizeof(buf)) && (fd = cut_open(buf, bid, n)) >= 0) {
		if ((*debuginfo_file_name = strdup(buf)))
			return fd;
		close(fd);
	}
	if ((fd = debug_beside(bid, n, file_name, debuglink_file, debuginfo_file_name)) < 0)
		fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
						  debuglink_crc, debuginfo_file_name);
	if (n > 0 && *debuginfo_file_name)
		debug_plain(bid, n, *debuginfo_file_name, buf, sizeof(buf));
	return fd;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo_plain,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* The debuginfod client is shared by the loader thread and the main one,
 * and is not for two threads at once. */
static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;

/* Set by --debuginfod: asked only for what no local file provides. The
 * client library is loaded then, not at every start: it brings libcurl
 * and its TLS stack, a few milliseconds of relocations for every run. */
static struct {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
} dbgd_fn;

int symbols_debuginfod_start(struct symbols *s)
{
	const char *urls = s->o.debuginfod_urls;
	void *lib;

	if (!urls)
		return 0;
	if (!*urls)
		return -EINVAL;
	/* The client reads its servers from the environment. */
	if (setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1))
		return -ENOMEM;
	lib = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -ENOENT;
	dbgd_fn.begin = (debuginfod_client * (*)(void)) dlsym(lib, "debuginfod_begin");
	dbgd_fn.find_debuginfo = (int (*)(debuginfod_client *, const unsigned char *, int, char **))dlsym(
		lib, "debuginfod_find_debuginfo");
	dbgd_fn.find_executable = (int (*)(debuginfod_client *, const unsigned char *, int, char **))dlsym(
		lib, "debuginfod_find_executable");
	if (!dbgd_fn.begin || !dbgd_fn.find_debuginfo || !dbgd_fn.find_executable)
		return -ENOENT;
	s->dbgd = dbgd_fn.begin();
	return s->dbgd ? 0 : -ENOMEM;
}

void symbols_debuginfod_end(struct symbols *s)
{
	/* The client stays: ending it would unload what libcurl set up
	 * for the process, for a few kilobytes. */
	s->dbgd = NULL;
}

/* The debuginfod cache's copy of d's executable or debug file, by build-id
 * (malloc'd), or NULL. The caller still checks the build-id. */
static char *debuginfod_fetch(const struct dso *d, int executable)
{
	char *path = NULL;
	int fd;

	debuginfod_client *dbgd = d->owner->dbgd;

	if (!dbgd || !d->bid_len)
		return NULL;
	pthread_mutex_lock(&find_lock);
	fd = executable ? dbgd_fn.find_executable(dbgd, d->build_id, d->bid_len, &path)
			: dbgd_fn.find_debuginfo(dbgd, d->build_id, d->bid_len, &path);
	pthread_mutex_unlock(&find_lock);
	if (fd < 0)
		return NULL;
	close(fd);
	return path;
}

/* Read the PT_LOAD table. Returns 1 when the executable segments hold no
 * bytes (a separate debug file), 0 otherwise. */
static int dso_loads_read(struct dso *d, Elf *elf)
{
	size_t nph;
	int has_bytes = 0;

	free(d->loads);
	d->loads = NULL;
	d->nr_loads = 0;
	if (!elf || elf_getphdrnum(elf, &nph))
		return 1;
	d->loads = calloc(nph ? nph : 1, sizeof(*d->loads));
	for (size_t i = 0; d->loads && i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		d->loads[d->nr_loads++] = (struct dso_load){ ph.p_offset, ph.p_vaddr, ph.p_memsz };
		if (ph.p_flags & PF_X)
			has_bytes |= ph.p_filesz > 0;
	}
	return !has_bytes;
}

/* Load one candidate file. Returns DSO_OK, DSO_MISSING, DSO_MISMATCH or
 * DSO_NOTELF. */
static enum dso_state dso_try(struct dso *d, const char *path)
{
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	Elf *elf;
	size_t nph;
	int n, fd;

	if ((fd = symbols_file_open(path)) < 0)
		return DSO_MISSING;
	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl) {
		close(fd);
		return DSO_MISSING;
	}
	dwfl_report_begin(dwfl);
	/* On success libdwfl keeps fd, and closes it with dwfl. */
	mod = dwfl_report_elf(dwfl, d->short_name, path, fd, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		close(fd);
		dwfl_end(dwfl);
		return DSO_NOTELF;
	}
	/* Never use a file whose build-id differs: wrong names are worse
	 * than none. */
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (d->bid_len && (n != d->bid_len || memcmp(bits, d->build_id, n))) {
		dwfl_end(dwfl);
		return DSO_MISMATCH;
	}
	elf = dwfl_module_getelf(mod, &bias);
	if (!elf || elf_getphdrnum(elf, &nph)) {
		dwfl_end(dwfl);
		return DSO_NOTELF;
	}
	if (dso_loads_read(d, elf) && strcmp(path, d->path)) {
		/* A separate debug file keeps p_vaddr but not p_offset: its
		 * segments hold no bytes. Take the layout from the object itself
		 * when it is here with the same build-id, else assume offsets
		 * equal addresses, which holds for the text of usual layouts. */
		int ofd = symbols_file_open(d->path);
		Elf *orig = ofd >= 0 ? elf_begin(ofd, ELF_C_READ_MMAP, NULL) : NULL;
		int same = 0;

		if (orig) {
			const void *ob;
			ssize_t ol = dwelf_elf_gnu_build_id(orig, &ob);

			same = ol == d->bid_len && !memcmp(ob, d->build_id, ol);
		}
		if (!same || dso_loads_read(d, orig))
			for (size_t i = 0; i < d->nr_loads; i++)
				d->loads[i].off = d->loads[i].vaddr;
		if (orig)
			elf_end(orig);
		if (ofd >= 0)
			close(ofd);
	}
	d->dwfl = dwfl;
	d->mod = mod;
	d->used = strdup(path);
	return DSO_OK;
}

/* Where an object may be, in the order of the search (see symbols.h):
 * DIR/.build-id/xx/rest(.debug) under --debug-dir and ~/.debug (also perf's
 * build-id cache layout, a directory holding "elf" and "debug"), then
 * /usr/lib/debug, then the recorded path. Separate debug files only when
 * looking for symbols. */
enum cand_for { FOR_SYMBOLS, FOR_OBJECT };
#define MAX_CANDS 48

static void cand_add(char (*out)[PATH_MAX], int *n, int max, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void cand_add(char (*out)[PATH_MAX], int *n, int max, const char *fmt, ...)
{
	va_list ap;
	int len;

	if (*n >= max)
		return;
	va_start(ap, fmt);
	len = vsnprintf(out[*n], PATH_MAX, fmt, ap);
	va_end(ap);
	/* A path too long to open is no candidate. */
	if (len > 0 && len < PATH_MAX)
		(*n)++;
}

static int dso_candidates(const struct dso *d, enum cand_for what, char (*out)[PATH_MAX], int max)
{
	const struct symbols_opts *o = &d->owner->o;
	char hex[41], home_debug[PATH_MAX];
	int n = 0;

#define ADD(...) cand_add(out, &n, max, __VA_ARGS__)
	char emb[PATH_MAX], dbg[PATH_MAX];
	int mode = embedded_path(d, 1u << EMBED_MINIMAL | 1u << EMBED_FULL, emb, sizeof(emb));

	/* The trace's own copies first: for names its debug entry (symbol
	 * table, inlined functions, lines), then a full object. A minimal one
	 * has only the unwind and symbol tables, so for names any local file
	 * with the same build-id goes before it. */
	if (what == FOR_SYMBOLS && embedded_path(d, 1u << EMBED_DEBUG, dbg, sizeof(dbg)))
		ADD("%s", dbg);
	if (mode == EMBED_FULL || (mode == EMBED_MINIMAL && what == FOR_OBJECT))
		ADD("%s", emb);
	if (o->sysroot)
		ADD("%s%s", o->sysroot, d->path);
	if (!d->bid_len) {
		if (!o->hermetic)
			ADD("%s", d->path);
		return n;
	}
	symbols_build_id_hex(d->build_id, d->bid_len, hex);
	snprintf(home_debug, sizeof(home_debug), "%s/.debug", o->home && o->home[0] ? o->home : "/root");
	for (size_t i = 0; i < o->nr_debug_dirs + !o->hermetic; i++) {
		const char *dir = i < o->nr_debug_dirs ? o->debug_dirs[i] : home_debug;

		if (what == FOR_SYMBOLS)
			ADD("%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
		ADD("%s/.build-id/%.2s/%s", dir, hex, hex + 2);
		ADD("%s/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
		if (what == FOR_SYMBOLS)
			ADD("%s/.build-id/%.2s/%s/debug", dir, hex, hex + 2);
	}
	if (what == FOR_SYMBOLS && !o->hermetic)
		ADD("/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	/* On the recording machine, a container's file as its process sees
	 * it, while that process runs: the build-id check below tells a pid
	 * taken since by another process. */
	if (o->same_boot && d->pid > 0 && !o->hermetic)
		ADD("/proc/%d/root%s", d->pid, d->path);
	if (!o->hermetic)
		ADD("%s", d->path);
	if (mode == EMBED_MINIMAL && what == FOR_SYMBOLS)
		ADD("%s", emb);
#undef ADD
	return n;
}

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

void dso_load(struct dso *d)
{
	char cands[MAX_CANDS][PATH_MAX];
	int n = dso_candidates(d, FOR_SYMBOLS, cands, MAX_CANDS), mismatch = 0;
	enum dso_state st = DSO_MISSING;

	d->state = DSO_MISSING;
	for (int i = 0; i < n; i++) {
		char plain[PATH_MAX];

		if (!is_file(cands[i]))
			continue;
		/* A separate debug file found here, through its cut. Never one
		 * a trace carried (opened as /proc/self/fd/N): the cut is named
		 * by build-id alone, and would name that build-id's frames in
		 * every later analysis, whatever trace they came from. */
		st = dso_try(d, strcmp(cands[i], d->path) && strncmp(cands[i], "/proc/self/fd/", 14)
					? debug_plain(d->build_id, d->bid_len, cands[i], plain, sizeof(plain))
					: cands[i]);
		if (st == DSO_OK) {
			d->state = st;
			return;
		}
		mismatch |= st == DSO_MISMATCH;
	}
	/* Over the network last: the debug file first, for inlined frames
	 * and lines, then the executable's symbol tables. */
	for (int exe = 0; d->owner->dbgd && exe < 2; exe++) {
		char *path = debuginfod_fetch(d, exe);

		if (path && dso_try(d, path) == DSO_OK) {
			free(path);
			d->state = DSO_OK;
			return;
		}
		free(path);
	}
	d->state = mismatch ? DSO_MISMATCH : st;
}

Elf_Scn *symbols_elf_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && sh.sh_size &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Does the ELF have unwind tables with bytes in them? */
static int has_unwind_tables(Elf *elf)
{
	return symbols_elf_section(elf, ".eh_frame") || symbols_elf_section(elf, ".debug_frame");
}

static int object_try(struct dso *d, const char *path)
{
	int fd = symbols_file_open(path), ok = 0;
	struct stat st;
	Elf *elf;
	size_t nph;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return 0;
	}
	if (d->bid_len) {
		const void *bid;
		ssize_t bl = dwelf_elf_gnu_build_id(elf, &bid);

		if (bl != d->bid_len || memcmp(bid, d->build_id, bl))
			goto out;
	}
	if (!has_unwind_tables(elf) || elf_getphdrnum(elf, &nph))
		goto out;
	d->obj_loads = calloc(nph ? nph : 1, sizeof(*d->obj_loads));
	if (!d->obj_loads)
		goto out;
	{
		GElf_Ehdr eh;

		if (gelf_getehdr(elf, &eh))
			d->obj_entry = eh.e_entry;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
			d->obj_loads[d->nr_obj_loads++] = (struct dso_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	{
		/* Reads go through the sections: in an embedded minimal
		 * object only they hold bytes, not the file offsets the
		 * program headers name. */
		size_t nsec = 0;
		Elf_Scn *scn = NULL;

		elf_getshdrnum(elf, &nsec);
		d->obj_sects = calloc(nsec ? nsec : 1, sizeof(*d->obj_sects));
		while (d->obj_sects && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && (sh.sh_flags & SHF_ALLOC) && sh.sh_size &&
			    sh.sh_offset + sh.sh_size <= (uint64_t)st.st_size)
				d->obj_sects[d->nr_obj_sects++] = (struct dso_sect){ sh.sh_addr, sh.sh_offset, sh.sh_size };
		}
	}
	d->obj_bytes = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (d->obj_bytes == MAP_FAILED) {
		d->obj_bytes = NULL;
		free(d->obj_loads);
		d->obj_loads = NULL;
		d->nr_obj_loads = 0;
		goto out;
	}
	d->obj_size = st.st_size;
	d->obj_path = strdup(path);
	ok = d->obj_path != NULL;
out:
	elf_end(elf);
	close(fd);
	return ok;
}

const char *symbols_object(struct dso *d)
{
	char cands[MAX_CANDS][PATH_MAX];
	int n;

	if (d->obj_state)
		return d->obj_state > 0 ? d->obj_path : NULL;
	d->obj_state = -1;
	n = dso_candidates(d, FOR_OBJECT, cands, MAX_CANDS);
	for (int i = 0; i < n; i++) {
		if (object_try(d, cands[i])) {
			d->obj_state = 1;
			return d->obj_path;
		}
	}
	{
		char *path = debuginfod_fetch(d, 1);
		int ok = path && object_try(d, path);

		free(path);
		if (ok) {
			d->obj_state = 1;
			return d->obj_path;
		}
	}
	return NULL;
}

const char *symbols_debug_file(struct dso *d)
{
	/* The unwinder asks while the replay runs: the loader keeps d to
	 * name its addresses ahead. */
	if (dso_wait_loaded(d))
		return d->state == DSO_OK ? d->used : NULL;
	dso_settle(d);
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	return d->state == DSO_OK ? d->used : NULL;
}

int symbols_object_read(struct dso *d, uint64_t off, void *buf, size_t len)
{
	if (!symbols_object(d))
		return -1;
	/* File offset -> address -> the section holding it. */
	for (size_t i = 0; i < d->nr_obj_loads; i++) {
		const struct dso_load *l = &d->obj_loads[i];
		uint64_t vaddr;

		if (off < l->off || off >= l->off + l->size)
			continue;
		vaddr = off - l->off + l->vaddr;
		for (size_t j = 0; j < d->nr_obj_sects; j++) {
			const struct dso_sect *sc = &d->obj_sects[j];

			if (vaddr >= sc->addr && vaddr < sc->addr + sc->size) {
				size_t have = sc->addr + sc->size - vaddr;

				/* Unwinders read whole words: the tail of one
				 * past a section's end is padding, read as 0. */
				if (have > len)
					have = len;
				memcpy(buf, d->obj_bytes + sc->off + (vaddr - sc->addr), have);
				memset((char *)buf + have, 0, len - have);
				return 0;
			}
		}
		return -1;
	}
	return -1;
}

static int slot_cmp(const void *a, const void *b)
{
	const struct dso_slot *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Every JUMP_SLOT and GLOB_DAT relocation of d's object, with the name of
 * the symbol it binds. */
static void slots_load(struct dso *d)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t alloc = 0;

	d->slots_state = -1;
	if (!symbols_object(d) || !(elf = elf_memory((char *)d->obj_bytes, d->obj_size)))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *rd, *sd;
		Elf_Scn *symscn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(symscn = elf_getscn(elf, sh.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
		    !(rd = elf_getdata(scn, NULL)) || !(sd = elf_getdata(symscn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			unsigned type;

			if (!gelf_getrela(rd, i, &r))
				break;
			type = GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !GELF_R_SYM(r.r_info) ||
			    !gelf_getsym(sd, GELF_R_SYM(r.r_info), &sym) ||
			    !(name = elf_strptr(elf, symsh.sh_link, sym.st_name)))
				continue;
			if (d->nr_slots == alloc) {
				struct dso_slot *v = realloc(d->slots, (alloc = alloc ? alloc * 2 : 64) * sizeof(*v));

				if (!v)
					goto out;
				d->slots = v;
			}
			if (!(d->slots[d->nr_slots].name = strdup(name)))
				goto out;
			d->slots[d->nr_slots++].vaddr = r.r_offset;
		}
	}
out:
	elf_end(elf);
	if (d->nr_slots > 1)
		qsort(d->slots, d->nr_slots, sizeof(*d->slots), slot_cmp);
	d->slots_state = 1;
}

/* len bytes at virtual address vaddr of d's object, from the section
 * holding them; 0 or -1. */
static int object_read_vaddr(const struct dso *d, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t j = 0; j < d->nr_obj_sects; j++) {
		const struct dso_sect *sc = &d->obj_sects[j];

		if (vaddr >= sc->addr && vaddr + len <= sc->addr + sc->size) {
			memcpy(buf, d->obj_bytes + sc->off + (vaddr - sc->addr), len);
			return 0;
		}
	}
	return -1;
}

const char *symbols_call_name(struct dso *d, uint64_t vaddr, int slot)
{
	size_t lo = 0, hi;

	if (!d->slots_state)
		slots_load(d);
	if (d->slots_state < 0)
		return NULL;
	if (!slot) {
		/* A PLT entry jumps through its slot: jmp *disp32(%rip), after
		 * an endbr64 and a bnd prefix where the object has them. */
		unsigned char b[11];
		int32_t disp;
		size_t p = 0;

		if (object_read_vaddr(d, vaddr, b, sizeof(b)))
			return NULL;
		if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
			p = 4;
		if (b[p] == 0xf2)
			p++;
		if (b[p] != 0xff || b[p + 1] != 0x25)
			return NULL;
		memcpy(&disp, b + p + 2, 4);
		vaddr += p + 6 + (int64_t)disp;
	}
	hi = d->nr_slots;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->slots[mid].vaddr == vaddr)
			return d->slots[mid].name;
		if (d->slots[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int symbols_object_bias(struct dso *d, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	if (!symbols_object(d))
		return -1;
	for (size_t i = 0; i < d->nr_obj_loads; i++) {
		const struct dso_load *l = &d->obj_loads[i];
		uint64_t lo = l->off & ~4095ull;

		/* Mappings start at page boundaries, segments need not. */
		if (pgoff >= lo && pgoff < l->off + (l->size ? l->size : 1)) {
			*bias = start - pgoff - (l->vaddr - l->off);
			return 0;
		}
	}
	return -1;
}

