/*
 * formats/trace_window.c: a ring's window as a linear trace.
 *
 * A ring holds its window in segments, in file order unrelated to time,
 * with the state the window starts from in STATE chunks. The reader has
 * already put the segments in order and made the oldest one's STATE META;
 * this copies the chunks as they are stored (nothing is decompressed but
 * DATA, whose records are counted for the trailer), so a snapshot costs
 * about one read and one write of the window.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

int trace_copy_window(struct trace_reader *r, struct trace_writer *w, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t alloc = 0;
	int ret = 0;

	for (size_t i = 0; i < r->nr_chunks && !ret; i++) {
		const struct trace_chunk *c = &r->chunks[i];
		const unsigned char *payload;
		unsigned char *copy;
		uint64_t nr = 0;
		long n;

		if (c->type != TRACE_CHUNK_META && c->type != TRACE_CHUNK_DATA && c->type != TRACE_CHUNK_LOSS)
			continue;
		/* Overwritten by a recorder that still writes the ring: left
		 * out, as the part of the ring before the window is. */
		n = trace_chunk_stored(r, i, &payload, &copy, err, errlen);
		if (n == TRACE_CHUNK_GONE)
			continue;
		if (n < 0) {
			ret = -1;
			break;
		}
		if (c->type == TRACE_CHUNK_DATA) {
			n = trace_chunk_payload(r, i, &buf, &alloc, err, errlen);
			if (n == TRACE_CHUNK_GONE) {
				free(copy);
				continue;
			}
			if (n < 0) {
				free(copy);
				ret = -1;
				break;
			}
			nr = trace_records_count(buf, n);
		}
		if (trace_writer_add_copy(w, c->type, c->stream, c->time, c->codec, payload, c->payload_len, c->raw_len,
					  nr))
			ret = trace_error_set(err, errlen, "%s", trace_writer_strerror(w));
		free(copy);
		trace_chunk_drop(r, i);
	}
	free(buf);
	return ret;
}
