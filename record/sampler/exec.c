/*
 * record/sampler/exec.c: which programs this process executes run with the
 * library.
 *
 * Preloaded by hand (a service started with LD_PRELOAD), the library
 * removes itself from LD_PRELOAD at start: what the process executes
 * starts without it. Preloaded by a recording (MEMSIGHT_SAMPLE_INHERIT=1),
 * it stays in every program the process executes, whatever environment
 * the exec hands that program (`env LD_PRELOAD=libjemalloc.so.2 prog`,
 * `env -i prog`): first in LD_PRELOAD, with the recording's variables. The
 * exec family and posix_spawn are wrapped; system and popen keep the
 * process's environment, which already has them. The new environment is
 * built on the stack, or in pages of its own: an exec often follows fork
 * in a threaded program, where malloc is not safe.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../formats/guard.h"
#include "sampler.h"
#include "stream.h"

extern char **environ;

#define ENV_INHERIT "MEMSIGHT_SAMPLE_INHERIT"
#define ENV_RATE "MEMSIGHT_SAMPLE_BYTES"

static int inherit;
static char rate_text[32];
static char guard_var[sizeof(GUARD_ENV) + 32]; /* "MEMSIGHT_GUARD=...", "" for none */
static char stream_var[sizeof(STREAM_ENV) + PATH_MAX + 32]; /* "MEMSIGHT_STREAM=...", "" for none */

/* LD_PRELOAD without this library's entry, in place: what this process
 * executes starts without it. */
static void preload_strip(void)
{
	for (char **e = environ; e && *e; e++) {
		char *v, *w, *tok, *end;

		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		v = w = *e + 11;
		for (tok = v; *tok; tok = end) {
			size_t n;

			while (*tok == ':' || *tok == ' ')
				tok++;
			end = tok + strcspn(tok, ": ");
			n = (size_t)(end - tok);
			if (!n)
				break;
			if (memmem(tok, n, "libmemsight-sample", 18))
				continue;
			if (w != v)
				*w++ = ':';
			memmove(w, tok, n);
			w += n;
		}
		*w = 0;
	}
}

int sampler_inherited(void)
{
	static int known = -1;

	/* Read where asked: an allocation can come before this library's
	 * constructor has run. */
	if (known < 0) {
		const char *i = getenv(ENV_INHERIT);

		known = i && !strcmp(i, "1");
	}
	return known;
}

__attribute__((constructor)) static void exec_init(void)
{
	const char *i = getenv(ENV_INHERIT), *r = getenv(ENV_RATE), *st = getenv(STREAM_ENV), *g = getenv(GUARD_ENV);

	inherit = i && !strcmp(i, "1") && sampler_self_path()[0];
	if (r && strlen(r) < sizeof(rate_text))
		strcpy(rate_text, r);
	if (g && sizeof(GUARD_ENV) + strlen(g) < sizeof(guard_var)) {
		strcpy(guard_var, GUARD_ENV "=");
		strcat(guard_var, g);
	}
	if (st && sizeof(STREAM_ENV) + strlen(st) < sizeof(stream_var)) {
		strcpy(stream_var, STREAM_ENV "=");
		strcat(stream_var, st);
	}
	if (!inherit)
		preload_strip();
}

/* Room for an environment of n entries and a LD_PRELOAD of len bytes:
 * the caller's buffers when they are large enough, else fresh pages. */
struct env_room {
	char **v;
	char *preload;
	size_t mapped;
};

static int room_get(struct env_room *r, size_t n, size_t len, char **v_stack, size_t v_cap, char *p_stack, size_t p_cap)
{
	size_t need = (n + 6) * sizeof(char *) + len;

	r->mapped = 0;
	if (n + 6 <= v_cap && len <= p_cap) {
		r->v = v_stack;
		r->preload = p_stack;
		return 0;
	}
	r->v = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->v == MAP_FAILED)
		return -1;
	r->mapped = need;
	r->preload = (char *)(r->v + n + 6);
	return 0;
}

/* env as the recording wants it for a new program: this library first in
 * LD_PRELOAD, then what env preloads; the rate; inheritance on. */
