/*
 * record/sampler/wrap.c: the allocation functions a program calls, in
 * front of the allocator the process runs.
 *
 * Each wrapper hands its call to the next definition of its function
 * after this library in the process's search order, as the program would
 * have reached it without the preload: glibc's malloc, or jemalloc,
 * tcmalloc or mimalloc, preloaded or linked in. So no block changes hands
 * between allocators, and any of them is seen. The next definitions are
 * found at the first call, before any block is handed out, in the loaded
 * objects' dynamic symbol tables, with nothing allocated. The C family,
 * jemalloc's *allocx, and C++'s operators new and delete are wrapped. The
 * operators are seen here only where an allocator defines them (jemalloc,
 * tcmalloc and mimalloc implement them apart from malloc and free); where
 * libstdc++ does, the wrapper jumps to it without a frame of its own, and
 * its calls of malloc and free are what is seen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "sampler.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* The functions wrapped, by their symbols; C++'s in formats/allocfns.h's
 * order of them. */
enum {
	F_MALLOC, F_FREE, F_CALLOC, F_REALLOC, F_REALLOCARRAY, F_MEMALIGN, F_ALIGNED_ALLOC, F_POSIX_MEMALIGN,
	F_VALLOC, F_PVALLOC, F_MALLOCX, F_RALLOCX, F_DALLOCX, F_SDALLOCX, F_USABLE_SIZE,
	F_NEW, F_NEW_ARRAY, F_NEW_NOTHROW, F_NEW_ARRAY_NOTHROW, F_NEW_ALIGNED, F_NEW_ARRAY_ALIGNED,
	F_NEW_ALIGNED_NOTHROW, F_NEW_ARRAY_ALIGNED_NOTHROW,
	F_DELETE, F_DELETE_ARRAY, F_DELETE_SIZED, F_DELETE_ARRAY_SIZED, F_DELETE_NOTHROW, F_DELETE_ARRAY_NOTHROW,
	F_DELETE_ALIGNED, F_DELETE_ARRAY_ALIGNED, F_DELETE_SIZED_ALIGNED, F_DELETE_ARRAY_SIZED_ALIGNED,
	F_DELETE_ALIGNED_NOTHROW, F_DELETE_ARRAY_ALIGNED_NOTHROW,
	F_NR,
	F_CXX_FIRST = F_NEW,
};

static const char *const fn_names[F_NR] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc", "posix_memalign",
	"valloc", "pvalloc", "mallocx", "rallocx", "dallocx", "sdallocx", "malloc_usable_size",
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
	"_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

struct next_defs {
	uintptr_t fn[F_NR];	/* the next definition; 0: none */
	unsigned char seen[F_NR]; /* C++'s: defined by an allocator, which implements it apart from malloc */
};

/* Until they are found, the four that every program calls most go
 * through a function that finds them: so their wrappers need not look. */
static void *first_malloc(size_t size);
static void first_free(void *p);
static void *first_calloc(size_t n, size_t size);
static void *first_realloc(void *p, size_t size);
static struct next_defs next = { .fn = {
	[F_MALLOC] = (uintptr_t)first_malloc, [F_FREE] = (uintptr_t)first_free,
	[F_CALLOC] = (uintptr_t)first_calloc, [F_REALLOC] = (uintptr_t)first_realloc,
} };
static int next_state;		/* 0, 1 while being found, 2 found */
static const char *self_path = "";

/* The address of a function name defines in the object of a dynamic
 * section, through its GNU hash table; 0 when it defines none. Addresses
 * in the section are absolute once the loader relocated them (not the
 * vDSO's). */
