/*
 * formats/meta.c: encoding of TRACE_META_EVENT payloads and lookups in the
 * text META kinds. The layout is in FORMAT.md, "META: event".
 */
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DESC_HEADER 24

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int trace_event_desc_encode(const struct trace_event_desc *d, unsigned char **out, size_t *len)
{
	size_t nl = strlen(d->name), gl = strlen(d->group), fl = d->format ? strlen(d->format) : 0;
	size_t n = DESC_HEADER + d->attr_size + 8 * (size_t)d->nr_ids + nl + gl + fl;
	unsigned char *p = malloc(n), *q;

	if (!p)
		return -ENOMEM;
	put32(p, TRACE_EVENT_DESC_VERSION);
	put32(p + 4, d->attr_size);
	put32(p + 8, d->nr_ids);
	put32(p + 12, nl);
	put32(p + 16, gl);
	put32(p + 20, fl);
	q = p + DESC_HEADER;
	memcpy(q, d->attr, d->attr_size);
	q += d->attr_size;
	for (uint32_t i = 0; i < d->nr_ids; i++, q += 8) {
		put32(q, (uint32_t)d->ids[i]);
		put32(q + 4, (uint32_t)(d->ids[i] >> 32));
	}
	memcpy(q, d->name, nl);
	memcpy(q + nl, d->group, gl);
	if (fl)
		memcpy(q + nl + gl, d->format, fl);
	*out = p;
	*len = n;
	return 0;
}

static char *dup_n(const unsigned char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

int trace_event_desc_decode(const void *data, size_t len, struct trace_event_desc *d)
{
	const unsigned char *p = data, *q;
	uint64_t need;
	uint32_t as, ni, nl, gl, fl;

	memset(d, 0, sizeof(*d));
	if (len < DESC_HEADER || get32(p) != TRACE_EVENT_DESC_VERSION)
		return -EINVAL;
	as = get32(p + 4);
	ni = get32(p + 8);
	nl = get32(p + 12);
	gl = get32(p + 16);
	fl = get32(p + 20);
	need = (uint64_t)DESC_HEADER + as + 8ull * ni + nl + gl + fl;
	if (need > len || as < 64)
		return -EINVAL;
	q = p + DESC_HEADER;
	d->attr_size = as;
	d->nr_ids = ni;
	d->attr = malloc(as);
	d->ids = malloc(ni ? 8ull * ni : 1);
	if (!d->attr || !d->ids)
		goto nomem;
	memcpy(d->attr, q, as);
	q += as;
	for (uint32_t i = 0; i < ni; i++, q += 8)
		d->ids[i] = get32(q) | (uint64_t)get32(q + 4) << 32;
	d->name = dup_n(q, nl);
	d->group = dup_n(q + nl, gl);
	d->format = dup_n(q + nl + gl, fl);
	if (!d->name || !d->group || !d->format)
		goto nomem;
	return 0;
nomem:
	trace_event_desc_release(d);
	return -ENOMEM;
}

void trace_event_desc_release(struct trace_event_desc *d)
{
	free(d->name);
	free(d->group);
	free(d->format);
	free(d->attr);
	free(d->ids);
	memset(d, 0, sizeof(*d));
}

int trace_kv_get(const char *text, size_t len, const char *key, char *out, size_t outlen)
{
	size_t kl = strlen(key);
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;

		if ((size_t)(le - p) > kl && !memcmp(p, key, kl) && p[kl] == ' ') {
			size_t n = le - p - kl - 1;

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, p + kl + 1, n);
			out[n] = 0;
			return 0;
		}
		p = le + 1;
	}
	return -1;
}

int reach_part_decode(const void *data, size_t len, struct reach_part *p)
{
	const unsigned char *b = data;
	uint32_t u32[4];
	uint64_t u64[4];
	size_t rest;
	int v1;

	if (len < REACH_HEADER_SIZE)
		return -EINVAL;
	v1 = !memcmp(b, REACH_MAGIC_V1, 8);
	if (!v1 && memcmp(b, REACH_MAGIC, 8))
		return -EINVAL;
	memcpy(u32, b + 8, 16);
	memcpy(u64, b + 24, 32);
	*p = (struct reach_part){ u32[0], u32[1], u32[2], v1 ? 0 : u32[3], u64[0], u64[1], u64[2], u64[3], 0,
				  NULL, NULL, NULL, NULL };
	/* The counts must fit what the payload holds, checked so that no
	 * product overflows; the words are what is left. */
	rest = len - REACH_HEADER_SIZE;
	if (p->nr_regions > rest / REACH_REGION_SIZE)
		return -EINVAL;
	rest -= (size_t)p->nr_regions * REACH_REGION_SIZE;
	if (p->nr_pairs > rest / REACH_PAIR_SIZE)
		return -EINVAL;
	rest -= p->nr_pairs * REACH_PAIR_SIZE;
	if (p->nr_vtables > rest / 8)
		return -EINVAL;
	rest -= (size_t)p->nr_vtables * 8;
	if (rest % REACH_WORD_SIZE || (v1 && rest))
		return -EINVAL;
	p->nr_words = rest / REACH_WORD_SIZE;
	p->regions = b + REACH_HEADER_SIZE;
	p->pairs = p->regions + (size_t)p->nr_regions * REACH_REGION_SIZE;
	p->vtables = p->pairs + p->nr_pairs * REACH_PAIR_SIZE;
	p->words = p->vtables + (size_t)p->nr_vtables * 8;
	return 0;
}
