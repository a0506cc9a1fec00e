/*
 * analyze/replay/fields.c: a tracepoint sample's payload fields, read by
 * name or by the index the catalogue gave them, with libtraceevent and the
 * format text the trace carries; names are looked up once per event.
 */
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>

#include "../../formats/catalog.h"
#include "session.h"

static struct tep_format_field *named_field(const struct sample *smp, const char *field)
{
	struct sess_event *e = smp->ev;
	struct tep_format_field *f;

	if (!e->tp || !smp->raw)
		return NULL;
	/* Callers pass literals: the pointer usually matches, so every
	 * pointer is tried before any name is compared. */
	for (int i = 0; i < e->nr_named; i++)
		if (e->named[i].name == field)
			return e->named[i].f;
	for (int i = 0; i < e->nr_named; i++)
		if (!strcmp(e->named[i].name, field))
			return e->named[i].f;
	f = tep_find_field(e->tp, field);
	if (e->nr_named < SESS_NAMED_FIELDS)
		e->named[e->nr_named++] = (typeof(e->named[0])){ field, f };
	return f;
}

uint64_t sample_num(const struct sample *smp, const char *field)
{
	struct tep_format_field *f = named_field(smp, field);
	unsigned long long v = 0;

	if (!f || f->offset + f->size > (int)smp->raw_size)
		return 0;
	tep_read_number_field(f, smp->raw, &v);
	return v;
}

int64_t sample_snum(const struct sample *smp, const char *field)
{
	struct tep_format_field *f = named_field(smp, field);
	uint64_t v = sample_num(smp, field);

	/* Sign-extend what libtraceevent read as unsigned. */
	if (f && (f->flags & TEP_FIELD_IS_SIGNED) && f->size < 8 && (v >> (f->size * 8 - 1)) & 1)
		v |= ~0ull << (f->size * 8);
	return (int64_t)v;
}

const char *sample_str(const struct sample *smp, const char *field, char *buf, size_t len)
{
	struct tep_format_field *f = named_field(smp, field);
	unsigned off, n;

	buf[0] = 0;
	if (!f || f->offset + f->size > (int)smp->raw_size)
		return buf;
	off = f->offset;
	n = f->size;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		uint32_t loc;

		memcpy(&loc, (const char *)smp->raw + f->offset, 4);
		off = loc & 0xffff;
		n = loc >> 16;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += f->offset + f->size;
	}
	if (off + n > smp->raw_size)
		return buf;
	n = n < len - 1 ? n : len - 1;
	memcpy(buf, (const char *)smp->raw + off, n);
	buf[n] = 0;
	return buf;
}

uint64_t session_field(struct session *s, const struct sample *smp, int idx)
{
	struct tep_format_field *f = smp->ev->fields[idx];
	unsigned long long v = 0;

	(void)s;
	if (!f || !smp->raw || f->offset + f->size > (int)smp->raw_size)
		return 0;
	tep_read_number_field(f, smp->raw, &v);
	return v;
}

int sample_syscall_args(const struct sample *smp, uint64_t *args, const char *const **names)
{
	static const int regs[CATALOG_SYSCALL_NR_ARGS] = CATALOG_SYSCALL_ARG_REGS;
	const char *const *fn = smp->ev->field_names;
	unsigned long long need;
	int n = 0;

	if (!smp->regs || !fn || !fn[0] || strcmp(fn[0], "ret"))
		return 0;
	while (n < CATALOG_SYSCALL_NR_ARGS && n + 1 < SESS_MAX_FIELDS && fn[n + 1])
		n++;
	need = catalog_syscall_args_mask(n);
	if (!n || (smp->regs_mask & need) != need)
		return 0;
	memset(args, 0, CATALOG_SYSCALL_NR_ARGS * sizeof(*args));
	for (int i = 0; i < n; i++)
		sample_reg(smp, regs[i], &args[i]);
	*names = fn + 1;
	return n;
}

int session_alloc_fn(struct session *s, const struct sample *smp)
{
	uint64_t n;

	switch (smp->ev->fn) {
	case AF_OTEL_SITES:
		n = session_field(s, smp, AF_KIND);
		return n == OTEL_KIND_ALLOC ? AF_OTEL_ALLOC : n == OTEL_KIND_FREE ? AF_OTEL_FREE : -1;
	case AF_ALLOCS:
	case AF_FREES:
		n = session_field(s, smp, smp->ev->kind == EVK_ALLOC_RET ? AF_RET_FN : AF_FN);
		if (n >= sizeof(s->alloc_fn_of) / sizeof(s->alloc_fn_of[0]) || s->alloc_fn_of[n] < 0)
			return -1;
		/* An entry in the other one's event, or a free's return, is no
		 * call of the family. */
		if ((alloc_fns[s->alloc_fn_of[n]].op == ALLOC_OP_FREE) != (smp->ev->fn == AF_FREES) ||
		    (smp->ev->kind == EVK_ALLOC_RET && alloc_fns[s->alloc_fn_of[n]].op == ALLOC_OP_FREE))
			return -1;
		return s->alloc_fn_of[n];
	default:
		return smp->ev->fn;
	}
}
