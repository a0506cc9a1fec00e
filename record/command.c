/*
 * record/command.c: the command the recorder runs: started stopped at a pipe
 * until the events are open, released into exec, reaped, and ended when
 * the recording ends first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "../formats/guard.h"
#include "recorder.h"
#include "sampler/stream.h"

/* The command runs with the allocation sampler preloaded, at the rate
 * asked, and hands it on to what it runs: it is all recorded. */
static int sampler_env(struct recorder *rc)
{
	const char *old = getenv("LD_PRELOAD");
	char rate[32], *v;

	if (asprintf(&v, "%s%s%s", rc->sampler, old && *old ? ":" : "", old ? old : "") < 0)
		return -1;
	snprintf(rate, sizeof(rate), "%llu", (unsigned long long)rc->sample_bytes);
	if (setenv("LD_PRELOAD", v, 1) || setenv("MEMSIGHT_SAMPLE_BYTES", rate, 1) ||
	    setenv("MEMSIGHT_SAMPLE_INHERIT", "1", 1))
		return -1;
	if (rc->guard) {
		snprintf(rate, sizeof(rate), "%llu%s", (unsigned long long)rc->guard, rc->guard_recover ? ",recover" : "");
		if (setenv(GUARD_ENV, rate, 1))
			return -1;
	}
	/* Its reports, without traps, where the recorder listens for them. */
	return rc->as.env[0] ? setenv(STREAM_ENV, rc->as.env, 1) : 0;
}

static int command_not_found(const char *name)
{
	return msg_error("command not found: '%s': check the name or give its path", name);
}

/* Whether execvp would find the command: a name with a slash is that
 * file, any other is looked up in PATH. */
static int command_findable(const char *name)
{
	const char *path = getenv("PATH"), *p;
	char full[PATH_MAX];

	if (strchr(name, '/'))
		return access(name, F_OK) == 0;
	for (p = path && *path ? path : "/usr/local/bin:/bin:/usr/bin"; ; p++) {
		const char *end = strchrnul(p, ':');
		int len = (int)(end - p);

		/* An empty entry is the current directory, as execvp has it. */
		if (snprintf(full, sizeof(full), "%.*s%s%s", len, p, len ? "/" : "", name) < (int)sizeof(full) &&
		    !access(full, X_OK))
			return 1;
		if (!*end)
			return 0;
		p = end;
	}
}

int rec_command_check(struct recorder *rc)
{
	if (!rc->command[0][0] || !command_findable(rc->command[0]))
		return command_not_found(rc->command[0]);
	return 0;
}

int rec_child_start(struct recorder *rc, const sigset_t *oldmask)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return msg_error("cannot create a pipe: %s", strerror(errno));
	rc->child = fork();
	if (rc->child < 0)
		return msg_error("cannot fork: %s", strerror(errno));
	if (!rc->child) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		/* Wait until the events are open; EOF means the recorder gave up. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (rc->sampler[0] && sampler_env(rc))
			_exit(127);
		execvp(rc->command[0], rc->command);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	rc->go_fd = go[1];
	rc->err_fd = err[0];
	if (rc->leak_check) {
		int r = leakcheck_follow(&rc->lc, rc->child);

		if (r)
			return msg_error("--leak-check cannot follow the command (ptrace: %s)%s", strerror(-r),
				     r == -EPERM ? ": it needs root or CAP_SYS_PTRACE, and kernel.yama.ptrace_scope at most 2"
						 : "");
	}
	return 0;
}

int rec_child_release(struct recorder *rc)
{
	int e = 0;
	ssize_t n;

	if (write(rc->go_fd, "g", 1) != 1)
		return msg_error("cannot start '%s': %s", rc->command[0], strerror(errno));
	close(rc->go_fd);
	rc->go_fd = -1;
	/* The error pipe closes on a successful exec. */
	do
		n = read(rc->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(rc->err_fd);
	rc->err_fd = -1;
	if (n == sizeof(e)) {
		int st;

		/* Followed for --leak-check, it stops at its exit first: let
		 * it go, and its end follows (files held open until then keep
		 * the probes' guard waiting). */
		while (waitpid(rc->child, &st, __WALL) == rc->child && WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, rc->child, NULL, NULL);
		rc->child = 0;
		if (e == ENOENT)
			return command_not_found(rc->command[0]);
		return msg_error("cannot run '%s': %s", rc->command[0], strerror(e));
	}
	return 0;
}

void rec_child_stop(struct recorder *rc)
{
	/* -d ran out, or we were told to stop: end the command like timeout(1).
	 * Not when the disk filled: the command is the user's to finish, and
	 * it does so unrecorded. */
	if (rc->command && rc->child > 0 && !rc->child_done) {
		if (rc->disk_full)
			msg_note("waiting for the command to end, unrecorded");
		else {
			rc->child_stopped = 1;
			kill(rc->child, SIGTERM);
		}
		/* Followed for --leak-check: stops come before the end, its
		 * threads' too once its main thread has gone. */
		for (;;) {
			int st, flags = rc->leak_check && leakcheck_following_threads(&rc->lc) ? __WALL : 0;
			struct rusage ru;
			pid_t p = wait4(flags ? -1 : rc->child, &st, flags, &ru);

			if (p < 0 && errno == EINTR)
				continue;
			if (p < 0)
				break;
			if (p != rc->child) {
				leakcheck_status(&rc->lc, p, st);
				continue;
			}
			rc->child_status = st;
			rc->child_ru = ru;
			if (!rc->leak_check || !leakcheck_status(&rc->lc, rc->child, rc->child_status)) {
				rc->child_done = 1;
				break;
			}
		}
	}
}

int rec_child_reap(struct recorder *rc)
{
	pid_t p;
	int st;
	struct rusage ru;

	while ((p = wait4(-1, &st, WNOHANG | (rc->leak_check && leakcheck_following_threads(&rc->lc) ? __WALL : 0),
			  &ru)) > 0) {
		/* A stop of the command --leak-check follows, or of one of its
		 * threads, not its end. */
		if (p != rc->child && rc->leak_check) {
			leakcheck_status(&rc->lc, p, st);
			continue;
		}
		if (p == rc->child && rc->leak_check && leakcheck_status(&rc->lc, p, st))
			continue;
		if (p == rc->child) {
			rc->child_status = st;
			rc->child_ru = ru;
			rc->child_done = 1;
		}
	}
	return rc->child_done;
}

