/*
 * record/leakcheck/reach.c: the memory scan behind --leak-check; see reach.h.
 *
 * The payload (FORMAT.md, META reach): "MSREACH1", u32 pid, u32 part,
 * u32 regions, u32 0, u64 pairs, u64 scan time (ns), u64 bytes scanned,
 * u64 time of the scan, then the regions {u64 start, u64 end, u32 kind,
 * u32 0} and the pairs {u64 where, u64 what}, sorted by where; where 0
 * is a register.
 */
#include "reach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

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

struct scan {
	struct region *regions;
	size_t nr, alloc;
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
	unsigned long long prev_hi = 0;
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

static int scan_region(struct scan *sc, pid_t pid, const struct region *r, unsigned char *buf, uint64_t *bytes)
{
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
			if (target(sc, v) && pair_add(sc, at + k, v))
				return -ENOMEM;
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
	if ((r = maps_load(&sc, at, threads, nr_threads)))
		goto out;
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
			if (target(&sc, threads[i].regs[k]) && (r = pair_add(&sc, 0, threads[i].regs[k])))
				goto out;
	for (size_t i = 0; i < sc.nr; i++)
		if (sc.regions[i].kind != REACH_REGION_UNREADABLE && (r = scan_region(&sc, at, &sc.regions[i], buf, &bytes)))
			goto out;
	took = now_ns() - t0;
	/* Parts, each with every region and its share of the pairs. */
	for (size_t done = 0, p = 0; !p || done < sc.nr_pairs; p++) {
		size_t n = sc.nr_pairs - done < REACH_PART_PAIRS ? sc.nr_pairs - done : REACH_PART_PAIRS;
		size_t len = REACH_HEADER + sc.nr * REACH_REGION + n * REACH_PAIR;
		uint32_t u32[4] = { (uint32_t)pid, (uint32_t)p, (uint32_t)sc.nr, 0 };
		uint64_t u64[4] = { n, took, bytes, t0 };

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
		memcpy(part + REACH_HEADER + sc.nr * REACH_REGION, sc.pairs + done * REACH_PAIR, n * REACH_PAIR);
		if (emit(arg, part, len))
			break;
		done += n;
	}
	r = 0;
out:
	free(part);
	free(buf);
	free(sc.regions);
	free(sc.targets);
	free(sc.pairs);
	return r;
}
