/*
 * record/leakcheck/reach.c: the memory scan behind --leak-check; see reach.h.
 *
 * The payload (FORMAT.md, META reach): "MSREACH2", u32 pid, u32 part,
 * u32 regions, u32 vtables, u64 pairs, u64 scan time (ns), u64 bytes
 * scanned, u64 time of the scan, then the regions {u64 start, u64 end,
 * u32 kind, u32 0}, the pairs {u64 where, u64 what}, sorted by where
 * (where 0 is a register), the vtables (u64 each) and the words {u64
 * where, u64 value}, sorted by where.
 *
 * The words are what the analyzer's heuristics read of the heap, as
 * valgrind's --leak-check-heuristics do: each heap word that holds a
 * vtable's address (an object's, or a base's within it), and, before each
 * pointer 8 past a multiple of 16 (where glibc's blocks start at one, a
 * pointer into a block just past a header), the header's words that could
 * be a count or a length: a new[] array's count, a length-prefixed block's
 * length, an old std::string's length and capacity. The scan does not know
 * the blocks, so it keeps what could be a header; the analyzer decides.
 */
#include "reach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "../../formats/guard.h"
#include "../../formats/meta.h"
#include "../sampler/stream.h"

#define REACH_HEADER REACH_HEADER_SIZE
#define REACH_REGION REACH_REGION_SIZE
#define REACH_PAIR REACH_PAIR_SIZE
/* Pairs a part holds: 32 MiB, well within a chunk. */
#define REACH_PART_PAIRS (2u << 20)
#define REACH_READ (1u << 20)

struct region {
	uint64_t start, end, from;	/* from: where the scan starts (a stack's sp) */
	uint32_t kind;
};

/* A readable file mapping (vtables lie in one), or an executable one. */
struct file_map {
	uint64_t start, end;
};

struct scan {
	pid_t pid;
	struct region *regions;
	size_t nr, alloc;
	struct file_map *ro, *code;
	size_t nr_ro, nr_code, alloc_ro, alloc_code;
	uint64_t ro_lo, ro_hi;
	/* Addresses already judged: value, and 1 for a vtable, 2 for not. */
	struct { uint64_t addr; uint8_t is; } *judged;
	uint64_t *vtables;		/* those found to be vtables */
	size_t nr_vtables, alloc_vtables;
	unsigned char *words;		/* {where, value} for the heuristics */
	size_t nr_words, alloc_words;
	uint64_t *heads;		/* pointers that may be just past a header */
	size_t nr_heads, alloc_heads;
	uint64_t libc_lo, libc_hi;	/* libc's code, for the exit path's start */
	struct region **targets;	/* heap and anonymous, sorted */
	size_t nr_targets;
	uint64_t lo, hi;		/* the targets' span */
	unsigned char *pairs;
	size_t nr_pairs, pairs_alloc;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#define GLIBC_HEAP_MAX (64ull << 20)

/* Whether [lo, hi) starts one of glibc's non-main arena heaps: on a
 * 64 MiB boundary, with its heap_info there (arena, previous heap, size
 * in use, size made writable, page size) telling the writable size that
 * the mapping has, or less where the kernel merged the next heap into
 * it. */
static int glibc_heap_at(pid_t pid, uint64_t lo, uint64_t hi)
{
	uint64_t h[5];
	struct iovec local = { h, sizeof(h) }, remote = { (void *)lo, sizeof(h) };

	if (lo & (GLIBC_HEAP_MAX - 1))
		return 0;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(h))
		return 0;
	return h[0] && h[2] && h[2] <= h[3] && h[3] <= hi - lo && h[3] <= GLIBC_HEAP_MAX && !(h[3] & 4095) && h[4] &&
	       !(h[4] & (h[4] - 1));
}

static int file_map_add(struct file_map **v, size_t *n, size_t *alloc, uint64_t lo, uint64_t hi)
{
	if (*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 64;
		struct file_map *nv = realloc(*v, na * sizeof(*nv));

		if (!nv)
			return -1;
		*v = nv;
		*alloc = na;
	}
	(*v)[(*n)++] = (struct file_map){ lo, hi };
	return 0;
}

