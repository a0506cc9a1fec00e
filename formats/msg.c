/*
 * formats/msg.c: the one place memsight's programs write their messages;
 * see msg.h.
 */
#include "msg.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "termsafe.h"

static const char *who = "memsight";
/* msg_once: the texts said so far, by hash (FNV-1a), in a small open
 * table; past its size, repeats are said again. */
static int once;
static uint64_t said[512];
static int level = MSG_NORMAL;
/* The progress line: when its task began, when it was last drawn, whether
 * one is on the terminal now. */
static uint64_t progress_t0, progress_last, progress_delay;
static int progress_shown;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void msg_level_set(int l)
{
	level = l;
}

int msg_verbose(void)
{
	return level >= MSG_VERBOSE;
}

void msg_progress_begin(unsigned delay_ms)
{
	progress_t0 = now_ms();
	progress_last = 0;
	progress_delay = delay_ms;
}

static void progress_erase(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
}

void msg_progress_end(void)
{
	progress_erase();
	progress_t0 = 0;
}

void msg_progress(const char *fmt, ...)
{
	char text[512];
	uint64_t t;
	va_list ap;

	if (level < MSG_NORMAL || !progress_t0 || !isatty(STDERR_FILENO))
		return;
	t = now_ms();
	if (t - progress_t0 < progress_delay || (progress_last && t - progress_last < 100))
		return;
	progress_last = t;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	termsafe_clean(text, strlen(text), 0);
	fprintf(stderr, "\r%s: %s\033[K", who, text);
	progress_shown = 1;
}

void msg_init(const char *w)
{
	who = w;
}

const char *msg_who(void)
{
	return who;
}

void msg_once(int on)
{
	once = on;
}

/* Whether text was said before, remembering it if not. */
static int said_before(const char *tag, const char *text)
{
	uint64_t h = 14695981039346656037ull;

	for (const char *p = tag; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = text; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h |= 1;
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
		size_t k = (h + i) % (sizeof(said) / sizeof(said[0]));

		if (said[k] == h)
			return 1;
		if (!said[k]) {
			said[k] = h;
			return 0;
		}
	}
	return 0;
}

/* One fprintf per line, so lines from threads do not interleave. */
static void say(const char *tag, const char *fmt, va_list ap, int repeatable)
{
	char text[8192];

	vsnprintf(text, sizeof(text), fmt, ap);
	/* Names from a trace or a process are in it: one line, no escapes. */
	termsafe_clean(text, strlen(text), 0);
	if (once && !repeatable && said_before(tag, text))
		return;
	progress_erase();
	fprintf(stderr, "%s: %s%s\n", who, tag, text);
}

int msg_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap, 1);
	va_end(ap);
	return -1;
}

void msg_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("warning: ", fmt, ap, 0);
	va_end(ap);
}

void msg_note(const char *fmt, ...)
{
	va_list ap;

	if (level < MSG_NORMAL)
		return;
	va_start(ap, fmt);
	say("", fmt, ap, 0);
	va_end(ap);
}
