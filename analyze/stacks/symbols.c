/*
 * analyze/stacks/symbols.c: objects by build-id, libdw symbolization, kernel
 * symbols.
 *
 * Each object gets its own offline Dwfl: libdw then finds separate debug
 * files by build-id under /usr/lib/debug and reads .symtab, .dynsym or
 * .gnu_debugdata, whichever the object has. Lookups are by the ELF virtual
 * address the file offset falls in, through the object's PT_LOAD headers.
 * Separate Dwfls are what lets the loader thread work on one object while
 * the main thread uses the others.
 */
#include "symbols.h"

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

/* From libstdc++: C++ names are shown demangled. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* The debuginfod client is shared by the loader thread and the main one,
 * and is not for two threads at once. */
static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;

struct dso_loader {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int quit;
	/* In order: an object to load, or an address of one to name. */
	struct load_job { struct dso *d; uint64_t off; unsigned char name, ret; } *queue;
	size_t head, nr, alloc;
};

static void dso_load(struct dso *d);

/*
 * The address ranges of a CU's top-level DIEs, sorted, made on the CU's
 * first lookup. dwarf_getscopes walks every top-level DIE of the CU on
 * every call, and a big CU (glibc's malloc.c, rtld.c) has thousands of
 * them: over a hundred microseconds an address. With this the walk is
 * once per CU, and each address descends only into the function that
 * holds it.
 */
struct cu_scopes {
	struct cu_range {
		uint64_t lo, hi;
		uint32_t order; /* the DIE's place among its siblings */
		Dwarf_Die die;
	} *v;
	size_t n;
	uint64_t longest;
};
static void dso_name_ahead(struct dso *d, uint64_t off, int ret);

static void *loader_run(void *arg)
{
	struct dso_loader *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct load_job j;

		while (l->head == l->nr && !l->quit)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->quit)
			break;
		j = l->queue[l->head++];
		/* A job for an object the main thread took back is dropped. */
		if (j.d->load != (j.name ? LOAD_READY : LOAD_QUEUED))
			continue;
		j.d->load = LOAD_BUSY;
		pthread_mutex_unlock(&l->mu);
		if (j.name) {
			dso_name_ahead(j.d, j.off, j.ret);
		} else {
			dso_load(j.d);
			if (j.d->state == DSO_OK) {
				Dwarf_Addr bias;

				dwfl_module_getsymtab(j.d->mod);
				if (j.d->dwarf)
					dwfl_module_getdwarf(j.d->mod, &bias);
			}
		}
		pthread_mutex_lock(&l->mu);
		j.d->load = LOAD_READY;
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void loader_push(struct dso_loader *l, struct load_job j)
{
	pthread_mutex_lock(&l->mu);
	if (l->nr == l->alloc) {
		size_t a = l->alloc ? l->alloc * 2 : 64;
		struct load_job *q = realloc(l->queue, a * sizeof(*q));

		if (!q) {
			/* Not queued: the main thread does it when it needs it. */
			pthread_mutex_unlock(&l->mu);
			return;
		}
		l->queue = q;
		l->alloc = a;
	}
	l->queue[l->nr++] = j;
	if (!j.name)
		j.d->load = LOAD_QUEUED;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void symbols_prefetch(struct symbols *s, struct dso *d, int dwarf)
{
	struct dso_loader *l = s->loader;

	/* Queued ones have a loader until they are settled; this thread alone
	 * writes that field, so it is read without the lock. */
	if (!d || d->loader || d->load != LOAD_IDLE || d->state != DSO_UNLOADED)
		return;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return;
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		if (pthread_create(&l->thread, NULL, loader_run, l)) {
			pthread_mutex_destroy(&l->mu);
			pthread_cond_destroy(&l->cv);
			free(l);
			return;
		}
		s->loader = l;
	}
	d->loader = l;
	d->dwarf = dwarf;
	loader_push(l, (struct load_job){ .d = d });
}

void symbols_prefetch_name(struct dso *d, uint64_t off, int ret)
{
	struct hm_slot *slot;
	int created;

	if (!d || !d->loader)
		return;
	/* Each address once: the loader thread's cache is not this thread's
	 * to look in. */
	slot = hashmap_u64(&d->asked, off << 1 | !!ret, &created);
	if (!slot || !created)
		return;
	slot->ptr = d;
	loader_push(d->loader, (struct load_job){ .d = d, .off = off, .name = 1, .ret = !!ret });
}

