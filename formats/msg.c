/*
 * formats/msg.c: the one place memsight's programs write their messages;
 * see msg.h.
 */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>

static const char *who = "memsight";

void msg_init(const char *w)
{
	who = w;
}

const char *msg_who(void)
{
	return who;
}

/* One fprintf per line, so lines from threads do not interleave. */
static void say(const char *tag, const char *fmt, va_list ap)
{
	char text[8192];

	vsnprintf(text, sizeof(text), fmt, ap);
	fprintf(stderr, "%s: %s%s\n", who, tag, text);
}

int msg_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
	return -1;
}

void msg_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("warning: ", fmt, ap);
	va_end(ap);
}

void msg_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}