static uintptr_t dyn_lookup(uintptr_t base, const ElfW(Dyn) *dyn, const char *name)
{
	const uint32_t *gnu = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	uint32_t h = 5381, nb, symoff, bloom, ix;
	const uint32_t *buckets, *chain;

	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;

		if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)v;
		else if (dyn->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)v;
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)v;
	}
	if (!gnu || !symtab || !strtab)
		return 0;
	for (const char *c = name; *c; c++)
		h = h * 33 + (unsigned char)*c;
	nb = gnu[0];
	symoff = gnu[1];
	bloom = gnu[2];
	buckets = gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
	chain = buckets + nb;
	if (!nb || (ix = buckets[h % nb]) < symoff)
		return 0;
	for (;; ix++) {
		const ElfW(Sym) *sym = &symtab[ix];
		uint32_t hh = chain[ix - symoff];

		if ((hh | 1) == (h | 1) && !strcmp(strtab + sym->st_name, name) && sym->st_shndx != SHN_UNDEF &&
		    sym->st_value && (ELF64_ST_TYPE(sym->st_info) == STT_FUNC || ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC))
			return ELF64_ST_TYPE(sym->st_info) == STT_GNU_IFUNC ? 0 : base + sym->st_value;
		if (hh & 1)
			return 0;
	}
}

struct visit {
	int after_self;
	struct next_defs *found;
};

/* An object's dynamic section (NULL when it has none); *self says whether
 * the object is this library. */
static const ElfW(Dyn) *object_dynamic(const struct dl_phdr_info *info, int *self)
{
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t base = info->dlpi_addr, here = (uintptr_t)&object_dynamic;

	*self = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
		if (ph->p_type == PT_LOAD && here >= base + ph->p_vaddr && here < base + ph->p_vaddr + ph->p_memsz)
			*self = 1;
	}
	return dyn;
}

static int visit_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct visit *v = arg;
	uintptr_t base = info->dlpi_addr;
	int allocator = -1, self;
	const ElfW(Dyn) *dyn = object_dynamic(info, &self);

	(void)size;
	if (self) {
		v->after_self = 1;
		self_path = info->dlpi_name;
		return 0;
	}
	if (!v->after_self || !dyn)
		return 0;
	for (int f = 0; f < F_NR; f++) {
		if (v->found->fn[f] || !(v->found->fn[f] = dyn_lookup(base, dyn, fn_names[f])))
			continue;
		if (f >= F_CXX_FIRST) {
			if (allocator < 0)
				allocator = dyn_lookup(base, dyn, "malloc") != 0;
			v->found->seen[f] = (unsigned char)allocator;
		}
	}
	return 0;
}

static const struct {
	int f;
	uintptr_t fn;
} glibc_own[] = {
	{ F_MALLOC, (uintptr_t)__libc_malloc },
	{ F_FREE, (uintptr_t)__libc_free },
	{ F_CALLOC, (uintptr_t)__libc_calloc },
	{ F_REALLOC, (uintptr_t)__libc_realloc },
	{ F_MEMALIGN, (uintptr_t)__libc_memalign },
	{ F_VALLOC, (uintptr_t)__libc_valloc },
	{ F_PVALLOC, (uintptr_t)__libc_pvalloc },
};