static int maps_load(struct scan *sc, pid_t pid, const struct reach_thread *th, size_t nth)
{
	char path[64], *line = NULL;
	size_t alloc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* The mapping before this one: a thread stack has its guard page
	 * right below it. */
	unsigned long long prev_hi = 0, pool_lo = 0, pool_hi = 0;
	int prev_guard = 0;

	while (getline(&line, &alloc, f) > 0) {
		unsigned long long lo, hi;
		char perms[8], name[512] = "";
		struct region r;
		int anon, below_guard;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %511[^\n]", &lo, &hi, perms, name) < 3)
			continue;
		/* The brk heap is anonymous memory too, under a name: a part
		 * of it made read-only is a mapping of its own, and still
		 * holds blocks and pointers. */
		anon = !name[0] || !strncmp(name, "[anon", 5) || !strcmp(name, "[heap]");
		if (perms[2] == 'x' && strstr(name, "/libc.so") && !sc->libc_hi) {
			sc->libc_lo = lo;
			sc->libc_hi = hi;
		}
		/* A vtable lies in a file's readable data, made read-only
		 * after relocation or not; the code it points to, in a file's
		 * executable mapping. */
		if (name[0] == '/' && strncmp(name, "/dev/", 5) && perms[0] == 'r' &&
		    file_map_add(perms[2] == 'x' ? &sc->code : &sc->ro, perms[2] == 'x' ? &sc->nr_code : &sc->nr_ro,
				 perms[2] == 'x' ? &sc->alloc_code : &sc->alloc_ro, lo, hi)) {
			free(line);
			fclose(f);
			return -ENOMEM;
		}
		/* The wrapper's guard pool (formats/guard.h): its slots are
		 * heap, what lies in them outside a block no root. */
		if (!strncmp(name, "/memfd:" GUARD_NAME, 7 + sizeof(GUARD_NAME) - 1)) {
			pool_lo = hi;
			pool_hi = hi + 2 * GUARD_SLOTS * (hi - lo);
		}
		below_guard = prev_guard && prev_hi == lo;
		prev_guard = anon && perms[0] == '-' && perms[1] == '-';
		prev_hi = hi;
		/* Where a pointer can have been stored: what the process can
		 * write, and its own anonymous memory it made read-only since
		 * (a read-only page of pointers is a root). Not the kernel's
		 * pages ([vvar]) or device memory, whose reads may do
		 * anything. Blocks lie only in anonymous memory or the heap,
		 * whatever its protection now, so those are targets too
		 * (kind only, not scanned, when they cannot be read). */
		if (perms[0] != 'r' && !anon)
			continue;
		if (perms[1] != 'w' && !anon)
			continue;
		if (name[0] == '[' && strcmp(name, "[heap]") && strcmp(name, "[stack]") && strncmp(name, "[anon", 5))
			continue;
		if (!strncmp(name, "/dev/", 5) && strncmp(name, "/dev/shm/", 9))
			continue;
		/* The wrapper's rings: copies of pointers for the recorder, no
		 * root of the program's. */
		if (!strncmp(name, "/memfd:" STREAM_MEMFD_NAME, 7 + sizeof(STREAM_MEMFD_NAME) - 1))
			continue;
		r = (struct region){ lo, hi, lo, REACH_REGION_FILE };
		if (!strcmp(name, "[heap]"))
			r.kind = REACH_REGION_HEAP;
		else if (!name[0] || !strncmp(name, "[anon", 5))
			r.kind = REACH_REGION_ANON;
		for (size_t i = 0; i < nth; i++) {
			/* Below a thread's stack pointer is no live data; the
			 * red zone above it may be, unless the thread is in a
			 * system call. */
			if (th[i].sp >= lo && th[i].sp < hi) {
				uint64_t red = th[i].in_syscall ? 0 : 128;

				r.kind = REACH_REGION_STACK;
				r.from = (th[i].sp & ~7ull) >= lo + red ? (th[i].sp & ~7ull) - red : lo;
			}
		}
		if (!strcmp(name, "[stack]"))
			r.kind = REACH_REGION_STACK;
		if (r.kind == REACH_REGION_ANON && lo >= pool_lo && hi <= pool_hi)
			r.kind = REACH_REGION_HEAP;
		/* A finished thread's stack that glibc keeps for the next
		 * thread: writable anonymous memory over a guard page, with no
		 * live thread's stack pointer in it. Dead data, no root, and no
		 * block lies in it. A glibc arena's heap can look the same,
		 * over the unused tail of the heap below it, but it starts on
		 * a 64 MiB boundary with its heap_info. Other allocators place
		 * mappings so that a stack lands on that boundary too (1 run
		 * in 100 under jemalloc), so the boundary alone is no proof. */
		if (r.kind == REACH_REGION_ANON && below_guard && !glibc_heap_at(pid, lo, hi))
			continue;
		if (perms[0] != 'r')
			r.kind = REACH_REGION_UNREADABLE;
		if (sc->nr == sc->alloc) {
			struct region *v = realloc(sc->regions, (sc->alloc = sc->alloc ? sc->alloc * 2 : 256) * sizeof(*v));

			if (!v) {
				free(line);
				fclose(f);
				return -ENOMEM;
			}
			sc->regions = v;
		}
		sc->regions[sc->nr++] = r;
	}
	free(line);
	fclose(f);
	return 0;
}

