/*
 * record/leakcheck/leakcheck.c: stopping recorded processes for --leak-check; see
 * leakcheck.h.
 */
#include "leakcheck.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "reach.h"

#define LEAKCHECK_MAX_THREADS 4096

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int thread_regs(pid_t tid, struct reach_thread *t)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return -errno;
	*t = (struct reach_thread){ tid, r.rsp, { r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9,
						  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15 }, 16, 0 };
	return 0;
}

static void scan(struct leakcheck *lc, pid_t pid, const struct reach_thread *th, size_t n)
{
	uint64_t t0 = now_ns();
	int r = reach_scan(pid, th, n, lc->emit, lc->arg);

	lc->scan_ns += now_ns() - t0;
	if (r) {
		lc->failed++;
		lc->last_err = -r;
	} else {
		lc->scans++;
	}
}

int leakcheck_follow(pid_t child)
{
	/* Only the exit stops it: no stop at exec, none for its children. */
	return ptrace(PTRACE_SEIZE, child, NULL, (void *)(long)PTRACE_O_TRACEEXIT) ? -errno : 0;
}

/* Whether thread tid of tgid lives on: not a zombie, and not killed with
 * the rest of its process (exit_group sends each a SIGKILL). */
static int thread_lives(pid_t tgid, pid_t tid)
{
	char path[96], line[256];
	int lives = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)tgid, (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long pending;

		if (!strncmp(line, "State:", 6))
			lives &= !strchr(line + 6, 'Z') && !strchr(line + 6, 'X');
		else if (sscanf(line, "SigPnd: %llx", &pending) == 1)
			lives &= !(pending & (1ull << (SIGKILL - 1)));
	}
	fclose(f);
	return lives;
}

static void thread_add(struct leakcheck *lc, pid_t tid)
{
	if (lc->nr_threads == lc->alloc_threads) {
		size_t na = lc->alloc_threads ? 2 * lc->alloc_threads : 16;
		pid_t *v = realloc(lc->threads, na * sizeof(*v));

		if (!v)
			return;
		lc->threads = v;
		lc->alloc_threads = na;
	}
	lc->threads[lc->nr_threads++] = tid;
}

/* The threads of tgid that live on but for tid, each seized (and new
 * ones followed as they are made) when seize is set; how many. */
static size_t others_living(struct leakcheck *lc, pid_t tgid, pid_t tid, int seize)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
	if (!(d = opendir(path)))
		return 0;
	while ((de = readdir(d))) {
		pid_t t = atoi(de->d_name);
		size_t i;

		if (t <= 0 || t == tid || !thread_lives(tgid, t))
			continue;
		n++;
		if (!seize)
			continue;
		for (i = 0; i < lc->nr_threads && lc->threads[i] != t; i++)
			;
		if (i < lc->nr_threads)
			continue;
		if (!ptrace(PTRACE_SEIZE, t, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACECLONE)))
			thread_add(lc, t);
	}
	closedir(d);
	return n;
}

static void thread_forget(struct leakcheck *lc, pid_t tid)
{
	for (size_t i = 0; i < lc->nr_threads; i++)
		if (lc->threads[i] == tid)
			lc->threads[i] = lc->threads[--lc->nr_threads];
}

int leakcheck_following_threads(const struct leakcheck *lc)
{
	return lc->nr_threads > 0;
}

void leakcheck_release(struct leakcheck *lc)
{
	for (size_t i = 0; i < lc->nr_threads; i++)
		ptrace(PTRACE_DETACH, lc->threads[i], NULL, NULL);
	free(lc->threads);
	lc->threads = NULL;
	lc->nr_threads = lc->alloc_threads = 0;
}

int leakcheck_status(struct leakcheck *lc, pid_t pid, int status)
{
	int event = (unsigned)status >> 16;
	pid_t tgid = lc->tgid ? lc->tgid : pid;

	if (!WIFSTOPPED(status)) {
		thread_forget(lc, pid);
		return 0;
	}
	if (event == PTRACE_EVENT_EXIT) {
		struct reach_thread t;

		/* The main thread ends while others run on (pthread_exit): the
		 * process is not done, and what they allocate and hold from now
		 * on is to be scanned too. Follow them, to the last one's exit. */
		if (!lc->tgid && others_living(lc, pid, pid, 0)) {
			lc->tgid = pid;
			/* Those made while the first were seized are followed
			 * through their makers, or found by looking again. */
			for (size_t before = (size_t)-1; before != lc->nr_threads;) {
				before = lc->nr_threads;
				others_living(lc, pid, pid, 1);
			}
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return 1;
		}
		/* Exiting, memory still whole: the last moment to look. The
		 * other threads are not stopped: their stacks count whole. */
		if ((!lc->tgid || !others_living(lc, tgid, pid, 0)) && !thread_regs(pid, &t)) {
			t.in_syscall = 1;
			scan(lc, tgid, &t, 1);
			lc->tgid = 0;
			thread_forget(lc, pid);
			/* The others are gone or going: let go of them all. */
			leakcheck_release(lc);
		}
		thread_forget(lc, pid);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	} else if (event == PTRACE_EVENT_CLONE) {
		/* The new thread is followed from its first stop. */
		unsigned long child;

		if (!ptrace(PTRACE_GETEVENTMSG, pid, NULL, &child))
			thread_add(lc, (pid_t)child);
		ptrace(PTRACE_CONT, pid, NULL, NULL);
	} else if (event == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP) {
		/* A thread's first stop, when it is seized or made. */
		ptrace(PTRACE_CONT, pid, NULL, NULL);
	} else if (event == PTRACE_EVENT_STOP) {
		/* A group stop (SIGSTOP): it stays stopped, as without us. */
		ptrace(PTRACE_LISTEN, pid, NULL, NULL);
	} else {
		/* A signal on its way to the child: deliver it. */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(status));
	}
	return 1;
}

int leakcheck_attach(struct leakcheck *lc, pid_t pid)
{
	struct reach_thread *th = calloc(LEAKCHECK_MAX_THREADS, sizeof(*th));
	pid_t *seized = calloc(LEAKCHECK_MAX_THREADS, sizeof(*seized));
	size_t n = 0, nseized = 0;
	char path[64];
	struct dirent *de;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!th || !seized || !(d = opendir(path))) {
		r = th && seized ? -errno : -ENOMEM;
		goto out;
	}
	/* Each thread, stopped wherever it is. */
	while ((de = readdir(d)) && nseized < LEAKCHECK_MAX_THREADS) {
		pid_t tid = atoi(de->d_name);
		int st;

		if (tid <= 0 || ptrace(PTRACE_SEIZE, tid, NULL, NULL))
			continue;
		seized[nseized++] = tid;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			continue;
		if (!thread_regs(tid, &th[n]))
			n++;
	}
	closedir(d);
	if (!nseized) {
		r = -EPERM;
		goto out;
	}
	scan(lc, pid, th, n);
out:
	for (size_t i = 0; i < nseized; i++)
		ptrace(PTRACE_DETACH, seized[i], NULL, NULL);
	if (r) {
		lc->failed++;
		lc->last_err = -r;
	}
	free(th);
	free(seized);
	return r;
}
