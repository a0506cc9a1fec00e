/*
 * record/sampler/stream.c: the sampler's reports written straight into
 * the recorder's rings, in the process, with no trap (stream.h has the
 * contract). A report costs what a function call and a copy of the
 * thread's frames cost; a probe site's trap is several times that.
 *
 * Each report captures the registers where it is made and copies the
 * stack above them, as the kernel does for a perf sample, so the analyzer
 * unwinds it with the same CFI. Where anything is missing (no stream
 * asked, no connection, a stack whose extent is not known, the recorder
 * gone), the caller reports at the probe site instead, which works
 * wherever a uprobe does.
 *
 * Where the recorder publishes the process's code filter, a report
 * carries only the words of its dump that the filter lets through
 * (stream.h): a pass over the dump here, in the thread that allocates,
 * instead of a copy of it here and a pass over it in the recorder, which
 * every thread's reports queue for. To know when the filter may lack a
 * mapping, the functions that map code (mmap, mprotect, pkey_mprotect,
 * dlopen, dlmopen) are wrapped and note when they last did so in a
 * granule the filter does not hold.
 *
 * Like the rest of the library it allocates nothing of its own with
 * malloc: rings are memfd pages, and the connection is made with system
 * calls alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../procs/execmap.h"
#include "pack.h"
#include "sampler.h"
#include "stream.h"

_Static_assert(STREAM_CODE_WORDS * 64 == EXECMAP_FILTER_BITS, "the published filter is the recorder's");
_Static_assert(sizeof(struct stream_ring_hdr) <= STREAM_HDR_SIZE / 2, "the writer's part of the header follows");

/* The writer's own part of a ring's header page, past what the recorder
 * reads: the list of this process's rings, for a forked child to drop. */
struct ring_own {
	struct stream_ring_hdr *next, *prev;
};
#define OWN(h) ((struct ring_own *)((char *)(h) + STREAM_HDR_SIZE / 2))

struct stream_thread {
	struct stream_ring_hdr *hdr;
	unsigned char *data;
	uint64_t size;		/* of data: STREAM_DATA_SIZE, or more once grown */
	uint64_t head;		/* what this thread published */
	int state;		/* 0 no ring yet, 1 a ring, 2 none: the probe sites */
	int nudged;		/* told the recorder its ring is filling */
	int busy;		/* a record is being written: a signal handler's
				 * allocation meanwhile takes the probe site */
	uint64_t made;		/* bytes of data whose pages are made (STREAM_MAKE) */
};

/* A ring's pages are made ahead of the writes, this many bytes at a
 * time (sampler_pages_make): its first pass would otherwise take a fault
 * a page in the program's own time. Not all at once: a thread that
 * reports a few times keeps a few pages. */
#define STREAM_MAKE (64u << 10)

static __thread struct stream_thread stream_ts __attribute__((tls_model("initial-exec")));

static int asked = -1;		/* MEMSIGHT_STREAM read: 1 a stream, 0 none */
static struct sockaddr_un addr;
static socklen_t addr_len;
static uint64_t dump_max;
static int free_stacks;		/* frees carry stacks too */
static int no_block;		/* a full ring at its largest sends reports to the probe sites: never wait */
static int conn = -1;		/* this process's connection */
static pid_t conn_pid;		/* the process that made it */
static int dead;		/* the recorder went away */
static int lock;		/* the connection and the ring list */
static struct stream_ring_hdr *rings;
static pthread_key_t end_key;
static int end_key_ok;
/* When this process last mapped code the published filter may not hold
 * (CLOCK_MONOTONIC ns): dumps go whole until the recorder's horizon
 * passes it. */
static uint64_t code_changed_at;


