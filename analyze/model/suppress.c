/*
 * analyze/model/suppress.c: LeakSanitizer-style suppression matching.
 */
#include "suppress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the C and C++ runtimes allocate once and keep by design: never the
 * program's leak. Matched against the runtime's own frames of a stack
 * (below), by function name, or "[object]+0x..." when a frame has none. */
static const char *const defaults[] = {
	"_IO_file_doallocate", /* stdio buffers */
	"^_dl_",		/* the dynamic loader: link maps, TLS blocks */
	"^[ld-linux",		/* any allocation the loader itself makes */
	"__libc_setup_tls",
	"allocate_dtv",
	"__new_exitfn",		/* atexit tables */
	"^_nl_",		/* locale data */
	"setlocale",
	"tzset_internal",	/* time zone data: the TZ string, the zone file's */
	"__tzfile_read",
	"__tzstring",
	"__add_to_environ",	/* setenv's copies, which environ keeps */
	"^__nss_",		/* name service modules */
	"^__gconv",		/* iconv's conversion modules */
	"_dlerror_run",		/* dlerror's message buffer */
	"^[libstdc++.so.6",	/* libstdc++'s emergency exception pool: its only unnamed caller */
	NULL,
};

/* The objects whose frames are the runtime's own. */
static const char *const runtime_objects[] = {
	"libc.so", "ld-linux", "libstdc++.so", "libgcc_s.so", "libm.so", "libpthread.so", "libdl.so",
	"libjemalloc.so", "libtcmalloc", "libmimalloc.so", NULL,
};

static int runtime_frame(const struct frame *f)
{
	const char *b = f->obj ? strrchr(f->obj, '/') : NULL;

	b = b ? b + 1 : f->obj;
	for (int k = 0; b && runtime_objects[k]; k++)
		if (!strncmp(b, runtime_objects[k], strlen(runtime_objects[k])))
			return 1;
	return 0;
}

void suppress_init(struct suppress *s)
{
	memset(s, 0, sizeof(*s));
}

void suppress_release(struct suppress *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->patterns[i]);
	free(s->patterns);
	memset(s, 0, sizeof(*s));
}

static int push(struct suppress *s, const char *p, size_t len)
{
	if (s->nr == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 32;
		char **v = realloc(s->patterns, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->patterns = v;
		s->alloc = n;
	}
	s->patterns[s->nr] = strndup(p, len);
	return s->patterns[s->nr++] ? 0 : -ENOMEM;
}

int suppress_add_defaults(struct suppress *s)
{
	s->defaults = 1;
	return 0;
}

int suppress_load(struct suppress *s, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t alloc = 0;
	int n = 0, ret = 0;

	if (!f) {
		snprintf(err, errlen, "cannot open suppression file '%s': %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &alloc, f) > 0) {
		char *p = line, *e;

		n++;
		p += strspn(p, " \t");
		e = p + strcspn(p, "\r\n");
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (p == e || *p == '#')
			continue;
		if (strncmp(p, "leak:", 5)) {
			snprintf(err, errlen, "%s:%d: expected 'leak:PATTERN', got '%.*s'", path, n, (int)(e - p), p);
			ret = -1;
			break;
		}
		p += 5;
		if (p == e) {
			snprintf(err, errlen, "%s:%d: 'leak:' needs a pattern", path, n);
			ret = -1;
			break;
		}
		if (push(s, p, e - p)) {
			snprintf(err, errlen, "out of memory");
			ret = -1;
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

/* Glob with '*', anchored at both ends. */
static int glob_here(const char *p, const char *t, int anchored_end)
{
	for (; *p && *p != '$'; p++, t++) {
		if (*p == '*') {
			for (p++; *p == '*'; p++)
				;
			if (!*p || (*p == '$' && !anchored_end))
				return 1;
			for (; *t; t++)
				if (glob_here(p, t, anchored_end))
					return 1;
			return !*p || (*p == '$' && !*t);
		}
		if (!*t || *p != *t)
			return 0;
	}
	return !anchored_end || !*t;
}

static int pattern_match(const char *pat, const char *text)
{
	int start = pat[0] == '^';
	size_t l = strlen(pat);
	int end = l && pat[l - 1] == '$';

	if (start)
		return glob_here(pat + 1, text, end);
	for (const char *t = text; *t; t++)
		if (glob_here(pat, t, end))
			return 1;
	return 0;
}

const char *suppress_match(const struct suppress *s, const struct frame *f, int n)
{
	/* The built-in list looks at the runtime's frames from the
	 * allocation up to the first frame of the program: an allocation the
	 * runtime made for itself (tzset under localtime under main). An
	 * allocation of the program's own, made in a constructor the loader
	 * ran, keeps the loader's frames below the program's and stays. */
	for (int i = 1; s->defaults && i < n && runtime_frame(&f[i]); i++) {
		char name[512];

		frame_name(&f[i], name, sizeof(name), 0);
		for (int k = 0; defaults[k]; k++)
			if (pattern_match(defaults[k], name))
				return defaults[k];
		if (strstr(f[i].obj, "/ld-linux"))
			return "^[ld-linux";
	}
	for (int i = 0; i < n; i++) {
		const char *obj = f[i].obj ? strrchr(f[i].obj, '/') : NULL;

		obj = obj ? obj + 1 : f[i].obj;
		for (size_t k = 0; k < s->nr; k++) {
			if (f[i].sym && pattern_match(s->patterns[k], f[i].sym))
				return s->patterns[k];
			if (obj && pattern_match(s->patterns[k], obj))
				return s->patterns[k];
		}
	}
	return NULL;
}

int suppress_setup(struct suppress *s, int defaults, const char *file, char *err, size_t errlen)
{
	suppress_init(s);
	if (defaults && suppress_add_defaults(s)) {
		snprintf(err, errlen, "out of memory");
		suppress_release(s);
		return -1;
	}
	if (file && suppress_load(s, file, err, errlen)) {
		suppress_release(s);
		return -1;
	}
	return 0;
}