/* Make d this thread's: wait while the loader works on it, or take it
 * back when the loader has not started it yet. */
static void dso_settle(struct dso *d)
{
	struct dso_loader *l = d->loader;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	while (d->load == LOAD_BUSY)
		pthread_cond_wait(&l->cv, &l->mu);
	d->load = LOAD_DONE;
	d->loader = NULL;
	pthread_mutex_unlock(&l->mu);
	hashmap_release(&d->asked);
}

static void loader_stop(struct dso_loader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->queue);
	free(l);
}

void symbols_init(struct symbols *s)
{
	memset(s, 0, sizeof(*s));
	hashmap_init(&s->dsos, 1);
	elf_version(EV_CURRENT);
}

static void dso_free(struct dso *d)
{
	hashmap_for_each(&d->cache, slot) {
		struct sym_hit *h = slot->ptr;

		if (h) {
			free(h->demangled);
			for (int i = 0; i < h->nr_inline; i++)
				free((char *)h->inl[i].name);
			free(h->inl);
		}
		free(h);
	}
	hashmap_release(&d->cache);
	hashmap_for_each(&d->intervals, slot) free(slot->ptr);
	hashmap_release(&d->intervals);
	free(d->bounds);
	hashmap_release(&d->asked);
	hashmap_for_each(&d->cus, slot) {
		struct cu_scopes *c = slot->ptr;

		if (c)
			free(c->v);
		free(c);
	}
	hashmap_release(&d->cus);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->loads);
	free(d->path);
	free(d->used);
	if (d->obj_bytes)
		munmap((void *)d->obj_bytes, d->obj_size);
	free(d->obj_path);
	free(d->obj_loads);
	free(d->obj_sects);
	for (size_t i = 0; i < d->nr_slots; i++)
		free(d->slots[i].name);
	free(d->slots);
	free(d);
}

void symbols_release(struct symbols *s)
{
	loader_stop(s->loader);
	hashmap_for_each(&s->dsos, slot) dso_free(slot->ptr);
	hashmap_release(&s->dsos);
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		free(s->ksyms[i].name);
		free(s->ksyms[i].module);
	}
	free(s->ksyms);
}

void symbols_build_id_hex(const unsigned char *bid, int len, char *out)
{
	int i;

	for (i = 0; i < len && i < 20; i++)
		sprintf(out + 2 * i, "%02x", bid[i]);
	out[2 * i] = 0;
}

struct dso *symbols_dso(struct symbols *s, const char *path, const unsigned char *bid, int bid_len)
{
	char key[4200];
	struct hm_slot *slot;
	struct dso *d;
	int created;

	if (bid_len > 0) {
		strcpy(key, "b:");
		symbols_build_id_hex(bid, bid_len, key + 2);
	} else {
		snprintf(key, sizeof(key), "p:%s", path);
	}
	slot = hashmap_str(&s->dsos, key, &created);
	if (!slot)
		return NULL;
	if (!created)
		return slot->ptr;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		slot->ptr = NULL;
		return NULL;
	}
	d->short_name = strrchr(d->path, '/') ? strrchr(d->path, '/') + 1 : d->path;
	if (bid_len > 0) {
		d->bid_len = bid_len > 20 ? 20 : bid_len;
		memcpy(d->build_id, bid, d->bid_len);
	}
	hashmap_init(&d->cache, 0);
	hashmap_init(&d->intervals, 0);
	hashmap_init(&d->asked, 0);
	hashmap_init(&d->cus, 0);
	slot->ptr = d;
	return d;
}

static char **debug_dirs;
static size_t nr_debug_dirs;
static char *sysroot;
/* Only the trace's own objects and the directories given: nothing of
 * this machine's (symbols_hermetic). */
static int hermetic;
/* Set by --debuginfod: asked only for what no local file provides. The
 * client library is loaded then, not at every start: it brings libcurl
 * and its TLS stack, a few milliseconds of relocations for every run. */
static debuginfod_client *dbgd;
static struct {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
} dbgd_fn;

