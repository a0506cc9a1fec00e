/*
 * formats/termsafe.c: text made safe for a terminal (termsafe.h).
 */
#include "termsafe.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The length of the valid UTF-8 character at s (n bytes left), 0 when it
 * is not one, or -1 when it may be one cut at the end. C1 controls
 * (U+0080 to U+009F) are not valid here. */
static int utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	int len;
	unsigned min;

	if (c < 0xc2 || c > 0xf4)
		return 0;
	len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
	{
		unsigned cp = c & (0x7f >> len);

		for (int i = 1; i < len; i++) {
			if ((size_t)i >= n)
				return -1;
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
			return 0;
	}
	return len;
}

/* Clean n bytes of s; returns how many at the end are the start of a
 * character that may go on (only when more may follow). */
static size_t clean(char *s, size_t n, unsigned flags, int more)
{
	unsigned char *p = (unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		int l;

		/* Eight printable ASCII bytes at a time, most of any output:
		 * none under 0x20, none 0x7f or above. */
		while (i + 8 <= n) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if ((((w - 0x2020202020202020ull) | (w + 0x0101010101010101ull)) & 0x8080808080808080ull) ||
			    (w & 0x8080808080808080ull))
				break;
			i += 8;
		}
		if (i >= n)
			break;
		if (p[i] < 0x80) {
			if ((p[i] < 0x20 && p[i] != '\t' && !(p[i] == '\n' && (flags & TERMSAFE_NEWLINES))) || p[i] == 0x7f)
				p[i] = '?';
			i++;
			continue;
		}
		l = utf8_len(p + i, n - i);
		if (l < 0 && more)
			return n - i;
		if (l <= 0) {
			p[i++] = '?';
			continue;
		}
		i += (size_t)l;
	}
	return 0;
}

void termsafe_clean(char *s, size_t n, unsigned flags)
{
	clean(s, n, flags, 0);
}

/* The stream: what a write leaves of a character cut at its end waits
 * for the next. */
struct tstream {
	char carry[4];
	size_t nc;
};

static int write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static ssize_t tstream_write(void *cookie, const char *buf, size_t size)
{
	struct tstream *t = cookie;
	char tmp[8192 + 4];
	size_t done = 0;

	while (done < size) {
		size_t take = size - done > 8192 ? 8192 : size - done, n, left;

		memcpy(tmp, t->carry, t->nc);
		memcpy(tmp + t->nc, buf + done, take);
		n = t->nc + take;
		left = clean(tmp, n, TERMSAFE_NEWLINES, 1);
		/* Never more than a character's start is held. */
		if (left > 3) {
			clean(tmp + n - left, left, TERMSAFE_NEWLINES, 0);
			left = 0;
		}
		if (write_all(tmp, n - left))
			return -1;
		memcpy(t->carry, tmp + n - left, left);
		t->nc = left;
		done += take;
	}
	return (ssize_t)size;
}

static int tstream_close(void *cookie)
{
	struct tstream *t = cookie;

	/* A character still cut at the end never came whole. */
	clean(t->carry, t->nc, TERMSAFE_NEWLINES, 0);
	return t->nc && write_all(t->carry, t->nc) ? -1 : 0;
}

static struct tstream out;

/* At exit stdio flushes the stream but does not close it: what a cut
 * character held back goes out here. */
static void tstream_end(void)
{
	fflush(stdout);
	tstream_close(&out);
	out.nc = 0;
}

int termsafe_stdout(void)
{
	cookie_io_functions_t io = { .write = tstream_write, .close = tstream_close };
	FILE *f = fopencookie(&out, "w", io);

	if (!f)
		return -1;
	/* As stdio buffers a terminal: a line at a time. */
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 65536);
	stdout = f;
	atexit(tstream_end);
	return 0;
}