static int pair_add(struct scan *sc, uint64_t where, uint64_t what)
{
	if (sc->nr_pairs == sc->pairs_alloc) {
		size_t n = sc->pairs_alloc ? sc->pairs_alloc * 2 : 65536;
		unsigned char *v = realloc(sc->pairs, n * REACH_PAIR);

		if (!v)
			return -ENOMEM;
		sc->pairs = v;
		sc->pairs_alloc = n;
	}
	memcpy(sc->pairs + sc->nr_pairs * REACH_PAIR, &where, 8);
	memcpy(sc->pairs + sc->nr_pairs * REACH_PAIR + 8, &what, 8);
	sc->nr_pairs++;
	return 0;
}

/* Whether v lies in a region a heap block could be in. */
static int target(const struct scan *sc, uint64_t v)
{
	size_t lo = 0, hi = sc->nr_targets;

	if (v - sc->lo >= sc->hi - sc->lo)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sc->targets[mid]->end <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sc->nr_targets && v >= sc->targets[lo]->start;
}

static int region_cmp(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a, *y = *(struct region *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The file mapping of v among n sorted ones, or NULL. */
static struct file_map *file_map_of(struct file_map *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && a >= v[lo].start ? &v[lo] : NULL;
}

#define JUDGED_SLOTS (1u << 16)
#define VTABLE_LOOK 20		/* words a vtable's first two code pointers are looked for in */

/* Whether v is a vtable's address: in a read-only file mapping, the
 * words from it on, up to VTABLE_LOOK of them, zero or code addresses
 * until two code addresses are seen, as valgrind judges it. Judged once
 * per address. */
static int vtable_is(struct scan *sc, uint64_t v)
{
	uint64_t h = (v >> 3) * 0x9e3779b97f4a7c15ull >> 48;
	struct file_map *m;
	int code = 0, is = 0;

	if (!sc->judged && !(sc->judged = calloc(JUDGED_SLOTS, sizeof(*sc->judged))))
		return 0;
	for (uint32_t i = 0; i < JUDGED_SLOTS; i++) {
		__typeof__(sc->judged[0]) *j = &sc->judged[(h + i) & (JUDGED_SLOTS - 1)];

		if (j->is && j->addr == v)
			return j->is == 1;
		if (!j->is) {
			h = (h + i) & (JUDGED_SLOTS - 1);
			break;
		}
	}
	/* The words themselves, read from the process: a mapping's pages
	 * the process never touched are read into it at 200 MB/s, so no
	 * more than these. */
	if ((m = file_map_of(sc->ro, sc->nr_ro, v))) {
		uint64_t w[VTABLE_LOOK];
		size_t len = m->end - v < sizeof(w) ? m->end - v : sizeof(w);
		struct iovec local = { w, len }, remote = { (void *)v, len };
		ssize_t got = process_vm_readv(sc->pid, &local, 1, &remote, 1, 0);

		for (ssize_t k = 0; k + 8 <= got && !is; k += 8) {
			if (!w[k / 8])
				continue;
			if (!file_map_of(sc->code, sc->nr_code, w[k / 8]))
				break;
			is = ++code == 2;
		}
	}
	if (!sc->judged[h].is) {
		sc->judged[h].addr = v;
		sc->judged[h].is = is ? 1 : 2;
	}
	if (is && sc->nr_vtables < JUDGED_SLOTS) {
		if (sc->nr_vtables == sc->alloc_vtables) {
			size_t na = sc->alloc_vtables ? sc->alloc_vtables * 2 : 64;
			uint64_t *nv = realloc(sc->vtables, na * sizeof(*nv));

			if (!nv)
				return is;
			sc->vtables = nv;
			sc->alloc_vtables = na;
		}
		sc->vtables[sc->nr_vtables++] = v;
	}
	return is;
}

static int word_add(struct scan *sc, uint64_t where, uint64_t value)
{
	if (sc->nr_words == sc->alloc_words) {
		size_t n = sc->alloc_words ? sc->alloc_words * 2 : 4096;
		unsigned char *v = realloc(sc->words, n * REACH_WORD_SIZE);

		if (!v)
			return -ENOMEM;
		sc->words = v;
		sc->alloc_words = n;
	}
	memcpy(sc->words + sc->nr_words * REACH_WORD_SIZE, &where, 8);
	memcpy(sc->words + sc->nr_words * REACH_WORD_SIZE + 8, &value, 8);
	sc->nr_words++;
	return 0;
}

/* A pointer into the heap: one 8 past a multiple of 16 may be just past
 * a header, whose words are read once the scan is over. */
static int pointer_add(struct scan *sc, uint64_t where, uint64_t what)
{
	if ((what & 15) == 8) {
		if (sc->nr_heads == sc->alloc_heads) {
			size_t n = sc->alloc_heads ? sc->alloc_heads * 2 : 1024;
			uint64_t *v = realloc(sc->heads, n * sizeof(*v));

			if (!v)
				return -ENOMEM;
			sc->heads = v;
			sc->alloc_heads = n;
		}
		sc->heads[sc->nr_heads++] = what;
	}
	return pair_add(sc, where, what);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The 24 bytes before each head pointer, read in batches; of them, the
 * words that could be a header: a count or length before the pointer, an
 * old std::string's length and capacity 24 and 16 bytes before it. */
#define HEAD_BATCH 512
#define HEADER_MAX (1ull << 40)

static int heads_read(struct scan *sc, pid_t pid)
{
	uint64_t got[HEAD_BATCH][3];
	struct iovec local[HEAD_BATCH], remote[HEAD_BATCH];
	size_t n = 0;

	if (sc->nr_heads > 1)
		qsort(sc->heads, sc->nr_heads, sizeof(*sc->heads), u64_cmp);
	for (size_t i = 0; i < sc->nr_heads; i++)
		if (!n || sc->heads[i] != sc->heads[n - 1])
			sc->heads[n++] = sc->heads[i];
	sc->nr_heads = n;
	for (size_t at = 0; at < sc->nr_heads; at += HEAD_BATCH) {
		size_t k = sc->nr_heads - at < HEAD_BATCH ? sc->nr_heads - at : HEAD_BATCH;
		ssize_t r;

		for (size_t i = 0; i < k; i++) {
			local[i] = (struct iovec){ got[i], 24 };
			remote[i] = (struct iovec){ (void *)(sc->heads[at + i] - 24), 24 };
		}
		/* A read stops at the first piece it cannot copy: those
		 * before it are whole, the rest taken one by one. */
		r = process_vm_readv(pid, local, k, remote, k, 0);
		for (size_t i = 0; i < k; i++) {
			uint64_t p = sc->heads[at + i];

			if ((r < 0 || (size_t)r < (i + 1) * 24) &&
			    process_vm_readv(pid, &local[i], 1, &remote[i], 1, 0) != 24)
				continue;
			if (got[i][2] && got[i][2] < HEADER_MAX && word_add(sc, p - 8, got[i][2]))
				return -ENOMEM;
			if (got[i][0] <= got[i][1] && got[i][1] < HEADER_MAX &&
			    (word_add(sc, p - 24, got[i][0]) || word_add(sc, p - 16, got[i][1])))
				return -ENOMEM;
		}
	}
	return 0;
}

static int word_cmp(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	return x < y ? -1 : x > y;
}

static int scan_region(struct scan *sc, pid_t pid, const struct region *r, unsigned char *buf, uint64_t *bytes)
{
	/* Blocks lie here: an object's vtable words are the heuristics'. */
	int heap = r->kind == REACH_REGION_HEAP || r->kind == REACH_REGION_ANON;

	for (uint64_t at = r->from & ~7ull; at < r->end;) {
		size_t want = r->end - at < REACH_READ ? r->end - at : REACH_READ;
		struct iovec local = { buf, want }, remote = { (void *)at, want };
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		/* A page that cannot be read (a hole the kernel keeps): the
		 * next one may be. */
		if (got <= 0) {
			at = (at + 4096) & ~4095ull;
			continue;
		}
		for (ssize_t k = 0; k + 8 <= got; k += 8) {
			uint64_t v;

			memcpy(&v, buf + k, 8);
			if (target(sc, v)) {
				if (pointer_add(sc, at + k, v))
					return -ENOMEM;
			} else if (heap && v - sc->ro_lo < sc->ro_hi - sc->ro_lo && !(v & 7) && vtable_is(sc, v) &&
				   word_add(sc, at + k, v)) {
				return -ENOMEM;
			}
		}
		*bytes += (uint64_t)got;
		at += (uint64_t)got;
	}
	return 0;
}

/* Where the exit path's frames end on the stack of a thread that returned
 * from main into exit(): just above the return address of glibc's
 * __libc_start_call_main's call to exit, which follows its call to main
 * ("call *%rax; mov %eax,%edi; call exit"). The frames below it are
 * exit()'s, and what they left of main's and its callees' dead frames:
 * memcheck holds memory a new frame takes undefined until it is written,
 * so its stale words are no pointers; here they are not scanned. 0 when
 * the pattern is not there (main called exit itself: its frame is live). */
static uint64_t exit_path_top(const struct scan *sc, pid_t pid, const struct region *stack, uint64_t sp)
{
	static const unsigned char pattern[5] = { 0xff, 0xd0, 0x89, 0xc7, 0xe8 };
	uint64_t n = stack->end - sp, found = 0;
	uint64_t *words;

	if (!sc->libc_hi || n > (64u << 20) || !(words = malloc(n)))
		return 0;
	{
		struct iovec local = { words, n }, remote = { (void *)sp, n };

		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)n) {
			free(words);
			return 0;
		}
	}
	/* From the outermost frames down: the first such return address. */
	for (uint64_t i = n / 8; i-- > 0 && !found;) {
		unsigned char code[5];
		struct iovec local = { code, 5 }, remote = { (void *)(words[i] - 9), 5 };

		if (words[i] - sc->libc_lo >= sc->libc_hi - sc->libc_lo || words[i] < sc->libc_lo + 9)
			continue;
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == 5 && !memcmp(code, pattern, 5))
			found = sp + i * 8 + 8;
	}
	free(words);
	return found;
}