static char **env_fix(char *const *env, struct env_room *r, char **v_stack, size_t v_cap, char *p_stack,
		      size_t p_cap)
{
	static char inherit_var[] = ENV_INHERIT "=1";
	static char rate_var[sizeof(ENV_RATE) + sizeof(rate_text)];
	const char *self = sampler_self_path(), *old = "";
	size_t n = 0, k = 0, len;

	for (; env && env[n]; n++)
		if (!strncmp(env[n], "LD_PRELOAD=", 11))
			old = env[n] + 11;
	len = 11 + strlen(self) + 1 + strlen(old) + 1;
	if (room_get(r, n, len, v_stack, v_cap, p_stack, p_cap))
		return NULL;
	strcpy(r->preload, "LD_PRELOAD=");
	strcat(r->preload, self);
	/* Then what env preloads, without this library. */
	for (const char *tok = old, *end; *tok; tok = end) {
		size_t at = strlen(r->preload), l;

		tok += strspn(tok, ": ");
		end = tok + strcspn(tok, ": ");
		l = (size_t)(end - tok);
		if (!l)
			break;
		if (memmem(tok, l, "libmemsight-sample", 18))
			continue;
		r->preload[at] = ':';
		memcpy(r->preload + at + 1, tok, l);
		r->preload[at + 1 + l] = 0;
	}
	strcpy(rate_var, ENV_RATE "=");
	strcat(rate_var, rate_text);
	for (size_t i = 0; i < n; i++)
		if (strncmp(env[i], "LD_PRELOAD=", 11) && strncmp(env[i], ENV_INHERIT "=", sizeof(ENV_INHERIT)) &&
		    strncmp(env[i], ENV_RATE "=", sizeof(ENV_RATE)) && strncmp(env[i], STREAM_ENV "=", sizeof(STREAM_ENV)) &&
		    strncmp(env[i], GUARD_ENV "=", sizeof(GUARD_ENV)))
			r->v[k++] = env[i];
	r->v[k++] = r->preload;
	r->v[k++] = inherit_var;
	if (rate_text[0])
		r->v[k++] = rate_var;
	if (stream_var[0])
		r->v[k++] = stream_var;
	if (guard_var[0])
		r->v[k++] = guard_var;
	r->v[k] = NULL;
	return r->v;
}

static void room_put(struct env_room *r)
{
	if (r->mapped)
		munmap(r->v, r->mapped);
}

#define ENV_STACK 512

/* Calls next_fn with the environment argument fixed, when inheriting. */
#define WITH_ENV(env, call_with)                                                           \
	do {                                                                               \
		char *v_[ENV_STACK], p_[PATH_MAX + 512];                                   \
		struct env_room r_;                                                        \
		char **e_ = inherit ? env_fix((env), &r_, v_, ENV_STACK, p_, sizeof(p_)) : NULL; \
		int ret_;                                                                  \
                                                                                           \
		if (!e_) {                                                                 \
			char *const *fixed = (env);                                        \
			ret_ = call_with;                                                  \
			return ret_;                                                       \
		}                                                                          \
		{                                                                          \
			char *const *fixed = e_;                                           \
			ret_ = call_with;                                                  \
			room_put(&r_);                                                     \
			return ret_;                                                       \
		}                                                                          \
	} while (0)

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			char *const[], char *const[]);

#define NEXT_OF(type, name) ((type)sampler_next(name))

int execve(const char *path, char *const argv[], char *const envp[])
{
	WITH_ENV(envp, NEXT_OF(execve_fn, "execve")(path, argv, fixed));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	WITH_ENV(envp, NEXT_OF(execve_fn, "execvpe")(file, argv, fixed));
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	WITH_ENV(envp, NEXT_OF(fexecve_fn, "fexecve")(fd, argv, fixed));
}

int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* The execl family: its arguments as a vector on the stack. */
#define LIST_ARGS(first, ap, argv, extra)                                  \
	size_t n_ = 1;                                                     \
	va_list c_;                                                        \
                                                                           \
	va_copy(c_, ap);                                                   \
	while (va_arg(c_, char *))                                         \
		n_++;                                                      \
	va_end(c_);                                                        \
	char *argv[n_ + 1];                                                \
	argv[0] = (char *)(first);                                         \
	for (size_t i_ = 1; i_ <= n_; i_++)                                \
		argv[i_] = i_ < n_ ? va_arg(ap, char *) : NULL;            \
	extra

int execl(const char *path, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv, va_end(ap);)
	return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv, va_end(ap);)
	return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char *const *envp;

	va_start(ap, arg);
	LIST_ARGS(arg, ap, argv, (void)va_arg(ap, char *); envp = va_arg(ap, char *const *); va_end(ap);)
	return execve(path, argv, envp);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		char *const argv[], char *const envp[])
{
	WITH_ENV(envp, NEXT_OF(spawn_fn, "posix_spawn")(pid, path, fa, attr, argv, fixed));
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		 char *const argv[], char *const envp[])
{
	WITH_ENV(envp, NEXT_OF(spawn_fn, "posix_spawnp")(pid, file, fa, attr, argv, fixed));
}
