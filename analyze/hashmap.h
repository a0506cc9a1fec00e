/*
 * analyze/hashmap.h: open-addressing maps keyed by a 64-bit value or by a
 * string, with a pointer or integer payload. The analyzer's per-sample path
 * (stacks, symbol cache, pending syscalls) runs through these, so they stay
 * small and inline-free of policy: no iteration order is promised.
 */
#ifndef MEMSIGHT_HASHMAP_H
#define MEMSIGHT_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hm_slot {
	uint64_t key;
	uint64_t hash; /* 0 marks an empty slot */
	const char *skey; /* string maps: the key, owned by the map */
	union {
		void *ptr;
		uint64_t val;
	};
};

struct hashmap {
	struct hm_slot *slots;
	size_t alloc, nr;
	int strings;
};

void hashmap_init(struct hashmap *m, int string_keys);
void hashmap_release(struct hashmap *m);
/* Find or insert; returns the slot (its payload zeroed when new), NULL on
 * out-of-memory. *created tells which. */
struct hm_slot *hashmap_u64(struct hashmap *m, uint64_t key, int *created);
struct hm_slot *hashmap_str(struct hashmap *m, const char *key, int *created);
struct hm_slot *hashmap_u64_find(const struct hashmap *m, uint64_t key);
struct hm_slot *hashmap_str_find(const struct hashmap *m, const char *key);
void hashmap_u64_remove(struct hashmap *m, uint64_t key);
/* The object of size bytes kept at key, made zeroed on first use (and
 * owned by the caller, who frees it); NULL on out-of-memory. A zeroed
 * struct hashmap is an empty map with u64 keys: a map of maps makes its
 * inner ones so. */
void *hashmap_u64_obj(struct hashmap *m, uint64_t key, size_t size);
#define hashmap_for_each(m, s) \
	for (struct hm_slot *s = (m)->slots; s && s < (m)->slots + (m)->alloc; s++) \
		if (s->hash)

uint64_t hash_bytes(const void *p, size_t n);
/* The same for n 64-bit words (stacks of addresses), a word at a time. */
uint64_t hash_words(const uint64_t *w, size_t n);

#endif