int reach_scan(pid_t pid, const struct reach_thread *threads, size_t nr_threads,
	       int (*emit)(void *arg, const void *payload, size_t len), void *arg)
{
	struct scan sc = { 0 };
	uint64_t t0 = now_ns(), bytes = 0, took;
	unsigned char *buf = malloc(REACH_READ), *part = NULL;
	/* The memory is read through a thread of the scan: a leader that
	 * has exited (pthread_exit) has none to read through any more. */
	pid_t at = nr_threads ? threads[0].tid : pid;
	int r;

	if (!buf)
		return -ENOMEM;
	sc.pid = at;
	if ((r = maps_load(&sc, at, threads, nr_threads)))
		goto out;
	if (sc.nr_ro) {
		sc.ro_lo = sc.ro[0].start;
		sc.ro_hi = sc.ro[sc.nr_ro - 1].end;
	}
	sc.targets = malloc((sc.nr ? sc.nr : 1) * sizeof(*sc.targets));
	if (!sc.targets) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sc.nr; i++)
		if (sc.regions[i].kind == REACH_REGION_HEAP || sc.regions[i].kind == REACH_REGION_ANON ||
		    sc.regions[i].kind == REACH_REGION_UNREADABLE)
			sc.targets[sc.nr_targets++] = &sc.regions[i];
	if (sc.nr_targets > 1)
		qsort(sc.targets, sc.nr_targets, sizeof(*sc.targets), region_cmp);
	if (sc.nr_targets) {
		sc.lo = sc.targets[0]->start;
		sc.hi = sc.targets[sc.nr_targets - 1]->end;
	}
	for (size_t i = 0; i < nr_threads; i++)
		for (size_t k = 0; threads[i].in_syscall && k < sc.nr; k++)
			if (sc.regions[k].kind == REACH_REGION_STACK && threads[i].sp >= sc.regions[k].start &&
			    threads[i].sp < sc.regions[k].end) {
				uint64_t top = exit_path_top(&sc, at, &sc.regions[k], threads[i].sp & ~7ull);

				if (top > sc.regions[k].from)
					sc.regions[k].from = top;
			}
	for (size_t i = 0; i < nr_threads; i++)
		for (int k = 0; k < threads[i].nr_regs; k++)
			if (target(&sc, threads[i].regs[k]) && (r = pointer_add(&sc, 0, threads[i].regs[k])))
				goto out;
	for (size_t i = 0; i < sc.nr; i++)
		if (sc.regions[i].kind != REACH_REGION_UNREADABLE && (r = scan_region(&sc, at, &sc.regions[i], buf, &bytes)))
			goto out;
	if ((r = heads_read(&sc, at)))
		goto out;
	if (sc.nr_words > 1)
		qsort(sc.words, sc.nr_words, REACH_WORD_SIZE, word_cmp);
	took = now_ns() - t0;
	/* Parts, each with every region and its share of the pairs and of
	 * the words; the vtables in the first. */
	for (size_t done = 0, wdone = 0, p = 0; !p || done < sc.nr_pairs || wdone < sc.nr_words; p++) {
		size_t n = sc.nr_pairs - done < REACH_PART_PAIRS ? sc.nr_pairs - done : REACH_PART_PAIRS;
		size_t nw = sc.nr_words - wdone < REACH_PART_PAIRS ? sc.nr_words - wdone : REACH_PART_PAIRS;
		size_t nv = p ? 0 : sc.nr_vtables;
		size_t len = REACH_HEADER + sc.nr * REACH_REGION + n * REACH_PAIR + nv * 8 + nw * REACH_WORD_SIZE;
		uint32_t u32[4] = { (uint32_t)pid, (uint32_t)p, (uint32_t)sc.nr, (uint32_t)nv };
		uint64_t u64[4] = { n, took, bytes, t0 };
		unsigned char *q;

		free(part);
		part = malloc(len);
		if (!part) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(part, REACH_MAGIC, 8);
		memcpy(part + 8, u32, 16);
		memcpy(part + 24, u64, 32);
		for (size_t i = 0; i < sc.nr; i++) {
			unsigned char *q = part + REACH_HEADER + i * REACH_REGION;
			uint32_t kind[2] = { sc.regions[i].kind, 0 };

			memcpy(q, &sc.regions[i].start, 8);
			memcpy(q + 8, &sc.regions[i].end, 8);
			memcpy(q + 16, kind, 8);
		}
		q = part + REACH_HEADER + sc.nr * REACH_REGION;
		if (n)
			memcpy(q, sc.pairs + done * REACH_PAIR, n * REACH_PAIR);
		q += n * REACH_PAIR;
		if (nv)
			memcpy(q, sc.vtables, nv * 8);
		q += nv * 8;
		if (nw)
			memcpy(q, sc.words + wdone * REACH_WORD_SIZE, nw * REACH_WORD_SIZE);
		if (emit(arg, part, len))
			break;
		done += n;
		wdone += nw;
	}
	r = 0;
out:
	free(part);
	free(buf);
	free(sc.regions);
	free(sc.targets);
	free(sc.pairs);
	free(sc.ro);
	free(sc.code);
	free(sc.judged);
	free(sc.vtables);
	free(sc.words);
	free(sc.heads);
	return r;
}
