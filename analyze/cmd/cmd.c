/*
 * analyze/cmd/cmd.c: helpers shared by the subcommands.
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_open(struct session *s, const char *path)
{
	char err[512];

	if (session_open(s, path, err, sizeof(err))) {
		msg_error("%s", err);
		session_release(s);
		return -1;
	}
	session_warn_incomplete(s);
	return 0;
}

const char *fmt_bytes(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
	return buf;
}

int cmd_usage(const char *usage, int ok)
{
	fputs(usage, ok ? stdout : stderr);
	return ok ? 0 : 2;
}

int cmd_one_file(int argc)
{
	if (optind == argc - 1)
		return 0;
	msg_error("give one trace file (see %s -h)", msg_who());
	return -1;
}

int parse_u64(const char *opt, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || arg[0] == '-' || !arg[0]) {
		msg_error("invalid value '%s' for %s: give a non-negative number", arg, opt);
		return -1;
	}
	*out = v;
	return 0;
}

void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

const char *frame_obj_base(const struct frame *f)
{
	const char *o = f->kernel ? "kernel.kallsyms" : f->obj ? f->obj : "unknown";
	const char *b = strrchr(o, '/');

	return b ? b + 1 : o;
}

void json_frames(const struct frame *fr, int n, int lines)
{
	putchar('[');
	for (int j = 0; j < n; j++) {
		const struct frame *f = &fr[j];
		const char *file;
		int line;

		printf("%s{\"function\":", j ? "," : "");
		json_str(f->sym ? f->sym : NULL);
		printf(",\"offset\":%llu,\"object\":", (unsigned long long)f->off);
		json_str(frame_obj_base(f));
		printf(",\"kernel\":%s,\"inlined\":%s", f->kernel ? "true" : "false", f->inlined ? "true" : "false");
		if (lines && !frame_srcline(f, &file, &line)) {
			printf(",\"file\":");
			json_str(file);
			printf(",\"line\":%d", line);
		}
		putchar('}');
	}
	putchar(']');
}

void print_frames(const struct frame *fr, int n, int lines, const char *indent)
{
	for (int j = 0; j < n; j++) {
		char name[512];
		const char *file;
		int line;

		printf("%s%s [%s]", indent, frame_name(&fr[j], name, sizeof(name), 1), frame_obj_base(&fr[j]));
		if (lines && !frame_srcline(&fr[j], &file, &line))
			printf(" %s:%d", file, line);
		putchar('\n');
	}
	if (!n)
		printf("%s(no stack recorded)\n", indent);
}

int cmd_need_group(struct session *s, const char *what, const char *group, const char *alt)
{
	if (session_group_recorded(s, group) || (alt && session_group_recorded(s, alt)))
		return 0;
	return msg_error("'%s' has no %s events: record them with 'memsight record -e %s'%s%s%s", s->path, what, group,
		     alt ? " (or -e " : "", alt ? alt : "", alt ? ")" : "");
}

int cmd_open_group(struct session *s, const char *path, const char *what, const char *group, const char *alt)
{
	if (cmd_open(s, path))
		return -1;
	if (cmd_need_group(s, what, group, alt)) {
		session_release(s);
		return -1;
	}
	return 0;
}
