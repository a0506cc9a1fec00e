/*
 * analyze/hashmap.c: linear probing, load factor at most 1/2, deletion by
 * backward shift so lookups never meet tombstones.
 */
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix so low bits are usable as an index. */
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h | 1;
}

uint64_t hash_words(const uint64_t *w, size_t n)
{
	/* Each word multiplied in whole: a stack of 15 frames costs 15
	 * steps, not FNV's 120. */
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h | 1;
}

static uint64_t hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k | 1;
}

void hashmap_init(struct hashmap *m, int string_keys)
{
	memset(m, 0, sizeof(*m));
	m->strings = string_keys;
}

void hashmap_release(struct hashmap *m)
{
	if (m->strings)
		for (size_t i = 0; i < m->alloc; i++)
			if (m->slots[i].hash)
				free((char *)m->slots[i].skey);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* A hash's first slot in a table of n. Its lowest bit is always set (0
 * marks an empty slot), so it is left out: with it only every other slot
 * could be a first one, and a table half full would probe as one full. */
static size_t home(uint64_t hash, size_t n)
{
	return (hash >> 1) & (n - 1);
}

static int grow(struct hashmap *m)
{
	size_t n = m->alloc ? m->alloc * 2 : 64;
	struct hm_slot *s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 0; i < m->alloc; i++) {
		struct hm_slot *o = &m->slots[i];
		size_t j;

		if (!o->hash)
			continue;
		for (j = home(o->hash, n); s[j].hash; j = (j + 1) & (n - 1))
			;
		s[j] = *o;
	}
	free(m->slots);
	m->slots = s;
	m->alloc = n;
	return 0;
}

static struct hm_slot *lookup(const struct hashmap *m, uint64_t h, uint64_t key, const char *skey)
{
	if (!m->alloc)
		return NULL;
	for (size_t j = home(h, m->alloc);; j = (j + 1) & (m->alloc - 1)) {
		struct hm_slot *s = &m->slots[j];

		if (!s->hash)
			return s;
		if (s->hash == h && (skey ? !strcmp(s->skey, skey) : s->key == key))
			return s;
	}
}

static struct hm_slot *insert(struct hashmap *m, uint64_t h, uint64_t key, const char *skey, int *created)
{
	struct hm_slot *s;

	if ((m->nr + 1) * 2 > m->alloc && grow(m))
		return NULL;
	s = lookup(m, h, key, skey);
	if (created)
		*created = !s->hash;
	if (!s->hash) {
		if (skey && !(skey = strdup(skey)))
			return NULL;
		s->hash = h;
		s->key = key;
		s->skey = skey;
		s->val = 0;
		m->nr++;
	}
	return s;
}

struct hm_slot *hashmap_u64(struct hashmap *m, uint64_t key, int *created)
{
	return insert(m, hash_u64(key), key, NULL, created);
}

struct hm_slot *hashmap_str(struct hashmap *m, const char *key, int *created)
{
	return insert(m, hash_bytes(key, strlen(key)), 0, key, created);
}

struct hm_slot *hashmap_u64_find(const struct hashmap *m, uint64_t key)
{
	struct hm_slot *s = lookup(m, hash_u64(key), key, NULL);

	return s && s->hash ? s : NULL;
}

struct hm_slot *hashmap_str_find(const struct hashmap *m, const char *key)
{
	struct hm_slot *s = lookup(m, hash_bytes(key, strlen(key)), 0, key);

	return s && s->hash ? s : NULL;
}

void hashmap_u64_remove(struct hashmap *m, uint64_t key)
{
	struct hm_slot *s = hashmap_u64_find(m, key);
	size_t i, j, n = m->alloc;

	if (!s)
		return;
	i = s - m->slots;
	m->slots[i].hash = 0;
	m->nr--;
	/* Shift back every entry that would no longer be reachable. */
	for (j = (i + 1) & (n - 1); m->slots[j].hash; j = (j + 1) & (n - 1)) {
		size_t home_j = home(m->slots[j].hash, n);

		if ((j > i && (home_j <= i || home_j > j)) || (j < i && (home_j <= i && home_j > j))) {
			m->slots[i] = m->slots[j];
			m->slots[j].hash = 0;
			i = j;
		}
	}
}

void *hashmap_u64_obj(struct hashmap *m, uint64_t key, size_t size)
{
	struct hm_slot *slot = hashmap_u64(m, key, NULL);

	if (!slot)
		return NULL;
	if (!slot->ptr)
		slot->ptr = calloc(1, size);
	return slot->ptr;
}
