/*
 * formats/opts.c: the option tables of opts.h, parsed with getopt_long and
 * printed as help.
 */
#include "opts.h"
#include "suggest.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

/* The help's text column: options on the left, what they do from here. */
#define HELP_COLUMN 25
#define MAX_OPTS 64

/* Long-only options get codes above every char. */
#define LONG_CODE(i) (256 + (int)(i))

static int is_option(const struct opt *o)
{
	return o->type != OPT_GROUP_ && o->type != OPT_COMMAND_;
}

static void usage_line(FILE *f, const struct opt *o)
{
	char left[96];
	int n;

	n = snprintf(left, sizeof(left), "  %c%c%s--%s", o->short_name ? '-' : ' ', o->short_name ? o->short_name : ' ',
		     o->short_name ? ", " : "  ", o->long_name);
	if (o->argh)
		n += snprintf(left + n, sizeof(left) - n, o->optional_arg ? "[=%s]" : " %s", o->argh);
	fputs(left, f);
	/* Each line of the help at the column, the first beside the option
	 * when it fits. */
	for (const char *h = o->help; *h;) {
		const char *nl = strchr(h, '\n');
		int len = nl ? (int)(nl - h) : (int)strlen(h);

		if (h == o->help && n <= HELP_COLUMN - 2)
			fprintf(f, "%*s%.*s\n", HELP_COLUMN - n, "", len, h);
		else
			fprintf(f, "%s%*s%.*s\n", h == o->help ? "\n" : "", HELP_COLUMN, "", len, h);
		h += len + (nl != NULL);
	}
}

void opts_usage(FILE *f, const struct opt *opts, const char *usage)
{
	static const struct opt help = OPT_BOOL('h', "help", NULL, "show this help");
	int helped = 0;

	fputs(usage, f);
	fputc('\n', f);
	/* -h closes the command's own options, before any group. */
	for (const struct opt *o = opts;; o++) {
		if (!helped && (o->type == OPT_END_ || o->type == OPT_GROUP_)) {
			usage_line(f, &help);
			helped = 1;
		}
		if (o->type == OPT_END_)
			break;
		if (o->type == OPT_GROUP_)
			fprintf(f, "\n%s\n", o->help);
		else if (o->help && is_option(o))
			usage_line(f, o);
	}
}

int opts_u64(const char *name, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || arg[0] == '-' || !arg[0])
		return msg_error("invalid value '%s' for %s: give a non-negative number", arg, name);
	*out = v;
	return 0;
}

int opts_seconds(const char *s, size_t len, double *out)
{
	static const struct {
		const char *unit;
		double seconds;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60 }, { "h", 3600 } };
	char buf[64], *end;
	double v;

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (end == buf || errno || !(v >= 0) || v > 1e12)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*out = v * units[i].seconds;
			return 0;
		}
	return -1;
}

static int apply(const struct opt *o, const char *arg, void *ctx)
{
	char name[64];

	switch (o->type) {
	case OPT_SET_:
		*(int *)o->value = o->set;
		return 0;
	case OPT_STRING_:
		*(const char **)o->value = arg;
		return 0;
	case OPT_U64_:
		snprintf(name, sizeof(name), "--%s", o->long_name);
		return opts_u64(name, arg, o->value);
	case OPT_CALLBACK_:
		return o->parse(o, arg, ctx);
	default:
		return 0;
	}
}

/* getopt_long's own messages name argv[0]; ours name the command, and
 * for a long option mistyped, the one it likely was. */
static int bad_option(char **argv, int c, const struct option *longopts, size_t nl)
{
	const char *arg = argv[optind - 1], *names[MAX_OPTS + 2], *near = NULL;
	char word[64];

	if (c == ':') {
		msg_error("option '%s' needs a value; see '%s -h'", arg, msg_who());
		return 2;
	}
	if (optopt && optopt < 256 && arg[0] == '-' && arg[1] != '-') {
		msg_error("unknown option '-%c'; see '%s -h'", optopt, msg_who());
		return 2;
	}
	if (!strncmp(arg, "--", 2)) {
		snprintf(word, sizeof(word), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		for (size_t i = 0; i < nl; i++)
			names[i] = longopts[i].name;
		near = suggest_closest(word, names, nl);
	}
	if (near)
		msg_error("unknown option '%s' (did you mean '--%s'?); see '%s -h'", arg, near, msg_who());
	else
		msg_error("unknown option '%s'; see '%s -h'", arg, msg_who());
	return 2;
}

int opts_parse(int argc, char **argv, const struct opt *opts, const char *usage, void *ctx)
{
	struct option longopts[MAX_OPTS + 2];
	char shortopts[2 * MAX_OPTS + 4] = ":";
	size_t nl = 0, ns = 1;
	int c;

	for (size_t i = 0; opts[i].type != OPT_END_; i++)
		if (opts[i].type == OPT_COMMAND_)
			memcpy(shortopts, "+:", 3), ns = 2;

	for (size_t i = 0; opts[i].type != OPT_END_ && nl < MAX_OPTS; i++) {
		const struct opt *o = &opts[i];
		int has_arg = !o->argh ? no_argument : o->optional_arg ? optional_argument : required_argument;

		if (!is_option(o))
			continue;
		longopts[nl++] = (struct option){ o->long_name, has_arg, NULL, o->short_name ? o->short_name : LONG_CODE(i) };
		if (o->short_name) {
			shortopts[ns++] = (char)o->short_name;
			if (o->argh)
				shortopts[ns++] = ':';
		}
	}
	longopts[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[nl] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[ns++] = 'h';
	shortopts[ns] = 0;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct opt *hit = NULL;

		if (c == 'h') {
			opts_usage(stdout, opts, usage);
			return 0;
		}
		if (c == '?' || c == ':')
			return bad_option(argv, c, longopts, nl);
		for (size_t i = 0; opts[i].type != OPT_END_ && !hit; i++)
			if (is_option(&opts[i]) && (opts[i].short_name ? c == opts[i].short_name : c == LONG_CODE(i)))
				hit = &opts[i];
		if (!hit || apply(hit, optarg, ctx))
			return 2;
	}
	return -1;
}
