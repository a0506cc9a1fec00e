/*
 * analyze/cmd/json.c: see json.h.
 */
#include "json.h"

#include <math.h>

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->empty[0] = 1;
}

static void escaped(FILE *f, const char *s)
{
	putc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
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
