/*
 * analyze/sha256.h: SHA-256 (FIPS 180-4), for names that must not collide
 * even when a trace's author wants them to: the analyzer's cache keys
 * what it decoded from a trace by the hash of the bytes it decoded, so
 * that one trace can never make another read its content. None of the
 * libraries memsight links offers a cryptographic hash.
 */
#ifndef MEMSIGHT_SHA256_H
#define MEMSIGHT_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes hashed so far */
	unsigned char buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, unsigned char out[32]);

#endif
