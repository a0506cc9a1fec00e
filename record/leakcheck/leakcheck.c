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

int leakcheck_status(struct leakcheck *lc, pid_t pid, int status)
{
	int event = (unsigned)status >> 16;

	if (!WIFSTOPPED(status))
		return 0;
	if (event == PTRACE_EVENT_EXIT) {
		struct reach_thread t;

		/* Exiting, memory still whole: the last moment to look. The
		 * other threads are not stopped: their stacks count whole. */
		if (!thread_regs(pid, &t)) {
			t.in_syscall = 1;
			scan(lc, pid, &t, 1);
		}
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
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