static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void lock_take(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void lock_give(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

/* MEMSIGHT_STREAM=PATH,DUMP[:FLAGS], once; under the lock. */
static void config_read(void)
{
	const char *v = getenv(STREAM_ENV), *comma;
	char *end;
	size_t n;

	asked = 0;
	if (!v || !(comma = strrchr(v, ',')) || (n = (size_t)(comma - v)) == 0 || n >= sizeof(addr.sun_path))
		return;
	dump_max = strtoull(comma + 1, &end, 10);
	free_stacks = no_block = 0;
	if (*end == ':')
		for (end++; *end == '1' || *end == 'n'; end++)
			*(*end == '1' ? &free_stacks : &no_block) = 1;
	if (*end || dump_max > 65536)
		return;
	dump_max &= ~7ull;
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, v, n);
	addr.sun_path[n] = 0;
	addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	asked = 1;
}

/* This process's connection, made once per process; under the lock. */
static int connect_once(void)
{
	pid_t me = getpid();
	int fd;

	if (conn >= 0 && conn_pid == me)
		return 0;
	if (conn >= 0)
		close(conn);
	conn = -1;
	/* Never blocking: a recorder that stopped reading (a full backlog,
	 * a full queue) sends connections and rings to the probe sites
	 * rather than hold the program. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (no_block ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&addr, addr_len)) {
		close(fd);
		return -1;
	}
	conn = fd;
	conn_pid = me;
	return 0;
}

static int hello_send(int ring_fd, pid_t pid, pid_t tid)
{
	struct stream_hello h = { STREAM_MAGIC, STREAM_VERSION, pid, tid };
	struct iovec iov = { &h, sizeof(h) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	memset(u.buf, 0, sizeof(u.buf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ring_fd, sizeof(int));
	return sendmsg(conn, &m, MSG_NOSIGNAL) == (ssize_t)sizeof(h) ? 0 : -1;
}

/* A ring of size bytes of data, handed to the recorder before anything
 * is written to it, and put on the process's list; under the lock. NULL
 * when it cannot be. */
static struct stream_ring_hdr *ring_open(uint64_t size)
{
	struct stream_ring_hdr *h;
	void *m;
	int fd;

	fd = memfd_create(STREAM_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Sealed at its size: the recorder maps only rings that cannot
	 * shrink under it. */
	if (fd < 0 || ftruncate(fd, (off_t)(STREAM_HDR_SIZE + size)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    (m = mmap(NULL, STREAM_HDR_SIZE + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	h = m;
	h->magic = STREAM_MAGIC;
	h->version = STREAM_VERSION;
	h->data_size = size;
	h->pid = conn_pid;
	h->tid = gettid();
	if (hello_send(fd, h->pid, h->tid)) {
		close(fd);
		munmap(m, STREAM_HDR_SIZE + size);
		return NULL;
	}
	close(fd);
	OWN(h)->prev = NULL;
	OWN(h)->next = rings;
	if (rings)
		OWN(rings)->prev = h;
	rings = h;
	return h;
}

static void ring_use(struct stream_thread *t, struct stream_ring_hdr *h)
{
	t->hdr = h;
	t->data = (unsigned char *)h + STREAM_HDR_SIZE;
	t->size = h->data_size;
	t->head = 0;
	t->nudged = 0;
	t->made = 0;
	t->state = 1;
	/* Its end is told at the thread's exit. */
	if (end_key_ok)
		pthread_setspecific(end_key, h);
}

/* The calling thread's ring: made, and handed to the recorder before
 * anything is written to it. Returns 0, or -1: this thread reports at the
 * probe sites. */
static int ring_make(struct stream_thread *t)
{
	struct stream_ring_hdr *h;

	t->state = 2;
	lock_take();
	if (asked < 0)
		config_read();
	if (!asked || dead || connect_once() || !(h = ring_open(STREAM_DATA_SIZE))) {
		lock_give();
		return -1;
	}
	lock_give();
	ring_use(t, h);
	return 0;
}

static void list_drop(struct stream_ring_hdr *h)
{
	struct ring_own *o = OWN(h);

	if (o->prev)
		OWN(o->prev)->next = o->next;
	else
		rings = o->next;
	if (o->next)
		OWN(o->next)->prev = o->prev;
}

/* The thread's ring is full: a ring twice the size takes over, the full
 * one told closed once all of it is published, for the recorder to read
 * to its end. A thread that allocates faster than the recorder empties
 * its ring then waits for it less, and the others keep the smallest ring.
 * Returns 0, or -1 with the full ring still the thread's. */
static int ring_grow(struct stream_thread *t)
{
	struct stream_ring_hdr *old = t->hdr, *h;
	uint64_t old_size = t->size;

	if (old_size >= STREAM_DATA_MAX || dead)
		return -1;
	lock_take();
	h = conn >= 0 && conn_pid == getpid() ? ring_open(old_size * 2) : NULL;
	if (h)
		list_drop(old);
	lock_give();
	if (!h)
		return -1;
	ring_use(t, h);
	__atomic_store_n(&old->closed, 1, __ATOMIC_RELEASE);
	munmap(old, STREAM_HDR_SIZE + old_size);
	return 0;
}

static void nudge(void)
{
	char c = 0;

	if (send(conn, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && (errno == EPIPE || errno == ECONNRESET))
		dead = 1;
}

/* No room: wait for the recorder to free some. -1 when it is gone. */
static int room_wait(struct stream_thread *t)
{
	struct pollfd p = { conn, POLLIN, 0 };
	char buf[64];

	__atomic_store_n(&t->hdr->waiting, 1, __ATOMIC_RELEASE);
	nudge();
	if (dead)
		return -1;
	if (poll(&p, 1, 1) > 0) {
		if (p.revents & (POLLHUP | POLLERR)) {
			dead = 1;
			return -1;
		}
		while (recv(conn, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	}
	return 0;
}

/* The pages of the ring's data up to end made, where they are not yet. */
static void ring_pages(struct stream_thread *t, uint64_t end)
{
	while (t->made < end && t->made < t->size) {
		uint64_t n = t->size - t->made < STREAM_MAKE ? t->size - t->made : STREAM_MAKE;

		if (sampler_pages_make(t->data + t->made, n)) {
			t->made = t->size;
			return;
		}
		t->made += n;
	}
}

/* What reserve gives when the report was dropped and counted. */
#define DROPPED ((unsigned char *)1)

/* Room for need bytes in the thread's ring, padding to its start when
 * they would cross its end; NULL when the recorder is gone, DROPPED when
 * there is none and the program must not wait. */
static unsigned char *reserve(struct stream_thread *t, uint32_t need)
{
	uint64_t off, pad;

	for (;;) {
		uint64_t tail = __atomic_load_n(&t->hdr->tail, __ATOMIC_ACQUIRE), fill = t->head - tail;

		off = t->head & (t->size - 1);
		pad = off + need > t->size ? t->size - off : 0;
		if (fill + pad + need <= t->size) {
			/* Past half full: the recorder is told once, rather than
			 * left to find it on its next round. */
			if (fill >= t->size / 2 && !t->nudged) {
				t->nudged = 1;
				nudge();
			} else if (fill < t->size / 4) {
				t->nudged = 0;
			}
			break;
		}
		if (ring_grow(t)) {
			/* Not blocking: dropped, counted for the recorder to
			 * say; the nudge once, when the ring first fills. */
			if (no_block) {
				if (!t->nudged) {
					t->nudged = 1;
					nudge();
				}
				__atomic_store_n(&t->hdr->dropped, t->hdr->dropped + 1, __ATOMIC_RELAXED);
				return DROPPED;
			}
			if (room_wait(t))
				return NULL;
		}
	}
	if (__builtin_expect(t->made < t->size, 0))
		ring_pages(t, off + (pad ? 8 : need));
	if (pad) {
		struct stream_rec *r = (struct stream_rec *)(t->data + off);

		r->size = (uint32_t)pad;
		r->kind = STREAM_PAD;
		t->head += pad;
	}
	return t->data + (t->head & (t->size - 1));
}

static void publish(struct stream_thread *t, uint32_t size)
{
	t->head += size;
	__atomic_store_n(&t->hdr->head, t->head, __ATOMIC_RELEASE);
}

static inline struct stream_thread *ready(void)
{
	struct stream_thread *t = &stream_ts;

	if (__builtin_expect(t->state == 1, 1))
		return dead || t->busy ? NULL : t;
	if (t->state == 2 || __atomic_load_n(&asked, __ATOMIC_RELAXED) == 0 || ring_make(t))
		return NULL;
	return t;
}

static void rec_head(struct stream_rec *r, uint32_t size, int kind, void *p)
{
	int cpu = sched_getcpu();

	r->size = size;
	r->kind = (uint16_t)kind;
	r->cpu = cpu < 0 ? 0 : (uint16_t)cpu;
	r->time = now_ns();
	r->ptr = (uint64_t)(uintptr_t)p;
}

/* Fills regs (stream.h's order) as they are when it returns to its
 * caller: ip is its return address, sp the caller's stack pointer there. */
void stream_regs(uint64_t *regs);
__asm__(".text\n"
	".hidden stream_regs\n"
	".type stream_regs, @function\n"
	"stream_regs:\n"
	"	.cfi_startproc\n"
	"	movq %rax, 0(%rdi)\n"
	"	movq %rbx, 8(%rdi)\n"
	"	movq %rcx, 16(%rdi)\n"
	"	movq %rdx, 24(%rdi)\n"
	"	movq %rsi, 32(%rdi)\n"
	"	movq %rdi, 40(%rdi)\n"
	"	movq %rbp, 48(%rdi)\n"
	"	leaq 8(%rsp), %rax\n"
	"	movq %rax, 56(%rdi)\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, 64(%rdi)\n"
	"	movq %r8, 72(%rdi)\n"
	"	movq %r9, 80(%rdi)\n"
	"	movq %r10, 88(%rdi)\n"
	"	movq %r11, 96(%rdi)\n"
	"	movq %r12, 104(%rdi)\n"
	"	movq %r13, 112(%rdi)\n"
	"	movq %r14, 120(%rdi)\n"
	"	movq %r15, 128(%rdi)\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size stream_regs, .-stream_regs\n");

/* Code mapped at [addr, addr + len): noted, unless the calling thread's
 * published filter already holds each of its granules (a JIT turning
 * pages executable within its code space, again and again). */
static void code_mapped(const void *addr, size_t len)
{
	struct stream_thread *t = &stream_ts;
	uint64_t a = (uint64_t)(uintptr_t)addr, g0 = a >> EXECMAP_GRANULE_SHIFT, g1;

	if (t->state == 1 && len && __atomic_load_n(&t->hdr->code_ok, __ATOMIC_ACQUIRE)) {
		g1 = (a + len - 1) >> EXECMAP_GRANULE_SHIFT;
		for (uint64_t k = g0; k <= g1 && k - g0 < 64; k++) {
			unsigned bit = execmap_filter_bit(k << EXECMAP_GRANULE_SHIFT);

			if (!(__atomic_load_n(&t->hdr->code[bit / 64], __ATOMIC_RELAXED) >> (bit % 64) & 1))
				goto noted;
			if (k == g1)
				return;
		}
	}
noted:
	__atomic_store_n(&code_changed_at, now_ns(), __ATOMIC_RELEASE);
}

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*mprotect_fn)(void *, size_t, int);
typedef int (*pkey_mprotect_fn)(void *, size_t, int, int);
typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef int (*dlclose_fn)(void *);

/* The definition after this library, found once. */
#define NEXT_ONCE(type, name)                                                     \
	({                                                                        \
		static type fn_;                                                  \
		type f_ = __atomic_load_n(&fn_, __ATOMIC_ACQUIRE);                \
		if (!f_) {                                                        \
			f_ = (type)sampler_next(name);                            \
			__atomic_store_n(&fn_, f_, __ATOMIC_RELEASE);             \
		}                                                                 \
		f_;                                                               \
	})

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	mmap_fn f = NEXT_ONCE(mmap_fn, "mmap");
	void *m;

	if (!f) {
		errno = ENOSYS;
		return MAP_FAILED;
	}
	m = f(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED && (prot & PROT_EXEC))
		code_mapped(m, len);
	return m;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

int mprotect(void *addr, size_t len, int prot)
{
	mprotect_fn f = NEXT_ONCE(mprotect_fn, "mprotect");
	int r;

	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	r = f(addr, len, prot);
	if (!r && (prot & PROT_EXEC))
		code_mapped(addr, len);
	return r;
}

int pkey_mprotect(void *addr, size_t len, int prot, int pkey)
{
	pkey_mprotect_fn f = NEXT_ONCE(pkey_mprotect_fn, "pkey_mprotect");
	int r;

	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	r = f(addr, len, prot, pkey);
	if (!r && (prot & PROT_EXEC))
		code_mapped(addr, len);
	return r;
}

/*
 * An object's code is mapped by the loader, which nothing here sees, and
 * dlopen must be reached by a tail call: it searches the caller's own
 * paths (RUNPATH, $ORIGIN) by its return address. So an open that may map
 * something leaves the filter pending: dumps go whole until a report has
 * seen the loader at work (r_state not RT_CONSISTENT) and then done
 * (RT_CONSISTENT again, every object of the open mapped). An open that
 * fails before mapping anything leaves it pending until the next that
 * maps: dumps whole, as without a filter. Opening what is loaded maps
 * nothing.
 */
static int dl_pending; /* 0 none, 1 an open may map, 2 the loader was seen at work since */

static inline void dl_pending_check(void)
{
	int p = __atomic_load_n(&dl_pending, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!p, 1))
		return;
	if (__atomic_load_n(&_r_debug.r_state, __ATOMIC_ACQUIRE) != RT_CONSISTENT) {
		if (p == 1)
			__atomic_compare_exchange_n(&dl_pending, &p, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	} else if (p == 2 && __atomic_compare_exchange_n(&dl_pending, &p, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&code_changed_at, now_ns(), __ATOMIC_RELEASE);
	}
}

static int dl_loaded(const char *file)
{
	dlopen_fn f = NEXT_ONCE(dlopen_fn, "dlopen");
	dlclose_fn close_fn = NEXT_ONCE(dlclose_fn, "dlclose");
	void *h;

	if (!file || !f || !close_fn)
		return !file;
	if (!(h = f(file, RTLD_LAZY | RTLD_NOLOAD)))
		return 0;
	close_fn(h);
	return 1;
}

void *dlopen(const char *file, int mode)
{
	dlopen_fn f = NEXT_ONCE(dlopen_fn, "dlopen");

	if (!f)
		return NULL;
	if (__atomic_load_n(&asked, __ATOMIC_RELAXED) != 0 && !dl_loaded(file))
		__atomic_store_n(&dl_pending, 1, __ATOMIC_RELEASE);
	return f(file, mode);
}

void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
	dlmopen_fn f = NEXT_ONCE(dlmopen_fn, "dlmopen");

	if (!f)
		return NULL;
	if (__atomic_load_n(&asked, __ATOMIC_RELAXED) != 0)
		__atomic_store_n(&dl_pending, 1, __ATOMIC_RELEASE);
	return f(lmid, file, mode);
}

/* Whether the ring's published filter holds every executable mapping
 * this process has made: the horizon is read before the filter's bits,
 * which the recorder stores before it. */
static inline const uint64_t *code_filter(const struct stream_thread *t)
{
	uint64_t horizon;

	dl_pending_check();
	horizon = __atomic_load_n(&t->hdr->horizon, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&dl_pending, __ATOMIC_RELAXED) || !__atomic_load_n(&t->hdr->code_ok, __ATOMIC_RELAXED) ||
	    horizon < __atomic_load_n(&code_changed_at, __ATOMIC_RELAXED))
		return NULL;
	return t->hdr->code;
}

static dump_pack_fn dump_pack_best = dump_pack;

/* A report with the stack of the call it is made in (regs as they are in
 * the caller of the caller of this, which inlines it). */
static inline __attribute__((always_inline)) int with_stack(int kind, void *p, size_t size, uint64_t weight,
							     uintptr_t top)
{
	struct stream_thread *t = ready();
	uint64_t regs[STREAM_NR_REGS], dump, blocks;
	const uint64_t *code;
	struct stream_alloc *r;
	size_t depth;
	uint32_t need;

	if (!t)
		return 0;
	stream_regs(regs);
	/* A stack whose extent is not known (a signal's, a coroutine's) is
	 * left to the probe site: the kernel's copy stops at what is mapped,
	 * this one would fault. */
	if (!top || top <= regs[STREAM_REG_SP])
		return 0;
	depth = top - regs[STREAM_REG_SP];
	dump = depth < dump_max ? depth & ~7ull : dump_max;
	code = dump ? code_filter(t) : NULL;
	blocks = code ? (dump / 8 + 63) / 64 : 0;
	/* Room for the most a packed dump can take; what it takes is
	 * published. */
	need = (uint32_t)(sizeof(*r) + 8 * blocks + dump);
	t->busy = 1;
	__asm__ volatile("" ::: "memory");
	if (!(r = (struct stream_alloc *)reserve(t, need)) || (unsigned char *)r == DROPPED) {
		t->busy = 0;
		return r != NULL;
	}
	/* A ring that took over from a full one has no filter yet, and the
	 * full one's is gone with it. */
	if (code && code != t->hdr->code)
		code = NULL;
	if (code) {
		uint64_t *bits = (uint64_t *)(r + 1);
		size_t n = dump_pack_best((const stack_word *)(uintptr_t)regs[STREAM_REG_SP], dump / 8, regs[STREAM_REG_SP],
				     dump, code, bits, bits + blocks);

		need = (uint32_t)(sizeof(*r) + 8 * (blocks + n));
		kind |= STREAM_PACKED;
	} else {
		memcpy(r + 1, (const void *)(uintptr_t)regs[STREAM_REG_SP], dump);
		need = (uint32_t)(sizeof(*r) + dump);
	}
	rec_head(&r->h, need, kind, p);
	r->size = size;
	r->weight = weight;
	memcpy(r->regs, regs, sizeof(regs));
	r->dump_len = dump;
	publish(t, need);
	__asm__ volatile("" ::: "memory");
	t->busy = 0;
	return 1;
}

int stream_alloc(void *p, size_t size, uint64_t weight, uintptr_t top)
{
	return with_stack(STREAM_ALLOC, p, size, weight, top);
}

int stream_free(void *p, uintptr_t top)
{
	struct stream_thread *t;
	struct stream_rec *r;

	/* The connection first: it is what says whether frees carry stacks. */
	if (!(t = ready()))
		return 0;
	if (free_stacks)
		return with_stack(STREAM_FREE, p, 0, 0, top);
	t->busy = 1;
	__asm__ volatile("" ::: "memory");
	if (!(r = (struct stream_rec *)reserve(t, sizeof(*r))) || (unsigned char *)r == DROPPED) {
		t->busy = 0;
		return r != NULL;
	}
	rec_head(r, sizeof(*r), STREAM_FREE, p);
	publish(t, sizeof(*r));
	__asm__ volatile("" ::: "memory");
	t->busy = 0;
	return 1;
}

/* A thread's end: its ring is told closed and let go. What the thread
 * frees after this (other keys' destructors) goes to the probe sites. */
static void thread_end(void *arg)
{
	struct stream_thread *t = &stream_ts;

	(void)arg;
	if (t->state != 1)
		return;
	__atomic_store_n(&t->hdr->closed, 1, __ATOMIC_RELEASE);
	lock_take();
	list_drop(t->hdr);
	lock_give();
	munmap(t->hdr, STREAM_HDR_SIZE + t->size);
	t->hdr = NULL;
	t->state = 2;
}

/* fork: the child holds the lock until the parent's state is copied, then
 * lets go of its parent's rings and connection: it makes its own. */
static void fork_prepare(void)
{
	lock_take();
}

static void fork_parent(void)
{
	lock_give();
}

static void fork_child(void)
{
	/* Its rings' filters will be made for it: until then, none holds. */
	code_changed_at = now_ns();
	while (rings) {
		struct stream_ring_hdr *h = rings;

		rings = OWN(h)->next;
		/* The size it was made with: no recorder writes it. */
		munmap(h, STREAM_HDR_SIZE + h->data_size);
	}
	if (conn >= 0)
		close(conn);
	conn = -1;
	memset(&stream_ts, 0, sizeof(stream_ts));
	lock_give();
}

__attribute__((constructor)) static void stream_init(void)
{
	/* What was mapped before this library started is in no filter yet. */
	code_changed_at = now_ns();
	dump_pack_best = dump_pack_choose();
	end_key_ok = !pthread_key_create(&end_key, thread_end);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