static void next_find(void)
{
	static struct next_defs found;
	struct visit v = { 0, &found };
	int s = 0;

	if (__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!__atomic_compare_exchange_n(&next_state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return;
	}
	dl_iterate_phdr(visit_object, &v);
	/* glibc's own, where nothing after this library defines one. */
	for (size_t i = 0; i < sizeof(glibc_own) / sizeof(glibc_own[0]); i++)
		if (!found.fn[glibc_own[i].f])
			found.fn[glibc_own[i].f] = glibc_own[i].fn;
	/* The first four are read with no look at next_state. */
	for (int f = 0; f < F_NR; f++) {
		next.seen[f] = found.seen[f];
		__atomic_store_n(&next.fn[f], found.fn[f], __ATOMIC_RELEASE);
	}
	__atomic_store_n(&next_state, 2, __ATOMIC_RELEASE);
}

static void *first_malloc(size_t size)
{
	next_find();
	return ((void *(*)(size_t))next.fn[F_MALLOC])(size);
}

static void first_free(void *p)
{
	next_find();
	((void (*)(void *))next.fn[F_FREE])(p);
}

static void *first_calloc(size_t n, size_t size)
{
	next_find();
	return ((void *(*)(size_t, size_t))next.fn[F_CALLOC])(n, size);
}

static void *first_realloc(void *p, size_t size)
{
	next_find();
	return ((void *(*)(void *, size_t))next.fn[F_REALLOC])(p, size);
}

const char *sampler_self_path(void)
{
	next_find();
	return self_path;
}

struct visit_name {
	const char *name;
	int after_self;
	uintptr_t found;
};

static int visit_name(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct visit_name *v = arg;
	uintptr_t base = info->dlpi_addr;
	int self;
	const ElfW(Dyn) *dyn = object_dynamic(info, &self);

	(void)size;
	if (self) {
		v->after_self = 1;
		return 0;
	}
	if (v->after_self && dyn)
		v->found = dyn_lookup(base, dyn, v->name);
	return v->found != 0;
}

void *sampler_next(const char *name)
{
	struct visit_name v = { name, 0, 0 };

	dl_iterate_phdr(visit_name, &v);
	return (void *)v.found;
}

/* The next definition of f, as a pointer of the wrapper's own type. */
#define NEXT(f, wrapper)                                                               \
	((__typeof__(&wrapper))(__builtin_expect(__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 2, 1) \
					? next.fn[f]                                    \
					: (next_find(), next.fn[f])))

/* The four functions every program calls most keep no frame of their
 * own: each jumps to the allocator, or to its slow path (slow.c). While no
 * tracer listens (no probe attached, no recording started the process), a
 * call costs a few loads and that jump. While one does, an allocation
 * that is not kept costs a countdown more, a free a look at the kept
 * blocks' filter while some are live, and realloc both (its slow path
 * only where it allocates anew, or its countdown runs out). */
#define FAST __attribute__((optimize("omit-frame-pointer")))
#define QUIET (!(__atomic_load_n(&otel_memory_alloc_semaphore, __ATOMIC_RELAXED) | sampler_recorded))

/* The next definition of one of the four: set once found, and until
 * then a function that finds it. */
#define NEXT_FAST(f) __atomic_load_n(&next.fn[f], __ATOMIC_RELAXED)

FAST void *malloc(size_t size)
{
	void *(*f)(size_t) = (void *(*)(size_t))NEXT_FAST(F_MALLOC);

	if (__builtin_expect(QUIET || (sampler_ts.left -= sampler_bytes(size)) > 0, 1) &&
	    __builtin_expect(!guard_take(size), 1))
		return f(size);
	return sampler_slow.malloc(size, f);
}

void *sampler_malloc_next(size_t size)
{
	return ((void *(*)(size_t))NEXT_FAST(F_MALLOC))(size);
}

FAST void free(void *p)
{
	void (*f)(void *) = (void (*)(void *))NEXT_FAST(F_FREE);

	if (__builtin_expect(!sampler_free_watched(p) && !guard_has(p), 1))
		return f(p);
	sampler_slow.free(p, f);
}

FAST void *calloc(size_t n, size_t size)
{
	void *(*f)(size_t, size_t) = (void *(*)(size_t, size_t))NEXT_FAST(F_CALLOC);
	size_t total;

	if (__builtin_mul_overflow(n, size, &total))
		total = SIZE_MAX;
	if (__builtin_expect(QUIET || (sampler_ts.left -= sampler_bytes(total)) > 0, 1) &&
	    __builtin_expect(!guard_take(total), 1))
		return f(n, size);
	return sampler_slow.calloc(n, size, f);
}

FAST void *realloc(void *p, size_t size)
{
	void *(*f)(void *, size_t) = (void *(*)(void *, size_t))NEXT_FAST(F_REALLOC);

	if (__builtin_expect(!sampler_free_watched(p) && !guard_has(p), 1)) {
		if (QUIET)
			return f(p, size);
		/* A block neither kept nor guarded, grown or shrunk to a size
		 * the countdown passes over: the slow path would only count it
		 * down and call the allocator. realloc(NULL, n) is malloc(n),
		 * which the guard may choose: the slow path's. */
		if (p && sampler_ts.left > sampler_bytes(size)) {
			sampler_ts.left -= sampler_bytes(size);
			return f(p, size);
		}
	}
	return sampler_slow.realloc(p, size, f);
}

size_t malloc_usable_size(void *p)
{
	size_t n;

	if (guard_has(p))
		return guard_size(p, &n) ? n : 0;
	return NEXT(F_USABLE_SIZE, malloc_usable_size) ? NEXT(F_USABLE_SIZE, malloc_usable_size)(p) : 0;
}

/* A block from the guard's pool for an allocation its countdown chose;
 * NULL when it did not choose it, or no slot is free. */
static void *guarded(size_t size, size_t align)
{
	if (!guard_take(size))
		return NULL;
	guard_ts.due = 0;
	return guard_alloc(size, align);
}

/* The report of an allocation of the family below, from one call for a
 * guarded block and a kept one alike: the profile's choice, and a
 * guarded block whatever it is. */
#define SAMPLER_SEEN_GUARDED(p, size)                                   \
	do {                                                            \
		int kept_ = (p) && sampler_take(size);                  \
                                                                        \
		if (kept_ || ((p) && guard_has(p)))                     \
			sampler_kept_as((p), (size), kept_);            \
	} while (0)

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	void *q;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (guard_has(p))
		return realloc(p, total);
	/* Through realloc: glibc's reallocarray calls realloc itself, and
	 * would be seen twice. */
	SAMPLER_GONE(p);
	q = NEXT(F_REALLOC, realloc)(p, total);
	/* Of no bytes, a block all the same (glibc's realloc of NULL), and
	 * a leak if dropped. */
	SAMPLER_SEEN(q, total);
	return q;
}

