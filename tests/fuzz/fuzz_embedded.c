/*
 * tests/fuzz/fuzz_embedded.c: an object embedded in a trace.
 *
 * The input is the ELF of an embedded object (TRACE_META_OBJECT), then one
 * byte: bit 0 set, the object is stored as full, else as minimal; bit 1
 * set, the same bytes follow as its debug entry too. Around it the harness puts
 * a trace whose process maps it and whose samples' stacks run through it,
 * so the analyzer finds it by build-id, loads it, names addresses in it,
 * looks for inlined frames and lines, and reads its PLT: the loader and
 * what it hands libelf and libdw.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analyze/cmd/cmd.h"
#include "../../formats/meta.h"
#include "../../formats/trace.h"
#include "fuzz.h"

#define BASE 0x400000ull
#define SPAN 0x100000ull
#define PID 4242

static const unsigned char bid[20] = { 0xf0, 0x22, 0x5e, 0x11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

static const struct {
	int (*fn)(int argc, char **argv, struct analyze_opts *a);
	const char *args[6];
} runs[] = {
	{ cmd_info, { "info" } },
	{ cmd_folded, { "folded" } },
	{ cmd_events, { "events" } },
	{ cmd_faults, { "faults", "--lines" } },
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env();
	return 0;
}

static void meta(struct trace_writer *w, uint32_t kind, const void *p, size_t len)
{
	trace_writer_add(w, TRACE_CHUNK_META, kind, 0, p, len, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char host[] = "memsight_version fuzz\nnr_cpus 1\npage_size 4096\nlong_size 8\nbyte_order little\n"
				   "clock_id 1\ncall_graph fp\nrecorder_pid 1\ntarget pids 4242\n";
	struct trace_writer_opts o = { TRACE_CODEC_NONE, 0, 0, 0 };
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_PAGE_FAULTS, .sample_period = 1, .sample_id_all = 1,
					.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						       PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
						       PERF_SAMPLE_CALLCHAIN };
	uint64_t id = 1;
	struct trace_event_desc d = { "page-faults", "faults", "", &attr, sizeof(attr), &id, 1 };
	struct trace_writer w;
	unsigned char *desc, *obj, rec[8 * 16];
	char proc[512], hex[41], path[64];
	size_t len, n = 0, olen;
	uint64_t u;
	int fd;
	unsigned char flags;

	trace_writer_init_mem(&w, &o);
	meta(&w, TRACE_META_HOST, host, sizeof(host) - 1);
	if (trace_event_desc_encode(&d, &desc, &len))
		goto out;
	meta(&w, TRACE_META_EVENT, desc, len);
	free(desc);
	for (int i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	n = snprintf(proc, sizeof(proc), "pid %d\ncomm fuzz\nmap\t%llx\t%llx\tr-xp\t0\t00:00\t1\t%s\t/fuzz/object\n", PID,
		     BASE, BASE + SPAN, hex);
	meta(&w, TRACE_META_PROCESS, proc, n);
	/* FORMAT.md, object: version, mode, build-id, size, path, the ELF. */
	if (!size)
		goto out;
	flags = data[--size];
	olen = 34 + 12 + size;
	obj = calloc(1, olen);
	if (!obj)
		goto out;
	obj[0] = 1;
	obj[1] = flags & 1 ? 2 : 1;
	obj[2] = 20;
	memcpy(obj + 4, bid, 20);
	u = size;
	memcpy(obj + 24, &u, 8);
	obj[32] = 12;
	memcpy(obj + 34, "/fuzz/object", 12);
	memcpy(obj + 46, data, size);
	meta(&w, TRACE_META_OBJECT, obj, olen);
	if (flags & 2) {
		obj[1] = 3;
		meta(&w, TRACE_META_OBJECT, obj, olen);
	}
	free(obj);
	/* Page faults whose stacks run through the object, at offsets the
	 * input's own bytes choose. */
	{
		unsigned char *buf = NULL;
		size_t nb = 0;

		for (int s = 0; s < 8; s++) {
			uint64_t f[16];
			int k = 0;
			uint32_t off = 0;

			if (size >= 4 * (size_t)(s + 1))
				memcpy(&off, data + 4 * s, 4);
			f[k++] = (uint64_t)sizeof(f) << 48 | PERF_RECORD_SAMPLE; /* header, size below */
			f[k++] = id;
			f[k++] = BASE + off % SPAN;
			f[k++] = (uint64_t)PID << 32 | PID;
			f[k++] = 1000 + s;
			f[k++] = 0x7f0000001000ull;
			f[k++] = 0;
			f[k++] = 4;
			f[k++] = PERF_CONTEXT_USER;
			f[k++] = BASE + off % SPAN;
			f[k++] = BASE + (off >> 3) % SPAN;
			f[k++] = BASE + (off >> 11) % SPAN;
			memcpy(rec, f, 8 * k);
			/* perf_event_header: u32 type, u16 misc, u16 size. */
			rec[0] = PERF_RECORD_SAMPLE;
			memset(rec + 1, 0, 5);
			rec[6] = (8 * k) & 0xff;
			rec[7] = (8 * k) >> 8;
			buf = realloc(buf, nb + 8 * k);
			memcpy(buf + nb, rec, 8 * k);
			nb += 8 * k;
		}
		trace_writer_add(&w, TRACE_CHUNK_DATA, 0, 1000, buf, nb, 8);
		free(buf);
	}
	trace_writer_finish(&w);
	{
		size_t flen;
		unsigned char *file = trace_writer_steal_mem(&w, &flen);

		fd = fuzz_memfd(file, flen, path, sizeof(path));
		free(file);
	}
	if (fd >= 0) {
		for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
			fuzz_command(runs[i].fn, runs[i].args, path);
		close(fd);
	}
out:
	trace_writer_release(&w);
	return 0;
}
