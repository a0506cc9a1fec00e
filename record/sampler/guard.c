/*
 * record/sampler/guard.c: the guard mode of libmemsight-sample.so, which
 * serves a sampled share of allocations from slots between inaccessible
 * pages, so that a read or write out of such a block faults where it
 * happens: past its end, before its start, or after its free.
 *
 * MEMSIGHT_GUARD=RATE[,recover] turns it on: about one allocation in RATE
 * of at most a page (a uniform countdown per thread, mean RATE) is
 * guarded. The pool is GUARD_SLOTS pages, each between two inaccessible
 * ones: (2 * GUARD_SLOTS + 1) pages of address space, and a page of memory
 * for each slot in use (256 KiB at most). Its first page is a mapping of
 * its own, of a memfd named GUARD_NAME, so that a recorder sees where the
 * pool lies, in the process's mappings, with no word from it; the formats
 * know the layout (formats/FORMAT.md).
 *
 * Placement alternates in each thread: against the end of the slot (the
 * block ends where the next guard page starts, so one byte past the end
 * faults) and against its start (one byte before it faults). At the end,
 * the block is aligned as its size allows: to the largest power of two
 * dividing the size, at most 16 (a block of 100 bytes ends at the page's
 * end; any object of 100 bytes has an alignment of at most 4), and at
 * least what memalign asked.
 *
 * A freed slot is made inaccessible and queued
 * behind every other free slot: the oldest freed is taken first, so that
 * a use after free faults until GUARD_SLOTS - 1 other guarded blocks came
 * since. A double free or a free inside a guarded block is said on
 * standard error and aborts, as glibc's checks do.
 *
 * With recover, a fault in the pool is said once on standard error and
 * the page it hit is opened for good (its slot, or the slots on either
 * side of a guard page, never serve again): the program goes on, as
 * GWP-ASan's recoverable mode lets it. A fault elsewhere goes to the
 * handler the program had, or ends the process as it would have.
 *
 * The queue is under a spin lock, held for a few loads and stores, never
 * across a call; fork takes it, so that the child finds it free. What
 * guards nothing (the mode off, a block not in the pool) costs a load and
 * a compare.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "sampler.h"

SAMPLER_API int guard_on;
SAMPLER_API uintptr_t guard_base, guard_span; /* the slots and their guards: pool start + 1 page */
SAMPLER_API __thread struct guard_thread guard_ts __attribute__((tls_model("initial-exec")));

enum { SLOT_FREE, SLOT_LIVE, SLOT_FREED };

/* Where a slot's block starts is kept as its offset in the slot, never
 * as a pointer: a leak check takes this library's data for a root, and a
 * pointer here would keep every guarded block reachable. */
struct slot {
	uint32_t off;
	size_t size;
	int state;
	int spent;		/* opened by a recovered fault: it serves no more */
};

static uint64_t rate = GUARD_RATE_DEFAULT;
static int recover;
static size_t page;
static struct slot slots[GUARD_SLOTS];
/* Slots to take, oldest freed first. */
static unsigned queue[GUARD_SLOTS], q_head, q_nr;
static int lock;
static struct sigaction old_segv;

static void lock_take(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&lock, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static void lock_drop(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static uintptr_t slot_page(unsigned i)
{
	return guard_base + 2 * (uintptr_t)i * page;
}

/* A page's protection, by the system call itself: the library's own
 * mprotect (stream.c) watches for code, which a slot never is, and a
 * signal handler calls this. */
static int protect(uintptr_t at, int prot)
{
	return (int)syscall(SYS_mprotect, at, page, prot);
}

static uintptr_t block_of(unsigned i)
{
	return slot_page(i) + slots[i].off;
}

/* Said with write(2): nothing here may allocate. */
static void say(const char *what, const void *addr)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "memsight guard: %s at %p\n", what, addr);

	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static int slot_of(uintptr_t p, unsigned *i)
{
	uintptr_t off = p - guard_base;

	if (off >= guard_span || (off / page) % 2)
		return 0;
	*i = (unsigned)(off / page / 2);
	return 1;
}

/* The pool's pages from its named one: odd ones are slots (slot
 * (k - 1) / 2), even ones guards (between slots k / 2 - 1 and k / 2). */
static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t a = (uintptr_t)si->si_addr, k = (a - (guard_base - page)) / page;

	if (recover && guard_base && a >= guard_base - page && k < 2 * GUARD_SLOTS + 1) {
		/* Opened for good: the slots beside an opened guard are
		 * guarded no more. */
		if (k % 2) {
			__atomic_store_n(&slots[(k - 1) / 2].spent, 1, __ATOMIC_RELEASE);
			say("use after free, recovered: the program goes on", (void *)a);
		} else {
			if (k / 2 < GUARD_SLOTS)
				__atomic_store_n(&slots[k / 2].spent, 1, __ATOMIC_RELEASE);
			if (k)
				__atomic_store_n(&slots[k / 2 - 1].spent, 1, __ATOMIC_RELEASE);
			say("access out of a block's bounds, recovered: the program goes on", (void *)a);
		}
		if (!protect(a & ~(page - 1), PROT_READ | PROT_WRITE))
			return;
	}
	/* Not the guard's: as it would have gone without it. */
	if (old_segv.sa_flags & SA_SIGINFO && old_segv.sa_sigaction) {
		old_segv.sa_sigaction(sig, si, ctx);
		return;
	}
	if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
		old_segv.sa_handler(sig);
		return;
	}
	signal(SIGSEGV, SIG_DFL);
	/* The access faults again, now to the default action. */
}

