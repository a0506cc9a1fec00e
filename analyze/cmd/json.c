/*
 * analyze/cmd/json.c: see json.h.
 */
#include "json.h"

#include <math.h>

/* The document is written by one thread, while the analyzer's others
 * (the symbol loader, the trace's reader) never touch its stream: its
 * characters go out without taking the stream's lock each, which cost a
 * third of the time of a large document. */
#undef putc
#define putc(c, f) putc_unlocked(c, f)
#define fwrite(p, s, n, f) fwrite_unlocked(p, s, n, f)
#define fputs(s, f) fputs_unlocked(s, f)

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->empty[0] = 1;
}

/* The length of the well-formed UTF-8 sequence at s, or 0: no overlong
 * forms, no surrogates, nothing past U+10FFFF. */
static int utf8_len(const unsigned char *s)
{
	unsigned c = s[0], min, cp;
	int n;

	if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000, cp = c & 7;
	else if (c >= 0xe0)
		n = 3, min = 0x800, cp = c & 15;
	else if (c >= 0xc2 && c < 0xe0)
		n = 2, min = 0x80, cp = c & 31;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 63);
	}
	return cp >= min && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? n : 0;
}

/* A string with JSON's escapes. Names come from the objects a trace
 * points at, which can be anything: a byte that does not start valid UTF-8
 * becomes U+FFFD, so the document always parses. */
static void escaped(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', f);
	while (s && *s) {
		unsigned char c = *s;
		size_t run = 0;
		int n;

		/* Plain ASCII, most of any name, goes out a run at a time. */
		while (s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
			run++;
		if (run) {
			fwrite(s, 1, run, f);
			s += run;
			continue;
		}
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else if ((n = utf8_len(s))) {
			fwrite(s, 1, (size_t)n, f);
			s += n;
			continue;
		} else
			fputs("\\ufffd", f);
		s++;
	}
	putc('"', f);
}

/* The comma and the key before a value. */
static void member(struct json *j, const char *key)
{
	if (!j->empty[j->depth])
		putc(',', j->f);
	j->empty[j->depth] = 0;
	if (key) {
		escaped(j->f, key);
		putc(':', j->f);
	}
}

static void open_value(struct json *j, const char *key, char open, char close)
{
	member(j, key);
	putc(open, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH) {
		j->depth++;
		j->close[j->depth] = close;
		j->empty[j->depth] = 1;
	}
}

void json_begin(struct json *j, const char *key)
{
	open_value(j, key, '{', '}');
}

void json_begin_array(struct json *j, const char *key)
{
	open_value(j, key, '[', ']');
}

void json_end(struct json *j)
{
	if (!j->depth)
		return;
	putc(j->close[j->depth], j->f);
	if (!--j->depth) {
		putc('\n', j->f);
		j->empty[0] = 1;
	}
}

void json_str(struct json *j, const char *key, const char *v)
{
	member(j, key);
	escaped(j->f, v);
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_double(struct json *j, const char *key, const char *fmt, double v)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->f, fmt, v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, int v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}
