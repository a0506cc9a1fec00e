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
 * Like the rest of the library it allocates nothing of its own with
 * malloc: rings are memfd pages, and the connection is made with system
 * calls alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sampler.h"
#include "stream.h"

#define RING_BYTES (STREAM_HDR_SIZE + STREAM_DATA_SIZE)

/* The writer's own part of a ring's header page, past what the recorder
 * reads: the list of this process's rings, for a forked child to drop. */
struct ring_own {
	struct stream_ring_hdr *next, *prev;
};
#define OWN(h) ((struct ring_own *)((char *)(h) + STREAM_HDR_SIZE / 2))

struct stream_thread {
	struct stream_ring_hdr *hdr;
	unsigned char *data;
	uint64_t head;		/* what this thread published */
	int state;		/* 0 no ring yet, 1 a ring, 2 none: the probe sites */
	int nudged;		/* told the recorder its ring is filling */
	int busy;		/* a record is being written: a signal handler's
				 * allocation meanwhile takes the probe site */
};

static __thread struct stream_thread stream_ts __attribute__((tls_model("initial-exec")));

static int asked = -1;		/* MEMSIGHT_STREAM read: 1 a stream, 0 none */
static struct sockaddr_un addr;
static socklen_t addr_len;
static uint64_t dump_max;
static int free_stacks;		/* frees carry stacks too */
static int conn = -1;		/* this process's connection */
static pid_t conn_pid;		/* the process that made it */
static int dead;		/* the recorder went away */
static int lock;		/* the connection and the ring list */
static struct stream_ring_hdr *rings;
static pthread_key_t end_key;
static int end_key_ok;

static void lock_take(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void lock_give(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

/* MEMSIGHT_STREAM=PATH,DUMP[:1], once; under the lock. */
static void config_read(void)
{
	const char *v = getenv(STREAM_ENV), *comma;
	char *end;
	size_t n;

	asked = 0;
	if (!v || !(comma = strrchr(v, ',')) || (n = (size_t)(comma - v)) == 0 || n >= sizeof(addr.sun_path))
		return;
	dump_max = strtoull(comma + 1, &end, 10);
	free_stacks = !strcmp(end, ":1");
	if ((*end && !free_stacks) || dump_max > 65536)
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
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
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

/* The calling thread's ring: made, and handed to the recorder before
 * anything is written to it. Returns 0, or -1: this thread reports at the
 * probe sites. */
static int ring_make(struct stream_thread *t)
{
	struct stream_ring_hdr *h;
	void *m;
	int fd;

	t->state = 2;
	lock_take();
	if (asked < 0)
		config_read();
	if (!asked || dead || connect_once()) {
		lock_give();
		return -1;
	}
	fd = memfd_create(STREAM_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Sealed at its size: the recorder maps only rings that cannot
	 * shrink under it. */
	if (fd < 0 || ftruncate(fd, RING_BYTES) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    (m = mmap(NULL, RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		lock_give();
		return -1;
	}
	h = m;
	h->magic = STREAM_MAGIC;
	h->version = STREAM_VERSION;
	h->data_size = STREAM_DATA_SIZE;
	h->pid = conn_pid;
	h->tid = gettid();
	if (hello_send(fd, h->pid, h->tid)) {
		close(fd);
		munmap(m, RING_BYTES);
		lock_give();
		return -1;
	}
	close(fd);
	OWN(h)->prev = NULL;
	OWN(h)->next = rings;
	if (rings)
		OWN(rings)->prev = h;
	rings = h;
	lock_give();
	t->hdr = h;
	t->data = (unsigned char *)m + STREAM_HDR_SIZE;
	t->head = 0;
	t->nudged = 0;
	t->state = 1;
	/* Its end is told at the thread's exit. */
	if (end_key_ok)
		pthread_setspecific(end_key, h);
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

/* Room for need bytes in the thread's ring, padding to its start when
 * they would cross its end; NULL when the recorder is gone. */
static unsigned char *reserve(struct stream_thread *t, uint32_t need)
{
	uint64_t off = t->head & (STREAM_DATA_SIZE - 1), pad = off + need > STREAM_DATA_SIZE ? STREAM_DATA_SIZE - off : 0;

	for (;;) {
		uint64_t tail = __atomic_load_n(&t->hdr->tail, __ATOMIC_ACQUIRE), fill = t->head - tail;

		if (fill + pad + need <= STREAM_DATA_SIZE) {
			/* Past half full: the recorder is told once, rather than
			 * left to find it on its next round. */
			if (fill >= STREAM_DATA_SIZE / 2 && !t->nudged) {
				t->nudged = 1;
				nudge();
			} else if (fill < STREAM_DATA_SIZE / 4) {
				t->nudged = 0;
			}
			break;
		}
		if (room_wait(t))
			return NULL;
	}
	if (pad) {
		struct stream_rec *r = (struct stream_rec *)(t->data + off);

		r->size = (uint32_t)pad;
		r->kind = STREAM_PAD;
		t->head += pad;
	}
	return t->data + (t->head & (STREAM_DATA_SIZE - 1));
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
	struct timespec ts;
	int cpu = sched_getcpu();

	clock_gettime(CLOCK_MONOTONIC, &ts);
	r->size = size;
	r->kind = (uint16_t)kind;
	r->cpu = cpu < 0 ? 0 : (uint16_t)cpu;
	r->time = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

/* A report with the stack of the call it is made in (regs as they are in
 * the caller of the caller of this, which inlines it). */
static inline __attribute__((always_inline)) int with_stack(int kind, void *p, size_t size, uint64_t weight,
							     uintptr_t top)
{
	struct stream_thread *t = ready();
	uint64_t regs[STREAM_NR_REGS], dump;
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
	need = (uint32_t)(sizeof(*r) + dump);
	t->busy = 1;
	__asm__ volatile("" ::: "memory");
	if (!(r = (struct stream_alloc *)reserve(t, need))) {
		t->busy = 0;
		return 0;
	}
	rec_head(&r->h, need, kind, p);
	r->size = size;
	r->weight = weight;
	memcpy(r->regs, regs, sizeof(regs));
	r->dump_len = dump;
	memcpy(r + 1, (const void *)(uintptr_t)regs[STREAM_REG_SP], dump);
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

	if (free_stacks)
		return with_stack(STREAM_FREE, p, 0, 0, top);
	if (!(t = ready()))
		return 0;
	t->busy = 1;
	__asm__ volatile("" ::: "memory");
	if (!(r = (struct stream_rec *)reserve(t, sizeof(*r)))) {
		t->busy = 0;
		return 0;
	}
	rec_head(r, sizeof(*r), STREAM_FREE, p);
	publish(t, sizeof(*r));
	__asm__ volatile("" ::: "memory");
	t->busy = 0;
	return 1;
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
	munmap(t->hdr, RING_BYTES);
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
	while (rings) {
		struct stream_ring_hdr *h = rings;

		rings = OWN(h)->next;
		munmap(h, RING_BYTES);
	}
	if (conn >= 0)
		close(conn);
	conn = -1;
	memset(&stream_ts, 0, sizeof(stream_ts));
	lock_give();
}

__attribute__((constructor)) static void stream_init(void)
{
	end_key_ok = !pthread_key_create(&end_key, thread_end);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