int symbols_debuginfod_set(const char *urls)
{
	void *lib;

	if (!urls || !*urls)
		return -EINVAL;
	/* The client reads its servers from the environment. */
	if (setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1))
		return -ENOMEM;
	if (dbgd)
		return 0;
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
	dbgd = dbgd_fn.begin();
	return dbgd ? 0 : -ENOMEM;
}

/* The debuginfod cache's copy of d's executable or debug file, by build-id
 * (malloc'd), or NULL. The caller still checks the build-id. */
static char *debuginfod_fetch(const struct dso *d, int executable)
{
	char *path = NULL;
	int fd;

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

void symbols_hermetic(void)
{
	hermetic = 1;
}

int symbols_sysroot_set(const char *dir)
{
	free(sysroot);
	sysroot = strdup(dir);
	return sysroot ? 0 : -ENOMEM;
}

/* Objects embedded in the trace: handed to libdw and libunwind as files,
 * so each is decompressed once, straight into a memfd, when first needed.
 * Each has its own lock: the loader thread decoding libc's debug entry
 * must not hold up the main thread that needs libc's unwind tables. The
 * table is complete before either thread looks in it. */
struct embedded {
	pthread_mutex_t mu;	/* held while fd is made */
	unsigned char bid[20];
	int bid_len, mode, fd;
	char *path;
	const struct trace_reader *r;
	size_t chunk;
	uint64_t skip;		/* payload bytes before the ELF */
	size_t len;		/* of the ELF */
	uint64_t original_size;
};
static struct embedded **embedded;
static size_t nr_embedded;

int symbols_embedded_ref(const struct trace_reader *r, size_t chunk)
{
	unsigned char p[34];
	struct embedded **v, *e;
	uint32_t raw = r->chunks[chunk].raw_len;
	uint16_t pl;
	char err[256];

	if (raw < sizeof(p) || trace_chunk_read(r, chunk, 0, p, sizeof(p), err, sizeof(err)) < 0 || p[0] != 1 ||
	    p[1] < EMBED_MINIMAL || p[1] > EMBED_DEBUG || p[2] > 20)
		return -EINVAL;
	memcpy(&pl, p + 32, 2);
	if (34 + (size_t)pl > raw)
		return -EINVAL;
	v = realloc(embedded, (nr_embedded + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	embedded = v;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->mu, NULL);
	e->mode = p[1];
	e->bid_len = p[2];
	memcpy(e->bid, p + 4, 20);
	memcpy(&e->original_size, p + 24, 8);
	e->fd = -1;
	e->r = r;
	e->chunk = chunk;
	e->skip = 34 + pl;
	e->len = raw - e->skip;
	e->path = malloc(pl + 1);
	if (!e->path || trace_chunk_read(r, chunk, 34, e->path, pl, err, sizeof(err)) < 0) {
		int ret = e->path ? -EINVAL : -ENOMEM;

		free(e->path);
		pthread_mutex_destroy(&e->mu);
		free(e);
		return ret;
	}
	e->path[pl] = 0;
	embedded[nr_embedded++] = e;
	return 0;
}

static int fd_write_all(void *arg, const void *buf, size_t n)
{
	const unsigned char *p = buf;
	int fd = *(int *)arg;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* e's file in the cache, named by what makes its bytes: build-id, mode,
 * the stored chunk's CRC and the ELF's length. */
static int cache_name(const struct embedded *e, char *buf, size_t len)
{
	char dir[PATH_MAX], hex[41];
	int n;

	if (cache_dir(dir, sizeof(dir)))
		return -1;
	symbols_build_id_hex(e->bid, e->bid_len, hex);
	n = snprintf(buf, len, "%s/%s-%d-%08x-%zu.elf", dir, hex, e->mode, e->r->chunks[e->chunk].crc, e->len);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Decompress e's ELF, a piece at a time through write(): neither page
 * faults nor a populating mmap, which holds the address space's lock and
 * stalls the other thread's mmap and faults for as long as it runs. Into
 * the cache when there is one (the next run of any command on this trace,
 * or another with the same object, opens it instead of decoding: 8.7 MB
 * for libc's debug entry), else into a memfd. One that fails is not tried
 * again (fd -2). */
static int embedded_open(struct embedded *e)
{
	char name[PATH_MAX], tmp[PATH_MAX + 32], err[256];
	int fd, cached = e->fd != -2 && !cache_name(e, name, sizeof(name));
	struct stat st;

	if (e->fd == -2)
		return -1;
	e->fd = -2;
	if (cached) {
		fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size == e->len) {
			e->fd = fd;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		snprintf(tmp, sizeof(tmp), "%s.%d.%lx", name, (int)getpid(), (unsigned long)pthread_self());
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		cached = fd >= 0;
	}
	if (cached && trace_chunk_stream(e->r, e->chunk, e->skip, e->len, fd_write_all, &fd, err, sizeof(err)) < 0) {
		/* A full disk, say: the memfd below does without the cache. */
		close(fd);
		unlink(tmp);
		cached = 0;
	}
	if (!cached) {
		fd = memfd_create("memsight-object", MFD_CLOEXEC);
		if (fd < 0)
			return -1;
		if (trace_chunk_stream(e->r, e->chunk, e->skip, e->len, fd_write_all, &fd, err, sizeof(err)) < 0) {
			close(fd);
			return -1;
		}
	}
	/* Complete: only now under its name, so no reader sees it half made. */
	if (cached && rename(tmp, name))
		unlink(tmp);
	e->fd = fd;
	return 0;
}

void symbols_embedded_release(void)
{
	for (size_t i = 0; i < nr_embedded; i++) {
		struct embedded *e = embedded[i];

		if (e->fd >= 0)
			close(e->fd);
		pthread_mutex_destroy(&e->mu);
		free(e->path);
		free(e);
	}
	free(embedded);
	embedded = NULL;
	nr_embedded = 0;
}

int symbols_embedded_get(size_t i, struct embedded_info *out)
{
	if (i >= nr_embedded)
		return -1;
	*out = (struct embedded_info){ embedded[i]->path, embedded[i]->bid, embedded[i]->bid_len, embedded[i]->mode,
				       embedded[i]->len, embedded[i]->original_size };
	return 0;
}

/* The trace's entry for d in one of the modes of the mask (1 << mode),
 * as a path; returns its mode, or 0 when there is none. */
static int embedded_path(const struct dso *d, unsigned modes, char *buf, size_t len)
{
	for (size_t i = 0; d->bid_len && i < nr_embedded; i++) {
		struct embedded *e = embedded[i];
		int fd;

		if (e->bid_len != d->bid_len || memcmp(e->bid, d->build_id, e->bid_len) || !(modes & (1u << e->mode)))
			continue;
		pthread_mutex_lock(&e->mu);
		if (e->fd < 0)
			embedded_open(e);
		fd = e->fd;
		pthread_mutex_unlock(&e->mu);
		if (fd < 0)
			return 0;
		snprintf(buf, len, "/proc/self/fd/%d", fd);
		return e->mode;
	}
	return 0;
}

int symbols_debug_dir_add(const char *dir)
{
	char **v = realloc(debug_dirs, (nr_debug_dirs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	debug_dirs = v;
	debug_dirs[nr_debug_dirs] = strdup(dir);
	return debug_dirs[nr_debug_dirs++] ? 0 : -ENOMEM;
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
	int n;

	if (access(path, R_OK))
		return DSO_MISSING;
	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl)
		return DSO_MISSING;
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, d->short_name, path, -1, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
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
		int fd = open(d->path, O_RDONLY | O_CLOEXEC);
		Elf *orig = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
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
		if (fd >= 0)
			close(fd);
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
	const char *home = getenv("HOME");
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
	if (sysroot)
		ADD("%s%s", sysroot, d->path);
	if (!d->bid_len) {
		if (!hermetic)
			ADD("%s", d->path);
		return n;
	}
	symbols_build_id_hex(d->build_id, d->bid_len, hex);
	snprintf(home_debug, sizeof(home_debug), "%s/.debug", home && home[0] ? home : "/root");
	for (size_t i = 0; i < nr_debug_dirs + !hermetic; i++) {
		const char *dir = i < nr_debug_dirs ? debug_dirs[i] : home_debug;

		if (what == FOR_SYMBOLS)
			ADD("%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
		ADD("%s/.build-id/%.2s/%s", dir, hex, hex + 2);
		ADD("%s/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
		if (what == FOR_SYMBOLS)
			ADD("%s/.build-id/%.2s/%s/debug", dir, hex, hex + 2);
	}
	if (what == FOR_SYMBOLS && !hermetic)
		ADD("/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (!hermetic)
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

static void dso_load(struct dso *d)
{
	char cands[MAX_CANDS][PATH_MAX];
	int n = dso_candidates(d, FOR_SYMBOLS, cands, MAX_CANDS), mismatch = 0;
	enum dso_state st = DSO_MISSING;

	d->state = DSO_MISSING;
	for (int i = 0; i < n; i++) {
		if (!is_file(cands[i]))
			continue;
		st = dso_try(d, cands[i]);
		if (st == DSO_OK) {
			d->state = st;
			return;
		}
		mismatch |= st == DSO_MISMATCH;
	}
	/* Over the network last: the debug file first, for inlined frames
	 * and lines, then the executable's symbol tables. */
	for (int exe = 0; dbgd && exe < 2; exe++) {
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
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
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

static int vaddr_of(const struct dso *d, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < d->nr_loads; i++) {
		const struct dso_load *l = &d->loads[i];

		if (off >= l->off && off < l->off + l->size) {
			*vaddr = off - l->off + l->vaddr;
			return 0;
		}
	}
	return -1;
}

/* The cache entry for an ELF address of d, made on first use; NULL when
 * out of memory. */
struct sym_interval {
	const char *name;	 /* libdwfl's, NULL when none */
	uint64_t start;		 /* the symbol's value */
};

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void bounds_push(struct dso *d, size_t *alloc, uint64_t v)
{
	if (d->nr_bounds == *alloc) {
		size_t n = *alloc ? 2 * *alloc : 1024;
		uint64_t *b = realloc(d->bounds, n * sizeof(*b));

		if (!b) {
			d->bounds_state = -1;
			return;
		}
		d->bounds = b;
		*alloc = n;
	}
	d->bounds[d->nr_bounds++] = v;
}

/* libdwfl picks the symbol for an address by comparing it with symbol
 * starts, symbol ends and the bounds of the section that holds it, and
 * nothing else: so every such address, in libdwfl's own coordinates. */
static void bounds_make(struct dso *d)
{
	int n = dwfl_module_getsymtab(d->mod);
	size_t alloc = 0, k = 0;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(d->mod, &bias);
	Elf_Scn *scn = NULL;

	d->bounds_state = 1;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;

		if (dwfl_module_getsym_info(d->mod, i, &sym, &a, NULL, NULL, NULL)) {
			bounds_push(d, &alloc, a);
			bounds_push(d, &alloc, a + sym.st_size);
		}
	}
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC)) {
			bounds_push(d, &alloc, sh.sh_addr + bias);
			bounds_push(d, &alloc, sh.sh_addr + sh.sh_size + bias);
		}
	}
	if (n <= 0 || d->bounds_state < 0 || d->nr_bounds < 2) {
		free(d->bounds);
		d->bounds = NULL;
		d->nr_bounds = 0;
		d->bounds_state = -1;
		return;
	}
	if (d->nr_bounds > 1)
		qsort(d->bounds, d->nr_bounds, sizeof(*d->bounds), u64_cmp);
	for (size_t i = 1; i < d->nr_bounds; i++)
		if (d->bounds[i] != d->bounds[k])
			d->bounds[++k] = d->bounds[i];
	d->nr_bounds = k + 1;
}

/* libdwfl's symbol for look, asked once per interval between bounds. */
static const char *interval_sym(struct dso *d, uint64_t look, uint64_t *start)
{
	size_t lo = 0, hi;
	uint64_t rep;
	struct hm_slot *slot;
	struct sym_interval *iv;
	int created;

	if (!d->bounds_state)
		bounds_make(d);
	if (d->bounds_state < 0 || look < d->bounds[0] || look >= d->bounds[d->nr_bounds - 1])
		goto direct;
	/* The last bound at or below look. */
	hi = d->nr_bounds - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->bounds[mid] <= look)
			lo = mid;
		else
			hi = mid;
	}
	/* A bound itself is an interval of its own: an absolute symbol
	 * names only the address equal to its value. */
	rep = look == d->bounds[lo] ? look : d->bounds[lo] + 1;
	slot = hashmap_u64(&d->intervals, 2 * lo + 1 + (rep != look), &created);
	if (!slot)
		goto direct;
	if (created) {
		GElf_Sym sym;
		GElf_Off o = 0;

		iv = calloc(1, sizeof(*iv));
		slot->ptr = iv;
		if (!iv)
			goto direct;
		iv->name = dwfl_module_addrinfo(d->mod, rep, &o, &sym, NULL, NULL, NULL);
		iv->start = rep - o;
	}
	iv = slot->ptr;
	if (!iv)
		goto direct;
	*start = iv->start;
	return iv->name;
direct: {
	GElf_Sym sym;
	GElf_Off o = 0;
	const char *name = dwfl_module_addrinfo(d->mod, look, &o, &sym, NULL, NULL, NULL);

	*start = look - o;
	return name;
}
}

/* MEMSIGHT_SYMBOL_CHECK=1: every lookup asked of libdwfl as well. */
static int symbol_check = -1;
static uint64_t symbol_checked, symbol_differ;

static struct sym_hit *dso_hit(struct dso *d, uint64_t look)
{
	struct hm_slot *slot;
	struct sym_hit *hit;
	int created;

	slot = hashmap_u64(&d->cache, look, &created);
	if (!slot)
		return NULL;
	if (created) {
		GElf_Sym sym;
		GElf_Off o = 0;
		const char *name;

		hit = calloc(1, sizeof(*hit));
		slot->ptr = hit;
		if (!hit)
			return NULL;
		hit->nr_inline = -1;
		name = interval_sym(d, look, &hit->start);
		if (symbol_check < 0) {
			const char *e = getenv("MEMSIGHT_SYMBOL_CHECK");

			symbol_check = e && *e == '1';
		}
		if (symbol_check) {
			const char *want = dwfl_module_addrinfo(d->mod, look, &o, &sym, NULL, NULL, NULL);

			__atomic_add_fetch(&symbol_checked, 1, __ATOMIC_RELAXED);
			if ((!want != !name) || (want && (strcmp(want, name) || hit->start != look - o)))
				__atomic_add_fetch(&symbol_differ, 1, __ATOMIC_RELAXED);
		}
		hit->name = name;
		if (name && name[0] == '_' && name[1] == 'Z') {
			int status = -1;
			char *dm = __cxa_demangle(name, NULL, NULL, &status);

			/* Kept for the life of the cache. */
			if (dm && !status)
				hit->name = hit->demangled = dm;
			else
				free(dm);
		}
	}
	return slot->ptr;
}

/* The ELF address of file offset off in a loaded d, and the one to look
 * up: a return address one byte earlier, so that a call at a function's
 * end is named right. 0, or -1 when d has no name for it. */
static int dso_addr(const struct dso *d, uint64_t off, int ret, uint64_t *vaddr, uint64_t *look)
{
	if (d->state != DSO_OK || vaddr_of(d, off, vaddr))
		return -1;
	*look = ret && *vaddr ? *vaddr - 1 : *vaddr;
	return 0;
}

static void hit_inline(struct dso *d, struct sym_hit *hit, uint64_t look);

/* The loader thread's share of naming: fill d's cache for an address the
 * stacks hold, as symbols_lookup and symbols_inline would, counting
 * nothing (the counts are per frame, made when frames are named). */
static void dso_name_ahead(struct dso *d, uint64_t off, int ret)
{
	uint64_t vaddr, look;
	struct sym_hit *hit;

	if (dso_addr(d, off, ret, &vaddr, &look))
		return;
	hit = dso_hit(d, look);
	if (hit && hit->name && d->dwarf)
		hit_inline(d, hit, look);
}

const char *symbols_lookup(struct dso *d, uint64_t off, int ret, uint64_t *symoff)
{
	uint64_t vaddr, look;
	struct sym_hit *hit;

	*symoff = off;
	dso_settle(d);
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (dso_addr(d, off, ret, &vaddr, &look)) {
		d->unresolved++;
		return NULL;
	}
	hit = dso_hit(d, look);
	if (!hit || !hit->name) {
		d->unresolved++;
		return NULL;
	}
	*symoff = vaddr - hit->start;
	return hit->name;
}

static char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	const char *name = NULL;
	char *dm;
	int status = -1;

	/* An inlined instance names its function through abstract_origin;
	 * prefer the linkage name so C++ shows with its signature. */
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		name = dwarf_formstring(&a);
	if (!name)
		name = dwarf_diename(die);
	if (!name && dwarf_attr(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
		name = dwarf_diename(&origin);
	if (!name)
		return strdup("[inlined]");
	if (name[0] == '_' && name[1] == 'Z' && (dm = __cxa_demangle(name, NULL, NULL, &status)) && !status)
		return dm;
	return strdup(name);
}

int symbols_inline(struct dso *d, uint64_t off, int ret, const struct sym_inline **out)
{
	uint64_t vaddr, look;
	struct hm_slot *slot;
	struct sym_hit *hit;

	/* Callers name the frame first: its cache entry is there. */
	*out = NULL;
	dso_settle(d);
	if (dso_addr(d, off, ret, &vaddr, &look))
		return 0;
	slot = hashmap_u64_find(&d->cache, look);
	hit = slot ? slot->ptr : NULL;
	if (!hit || !hit->name)
		return 0;
	hit_inline(d, hit, look);
	*out = hit->inl;
	return hit->nr_inline;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static struct cu_scopes *cu_scopes_of(struct dso *d, Dwarf_Die *cu)
{
	struct hm_slot *slot;
	struct cu_scopes *c;
	Dwarf_Die die;
	size_t alloc = 0;
	uint32_t order = 0;
	int created;

	slot = hashmap_u64(&d->cus, dwarf_dieoffset(cu), &created);
	if (!slot)
		return NULL;
	if (!created)
		return slot->ptr;
	c = slot->ptr = calloc(1, sizeof(*c));
	if (!c || dwarf_child(cu, &die) != 0)
		return c;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
			if (c->n == alloc) {
				struct cu_range *v = realloc(c->v, (alloc = alloc ? 2 * alloc : 64) * sizeof(*v));

				if (!v)
					return c;
				c->v = v;
			}
			c->v[c->n++] = (struct cu_range){ lo, hi, order, die };
			if (hi - lo > c->longest)
				c->longest = hi - lo;
		}
		order++;
	} while (dwarf_siblingof(&die, &die) == 0);
	if (c->n > 1)
		qsort(c->v, c->n, sizeof(*c->v), range_cmp);
	return c;
}

/*
 * The DIEs that hold pc, outermost first, as dwarf_getscopes finds them
 * (innermost first there): the first top-level DIE whose ranges hold it,
 * then at each level the first child that does. Returns how many, at most
 * max.
 */
static int cu_scopes_find(struct dso *d, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *path, int max)
{
	struct cu_scopes *c = cu_scopes_of(d, cu);
	const struct cu_range *best = NULL;
	size_t lo = 0, hi;
	int n = 0;

	if (!c || !c->n || max < 1)
		return 0;
	/* The last range starting at or below pc, then back over those that
	 * could still reach it. */
	for (hi = c->n; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && pc - c->v[i].lo < c->longest;)
		if (pc < c->v[i].hi && (!best || c->v[i].order < best->order))
			best = &c->v[i];
	if (!best)
		return 0;
	path[n++] = best->die;
	while (n < max) {
		Dwarf_Die child;
		int found = 0;

		if (dwarf_child(&path[n - 1], &child) != 0)
			break;
		do {
			if (dwarf_haspc(&child, pc) > 0) {
				path[n++] = child;
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

static void hit_inline(struct dso *d, struct sym_hit *hit, uint64_t look)
{
	Dwarf_Die *cu, scopes[64];
	Dwarf_Addr bias;
	int n;

	if (hit->nr_inline >= 0)
		return;
	hit->nr_inline = 0;
	cu = dwfl_module_addrdie(d->mod, look, &bias);
	n = cu ? cu_scopes_find(d, cu, look - bias, scopes, 64) : 0;
	/* Innermost first. */
	for (int i = 0; i < n / 2; i++) {
		Dwarf_Die t = scopes[i];

		scopes[i] = scopes[n - 1 - i];
		scopes[n - 1 - i] = t;
	}
	if (n > 0) {
		hit->inl = calloc(n, sizeof(*hit->inl));
		for (int i = 0; hit->inl && i < n; i++) {
			Dwarf_Files *files;
			Dwarf_Word v;
			Dwarf_Attribute a;
			struct sym_inline *si;

			if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
				continue;
			si = &hit->inl[hit->nr_inline++];
			si->name = die_function_name(&scopes[i]);
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0)
				si->call_line = v;
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0 &&
			    dwarf_getsrcfiles(cu, &files, NULL) == 0)
				si->call_file = dwarf_filesrc(files, v, NULL, NULL);
		}
	}
}

int symbols_srcline(struct dso *d, uint64_t off, int ret, const char **file, int *line)
{
	uint64_t vaddr, look;
	Dwfl_Line *l;

	dso_settle(d);
	if (d->state == DSO_UNLOADED)
		dso_load(d);
	if (dso_addr(d, off, ret, &vaddr, &look))
		return -1;
	l = dwfl_module_getsrc(d->mod, look);
	if (!l)
		return -1;
	*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return *file ? 0 : -1;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int symbols_ksyms_load(struct symbols *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t alloc = s->nr_ksyms;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		char line[512], name[256], mod[128] = "", type;
		unsigned long long addr;
		size_t n = le - p < (long)sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;

		memcpy(line, p, n);
		line[n] = 0;
		p = le + 1;
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod) < 3)
			continue;
		if (s->nr_ksyms == alloc) {
			struct ksym *k = realloc(s->ksyms, (alloc = alloc ? alloc * 2 : 256) * sizeof(*k));

			if (!k)
				return -ENOMEM;
			s->ksyms = k;
		}
		s->ksyms[s->nr_ksyms].addr = addr;
		s->ksyms[s->nr_ksyms].name = strdup(name);
		s->ksyms[s->nr_ksyms].module = mod[0] ? strdup(mod) : NULL;
		s->nr_ksyms++;
	}
	if (s->nr_ksyms > 1)
		qsort(s->ksyms, s->nr_ksyms, sizeof(*s->ksyms), ksym_cmp);
	return 0;
}

const char *symbols_ksym(const struct symbols *s, uint64_t addr, uint64_t *symoff)
{
	size_t lo = 0, hi = s->nr_ksyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*symoff = addr - s->ksyms[lo - 1].addr;
	return s->ksyms[lo - 1].name;
}

void symbols_report_unresolved(struct symbols *s, FILE *f)
{
	if (symbol_check > 0)
		fprintf(f, "memsight: symbol check: %llu of %llu lookups differ from libdwfl's own\n",
			(unsigned long long)symbol_differ, (unsigned long long)symbol_checked);
	hashmap_for_each(&s->dsos, slot) {
		struct dso *d = slot->ptr;
		char hex[41] = "";

		if (!d || !d->unresolved)
			continue;
		dso_settle(d);
		symbols_build_id_hex(d->build_id, d->bid_len, hex);
		switch (d->state) {
		case DSO_MISSING:
			fprintf(f, "memsight: %llu frames unnamed in '%s' (build-id %s): the file is not on this "
				   "machine%s; copy it to the same path%s\n",
				(unsigned long long)d->unresolved, d->path, hex[0] ? hex : "none",
				dbgd ? " nor on the debuginfod servers" : "",
				!hex[0] ? "" : dbgd ? " or install its debug file under /usr/lib/debug/.build-id/"
				: ", install its debug file under /usr/lib/debug/.build-id/, or add --debuginfod");
			break;
		case DSO_MISMATCH:
			fprintf(f, "memsight: %llu frames unnamed in '%s': the file here has another build-id than "
				   "the recorded %s%s; install the recorded version or its debug file "
				   "/usr/lib/debug/.build-id/%.2s/%s.debug%s\n",
				(unsigned long long)d->unresolved, d->path, hex,
				dbgd ? ", and the debuginfod servers have neither" : "", hex, hex + 2,
				dbgd ? "" : ", or add --debuginfod");
			break;
		case DSO_NOTELF:
			fprintf(f, "memsight: %llu frames unnamed in '%s': not an ELF object here\n",
				(unsigned long long)d->unresolved, d->path);
			break;
		default:
			break;
		}
	}
}