static void fork_prepare(void)
{
	lock_take();
}

static void fork_release(void)
{
	lock_drop();
}

/* The pool, at the library's start: a memfd page that names it, then the
 * slots, all inaccessible. Off when any of it fails. */
static int pool_make(void)
{
	size_t len;
	char *m;
	int fd;

	page = (size_t)sysconf(_SC_PAGESIZE);
	len = (2 * GUARD_SLOTS + 1) * page;
	m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	fd = memfd_create(GUARD_NAME, MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)page) ||
	    mmap(m, page, PROT_NONE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		munmap(m, len);
		return -1;
	}
	close(fd);
	for (unsigned i = 0; i < GUARD_SLOTS; i++)
		queue[i] = i;
	q_nr = GUARD_SLOTS;
	/* The named page is the guard before the first slot. */
	__atomic_store_n(&guard_base, (uintptr_t)m + page, __ATOMIC_RELEASE);
	__atomic_store_n(&guard_span, 2 * GUARD_SLOTS * page, __ATOMIC_RELEASE);
	return 0;
}

void guard_init(void)
{
	const char *v = getenv(GUARD_ENV);
	char *end;
	unsigned long long r;

	if (!v || !*v)
		return;
	r = strtoull(v, &end, 10);
	/* At most what record --guard takes: a countdown twice that fits. */
	if (end == v || !r || r > 1000000000 || (*end && strcmp(end, ",recover"))) {
		static const char bad[] = "memsight guard: MEMSIGHT_GUARD is RATE or RATE,recover (a number from 1 to "
					  "1000000000): the guard is off\n";

		(void)!write(2, bad, sizeof(bad) - 1);
		return;
	}
	rate = r;
	recover = !strcmp(end, ",recover");
	if (pool_make()) {
		static const char bad[] = "memsight guard: cannot map the pool of guarded slots (mmap or memfd_create "
					  "refused): the guard is off\n";

		(void)!write(2, bad, sizeof(bad) - 1);
		return;
	}
	pthread_atfork(fork_prepare, fork_release, fork_release);
	if (recover) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, &old_segv);
	}
	__atomic_store_n(&guard_on, 1, __ATOMIC_RELEASE);
}

static int64_t countdown(struct guard_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return (int64_t)(rate > 1 ? (t->rng * 0x2545f4914f6cdd1dull >> 11) % (2 * rate - 1) + 1 : 1);
}

int guard_take_due(size_t size)
{
	struct guard_thread *t = &guard_ts;

	if (!t->rng) {
		/* The thread's first allocation starts its countdown. */
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		t->rng = ((uint64_t)now.tv_nsec ^ (uint64_t)gettid() << 20 ^ (uintptr_t)t) | 1;
		if ((t->left = countdown(t) - 1) > 0)
			return 0;
	}
	/* Too large, or nothing to allocate: the next one that fits. */
	if (!size || size > page) {
		t->left = 1;
		return 0;
	}
	t->left = countdown(t);
	t->due = 1;
	return 1;
}

void *guard_alloc(size_t size, size_t align)
{
	unsigned i;
	uintptr_t start, p;
	size_t natural;

	if (!size || size > page || align > page)
		return NULL;
	lock_take();
	for (;;) {
		if (!q_nr) {
			lock_drop();
			return NULL;
		}
		i = queue[q_head];
		q_head = (q_head + 1) % GUARD_SLOTS;
		q_nr--;
		if (!__atomic_load_n(&slots[i].spent, __ATOMIC_ACQUIRE))
			break;
	}
	lock_drop();
	start = slot_page(i);
	if (protect(start, PROT_READ | PROT_WRITE)) {
		__atomic_store_n(&slots[i].spent, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	natural = size & -size;
	if (natural > 16)
		natural = 16;
	if (align < natural)
		align = natural;
	if (guard_ts.flip++ % 2 == 0)
		p = (start + page - size) & ~(uintptr_t)(align - 1);
	else
		p = start;
	slots[i].off = (uint32_t)(p - start);
	slots[i].size = size;
	__atomic_store_n(&slots[i].state, SLOT_LIVE, __ATOMIC_RELEASE);
	return (void *)p;
}

int guard_size(const void *p, size_t *size)
{
	unsigned i;

	if (!slot_of((uintptr_t)p, &i) || block_of(i) != (uintptr_t)p ||
	    __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) != SLOT_LIVE)
		return 0;
	*size = slots[i].size;
	return 1;
}

void guard_free(void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	unsigned i;
	int live = SLOT_LIVE;

	if (!slot_of(p, &i) || block_of(i) != p ||
	    !__atomic_compare_exchange_n(&slots[i].state, &live, SLOT_FREED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		int s = slot_of(p, &i) ? __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) : SLOT_FREE;

		say(s == SLOT_FREED && block_of(i) == p ? "double free of a guarded block"
							    : "free of a pointer in the guard's pool that no allocation returned",
		    ptr);
		abort();
	}
	/* Opened for good by a recovered fault: it stays so. */
	if (__atomic_load_n(&slots[i].spent, __ATOMIC_ACQUIRE))
		return;
	/* Inaccessible before anyone may take it. Its page stays: one call
	 * the fewer, and at most a page a slot in all. */
	protect(slot_page(i), PROT_NONE);
	lock_take();
	queue[(q_head + q_nr) % GUARD_SLOTS] = i;
	q_nr++;
	lock_drop();
}