void *memalign(size_t align, size_t size)
{
	void *p = align && !(align & (align - 1)) ? guarded(size, align) : NULL;

	if (!p)
		p = NEXT(F_MEMALIGN, memalign)(align, size);
	SAMPLER_SEEN_GUARDED(p, size);
	return p;
}

void *aligned_alloc(size_t align, size_t size)
{
	void *p = align && !(align & (align - 1)) ? guarded(size, align) : NULL;

	if (!p)
		p = next.fn[F_ALIGNED_ALLOC] ? NEXT(F_ALIGNED_ALLOC, aligned_alloc)(align, size)
					     : NEXT(F_MEMALIGN, memalign)(align, size);
	SAMPLER_SEEN_GUARDED(p, size);
	return p;
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = NULL;
	int r = 0;

	if (!align || align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	if ((p = guarded(size, align)))
		*out = p;
	else if (next.fn[F_POSIX_MEMALIGN] || (next_find(), next.fn[F_POSIX_MEMALIGN]))
		r = NEXT(F_POSIX_MEMALIGN, posix_memalign)(out, align, size);
	else if (!(*out = NEXT(F_MEMALIGN, memalign)(align, size)))
		r = ENOMEM;
	if (!r)
		SAMPLER_SEEN_GUARDED(*out, size);
	return r;
}

void *valloc(size_t size)
{
	void *p = guarded(size, 4096);

	if (!p)
		p = NEXT(F_VALLOC, valloc)(size);
	SAMPLER_SEEN_GUARDED(p, size);
	return p;
}

void *pvalloc(size_t size)
{
	void *p = NEXT(F_PVALLOC, pvalloc)(size);

	SAMPLER_SEEN(p, size);
	return p;
}

/* jemalloc's: flags hold the alignment's log in their low 6 bits and
 * MALLOCX_ZERO (0x40). Where no jemalloc follows, the C family does. */
void *mallocx(size_t size, int flags)
{
	void *p;

	if (NEXT(F_MALLOCX, mallocx))
		p = NEXT(F_MALLOCX, mallocx)(size, flags);
	else if (flags & 0x3f)
		p = NEXT(F_MEMALIGN, memalign)((size_t)1 << (flags & 0x3f), size);
	else
		p = (flags & 0x40) ? NEXT(F_CALLOC, calloc)(1, size) : NEXT(F_MALLOC, malloc)(size);
	if (p && !NEXT(F_MALLOCX, mallocx) && (flags & 0x3f) && (flags & 0x40))
		memset(p, 0, size);
	SAMPLER_SEEN(p, size);
	return p;
}

void *rallocx(void *p, size_t size, int flags)
{
	void *q;

	if (guard_has(p))
		return realloc(p, size);
	SAMPLER_GONE(p);
	q = NEXT(F_RALLOCX, rallocx) ? NEXT(F_RALLOCX, rallocx)(p, size, flags) : NEXT(F_REALLOC, realloc)(p, size);
	SAMPLER_SEEN(q, size);
	return q;
}

void dallocx(void *p, int flags)
{
	if (guard_has(p))
		return free(p);
	SAMPLER_GONE(p);
	if (NEXT(F_DALLOCX, dallocx))
		NEXT(F_DALLOCX, dallocx)(p, flags);
	else
		NEXT(F_FREE, free)(p);
}

void sdallocx(void *p, size_t size, int flags)
{
	if (guard_has(p))
		return free(p);
	SAMPLER_GONE(p);
	if (NEXT(F_SDALLOCX, sdallocx))
		NEXT(F_SDALLOCX, sdallocx)(p, size, flags);
	else
		NEXT(F_FREE, free)(p);
}

/* C++'s operators, by their mangled names (std::align_val_t is a size_t,
 * std::nothrow_t const& a pointer). Where libstdc++'s come next, a tail
 * call: no frame of the wrapper's stays under the malloc it makes. */
#define NEW_OP(sym, f, params, args, align)                     \
	void *sym params;                                      \
	void *sym params                                       \
	{                                                      \
		void *p;                                       \
                                                               \
		if (!NEXT(f, sym))                             \
			abort();                               \
		if (!next.seen[f])                             \
			return NEXT(f, sym) args;              \
		if (!(p = guarded(size, align)))               \
			p = NEXT(f, sym) args;                 \
		SAMPLER_SEEN_GUARDED(p, size);                 \
		return p;                                      \
	}
#define DELETE_OP(sym, f, params, args)                        \
	void sym params;                                       \
	void sym params                                        \
	{                                                      \
		if (!NEXT(f, sym))                             \
			abort();                               \
		if (!next.seen[f]) {                           \
			NEXT(f, sym) args;                     \
			return;                                \
		}                                              \
		if (guard_has(p)) {                            \
			free(p);                               \
			return;                                \
		}                                              \
		SAMPLER_GONE(p);                               \
		NEXT(f, sym) args;                             \
	}

NEW_OP(_Znwm, F_NEW, (size_t size), (size), 0)
NEW_OP(_Znam, F_NEW_ARRAY, (size_t size), (size), 0)
NEW_OP(_ZnwmRKSt9nothrow_t, F_NEW_NOTHROW, (size_t size, const void *nt), (size, nt), 0)
NEW_OP(_ZnamRKSt9nothrow_t, F_NEW_ARRAY_NOTHROW, (size_t size, const void *nt), (size, nt), 0)
NEW_OP(_ZnwmSt11align_val_t, F_NEW_ALIGNED, (size_t size, size_t al), (size, al), al)
NEW_OP(_ZnamSt11align_val_t, F_NEW_ARRAY_ALIGNED, (size_t size, size_t al), (size, al), al)
NEW_OP(_ZnwmSt11align_val_tRKSt9nothrow_t, F_NEW_ALIGNED_NOTHROW, (size_t size, size_t al, const void *nt),
       (size, al, nt), al)
NEW_OP(_ZnamSt11align_val_tRKSt9nothrow_t, F_NEW_ARRAY_ALIGNED_NOTHROW, (size_t size, size_t al, const void *nt),
       (size, al, nt), al)
DELETE_OP(_ZdlPv, F_DELETE, (void *p), (p))
DELETE_OP(_ZdaPv, F_DELETE_ARRAY, (void *p), (p))
DELETE_OP(_ZdlPvm, F_DELETE_SIZED, (void *p, size_t n), (p, n))
DELETE_OP(_ZdaPvm, F_DELETE_ARRAY_SIZED, (void *p, size_t n), (p, n))
DELETE_OP(_ZdlPvRKSt9nothrow_t, F_DELETE_NOTHROW, (void *p, const void *nt), (p, nt))
DELETE_OP(_ZdaPvRKSt9nothrow_t, F_DELETE_ARRAY_NOTHROW, (void *p, const void *nt), (p, nt))
DELETE_OP(_ZdlPvSt11align_val_t, F_DELETE_ALIGNED, (void *p, size_t al), (p, al))
DELETE_OP(_ZdaPvSt11align_val_t, F_DELETE_ARRAY_ALIGNED, (void *p, size_t al), (p, al))
DELETE_OP(_ZdlPvmSt11align_val_t, F_DELETE_SIZED_ALIGNED, (void *p, size_t n, size_t al), (p, n, al))
DELETE_OP(_ZdaPvmSt11align_val_t, F_DELETE_ARRAY_SIZED_ALIGNED, (void *p, size_t n, size_t al), (p, n, al))
DELETE_OP(_ZdlPvSt11align_val_tRKSt9nothrow_t, F_DELETE_ALIGNED_NOTHROW, (void *p, size_t al, const void *nt),
	  (p, al, nt))
DELETE_OP(_ZdaPvSt11align_val_tRKSt9nothrow_t, F_DELETE_ARRAY_ALIGNED_NOTHROW, (void *p, size_t al, const void *nt),
	  (p, al, nt))

/* dlsym: a program that looks an allocation function up in an object
 * (ctypes' CDLL("libc.so.6").malloc, a plugin loader) would call the
 * allocator past the wrappers; where the lookup finds the very function a
 * wrapper hands its calls to, it gets the wrapper. RTLD_NEXT lookups, and
 * names that are not wrapped, go straight on: a tail call, so that dlsym
 * still sees who asked. */
void *dlsym(void *handle, const char *name);
void *dlsym(void *handle, const char *name)
{
	static void *(*real)(void *, const char *);
	static void *const mine[F_NR] = {
		[F_MALLOC] = (void *)malloc, [F_FREE] = (void *)free, [F_CALLOC] = (void *)calloc,
		[F_REALLOC] = (void *)realloc, [F_REALLOCARRAY] = (void *)reallocarray, [F_MEMALIGN] = (void *)memalign,
		[F_ALIGNED_ALLOC] = (void *)aligned_alloc, [F_POSIX_MEMALIGN] = (void *)posix_memalign,
		[F_VALLOC] = (void *)valloc, [F_PVALLOC] = (void *)pvalloc,
	};
	void *p;
	int f = F_NR;

	if (!real)
		real = (void *(*)(void *, const char *))sampler_next("dlsym");
	if (handle != RTLD_NEXT)
		for (f = 0; f < F_CXX_FIRST && strcmp(fn_names[f], name); f++)
			;
	if (f >= F_CXX_FIRST || !mine[f])
		return real(handle, name);
	p = real(handle, name);
	next_find();
	return p && (uintptr_t)p == next.fn[f] ? mine[f] : p;
}
