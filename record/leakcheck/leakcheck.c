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
#include <sys/syscall.h>
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

/* The registers of stopped thread tid, and the system call it is in
 * (-1 for none: stopped out of user code by a signal or an interrupt). */
static int thread_regs(pid_t tid, struct reach_thread *t, long *syscall)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return -errno;
	*t = (struct reach_thread){ tid, r.rsp, { r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9,
						  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15 }, 16, (long)r.orig_rax >= 0 };
	*syscall = (long)r.orig_rax;
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

static void thread_add(struct leakcheck *lc, pid_t tid);

int leakcheck_follow(struct leakcheck *lc, pid_t child)
{
	/* Only exits stop it and its threads, each followed from its making
	 * so that its registers are there when the process ends: no stop at
	 * exec, none for its children. */
	if (ptrace(PTRACE_SEIZE, child, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACECLONE)))
		return -errno;
	lc->pid = child;
	thread_add(lc, child);
	return 0;
}

/* Whether thread tid of tgid is there still, dying or not: not yet a
 * zombie; and, when killed is given, whether a SIGKILL is on its way to
 * it (exit_group sends one to each of the others). */
static int thread_there(pid_t tgid, pid_t tid, int *killed)
{
	char path[96], line[256];
	int there = 1;
	FILE *f;

	if (killed)
		*killed = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)tgid, (int)tid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long pending;

		if (!strncmp(line, "State:", 6))
			there &= !strchr(line + 6, 'Z') && !strchr(line + 6, 'X');
		else if (killed && sscanf(line, "SigPnd: %llx", &pending) == 1)
			*killed = !!(pending & (1ull << (SIGKILL - 1)));
	}
	fclose(f);
	return there;
}

/* Whether thread tid of tgid lives on: there, and not killed with the
 * rest of its process. */
static int thread_lives(pid_t tgid, pid_t tid)
{
	int killed;

	return thread_there(tgid, tid, &killed) && !killed;
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

static int thread_held(const struct leakcheck *lc, pid_t tid)
{
	for (size_t i = 0; i < lc->nr_held; i++)
		if (lc->held[i].tid == tid)
			return 1;
	return 0;
}

/* The process thread tid belongs to, or -1. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* The threads of tgid that live on but for tid and those held, each seized (and new
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

		if (t <= 0 || t == tid || thread_held(lc, t) || !thread_lives(tgid, t))
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
	for (size_t i = 0; i < lc->nr_held; i++)
		if (lc->held[i].tid == tid)
			lc->held[i] = lc->held[--lc->nr_held];
}

static int thread_hold(struct leakcheck *lc, const struct reach_thread *t)
{
	if (lc->nr_held == lc->alloc_held) {
		size_t na = lc->alloc_held ? 2 * lc->alloc_held : 16;
		struct reach_thread *v = realloc(lc->held, na * sizeof(*v));

		if (!v)
			return -ENOMEM;
		lc->held = v;
		lc->alloc_held = na;
	}
	lc->held[lc->nr_held++] = *t;
	return 0;
}

/* The process is ending, and every thread followed that has not come to
 * its exit stop is gone: scan with the registers of all those held, then
 * let them all go. Until then, wait: killed with the rest, each thread
 * comes to its exit stop or to its end. */
static void group_end(struct leakcheck *lc)
{
	for (size_t i = 0; i < lc->nr_threads; i++)
		if (!thread_held(lc, lc->threads[i]) && thread_there(lc->pid, lc->threads[i], NULL))
			return;
	scan(lc, lc->pid, lc->held, lc->nr_held);
	lc->nr_held = 0;
	leakcheck_release(lc);
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
	free(lc->held);
	lc->held = NULL;
	lc->nr_held = lc->alloc_held = 0;
}

int leakcheck_status(struct leakcheck *lc, pid_t pid, int status)
{
	int event = (unsigned)status >> 16;

	if (!WIFSTOPPED(status)) {
		thread_forget(lc, pid);
		if (lc->nr_held)
			group_end(lc);
		return 0;
	}
	if (event == PTRACE_EVENT_EXIT) {
		struct reach_thread t;
		long nr = -1;
		int have = !thread_regs(pid, &t, &nr);

		/* One thread's own end (the exit system call: pthread_exit)
		 * while others live on is not the process's. When it is the
		 * main thread's, what the others allocate and hold from now
		 * on is to be scanned too: each is followed to its end. */
		if (nr == __NR_exit && others_living(lc, lc->pid, pid, 0)) {
			/* Those made before they were followed are seized, as
			 * those made while they were being seized. */
			if (pid == lc->pid)
				for (size_t before = (size_t)-1; before != lc->nr_threads;) {
					before = lc->nr_threads;
					others_living(lc, lc->pid, pid, 1);
				}
			thread_forget(lc, pid);
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return 1;
		}
		/* The process ends (exit_group, or a signal that kills it).
		 * Each thread stops here with its registers, the memory whole
		 * while one is held: the threads still running at the end hold
		 * blocks on their stacks and in their registers, as valgrind
		 * counts them. */
		if (!have) {
			t = (struct reach_thread){ .tid = pid };
			t.in_syscall = 1;
		}
		if (thread_hold(lc, &t)) {
			thread_forget(lc, pid);
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
		}
		group_end(lc);
	} else if (event == PTRACE_EVENT_CLONE) {
		/* The new thread is followed from its first stop. */
		unsigned long child;

		if (!ptrace(PTRACE_GETEVENTMSG, pid, NULL, &child))
			thread_add(lc, (pid_t)child);
		ptrace(PTRACE_CONT, pid, NULL, NULL);
	} else if (event == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP) {
		/* A thread's first stop, when it is seized or made. A clone
		 * that made a process of its own is no thread of this one:
		 * not followed. */
		if (pid != lc->pid && tgid_of(pid) != lc->pid) {
			thread_forget(lc, pid);
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
		} else {
			ptrace(PTRACE_CONT, pid, NULL, NULL);
		}
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
		long nr;
		int st;

		if (tid <= 0 || ptrace(PTRACE_SEIZE, tid, NULL, NULL))
			continue;
		seized[nseized++] = tid;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
			continue;
		if (!thread_regs(tid, &th[n], &nr))
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
