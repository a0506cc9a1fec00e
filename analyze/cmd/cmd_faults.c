/*
 * analyze/cmd/cmd_faults.c: memsight faults, page faults (record -e faults, and
 * -e swap for major faults with stacks) by backing file, as ffaults shows
 * them, and by stack, as faults does; major faults on anonymous memory are
 * the swap-ins.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/memops.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight faults [options] [FILE]\n"
	"\n"
	"Page faults by backing file (file-backed against anonymous memory), by\n"
	"process and by stack, each split by kind (read, write, exec; cow, a write\n"
	"to a present page; kernel, a kernel-mode fault on a user address) where\n"
	"the exceptions tracepoints recorded them; major faults on anonymous\n"
	"memory are swap-ins.\n";

/* Faults on one mapping, or of one process (name is then its comm). */
struct fault_file {
	const char *name;
	int file_backed;
	int pid;
	uint64_t faults, major;
	uint64_t by_kind[FAULT_KINDS];
};

struct faults {
	long pid;
	uint64_t top;
	int json, lines, kernel;
	struct hashmap files;	/* interned name -> struct fault_file * */
	struct hashmap procs;	/* pid -> struct fault_file * */
	struct stacktab minor, swapin;
	uint64_t total, major, file, anon, unknown, major_anon, major_file;
	uint64_t by_kind[FAULT_KINDS];
	int kinds;		/* the trace's faults carry their kind */
	uint64_t period;	/* faults/N: each recorded fault stands for N (1: every one recorded) */
};

static void kinds_add(uint64_t *by_kind, unsigned kinds, uint64_t w)
{
	for (int k = 0; k < FAULT_KINDS; k++)
		by_kind[k] += (kinds >> k & 1) * w;
}

static int file_backed(const struct map *m)
{
	/* Anonymous mappings are named "//anon", "[heap]", "[stack]". */
	return m && m->name && m->name[0] == '/' && m->name[1] != '/';
}

static int on_fault(struct session *s, const struct memop *op, void *arg)
{
	struct faults *f = arg;
	const char *name = op->map && op->map->name ? op->map->name : "[unknown]";
	struct hm_slot *slot;
	struct fault_file *ff;
	int fb = file_backed(op->map), major = op->kind == MEMOP_FAULT_MAJ;
	uint64_t w = op->weight;

	if ((op->kind != MEMOP_FAULT && !major) || (f->pid >= 0 && op->pid != f->pid))
		return 0;
	slot = hashmap_u64(&f->files, (uintptr_t)name, NULL);
	if (!slot || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*ff)))))
		return -1;
	ff = slot->ptr;
	ff->name = name;
	ff->file_backed = fb;
	if (major) {
		/* The software event counts every fault; major ones are
		 * counted again by their own event. */
		ff->major += w;
		f->major += w;
		if (w > f->period)
			f->period = w;
		if (fb) {
			f->major_file += w;
		} else if (op->map) {
			f->major_anon += w;
			if (op->stack->nr_ips && !stacktab_add(&f->swapin, s, op->stack, w))
				return -1;
		}
		return 0;
	}
	if (w > f->period)
		f->period = w;
	ff->faults += w;
	kinds_add(ff->by_kind, op->fault_kinds, w);
	f->total += w;
	kinds_add(f->by_kind, op->fault_kinds, w);
	f->kinds |= op->fault_kinds != 0;
	if (!op->map)
		f->unknown += w;
	else if (fb)
		f->file += w;
	else
		f->anon += w;
	slot = hashmap_u64(&f->procs, (uint32_t)op->pid, NULL);
	if (!slot || (!slot->ptr && !(slot->ptr = calloc(1, sizeof(*ff)))))
		return -1;
	ff = slot->ptr;
	ff->pid = op->pid;
	ff->name = machine_comm(&s->m, op->pid, op->pid);
	ff->faults += w;
	kinds_add(ff->by_kind, op->fault_kinds, w);
	if (op->stack->nr_ips) {
		struct stack_entry *e = stacktab_add(&f->minor, s, op->stack, w);

		if (!e)
			return -1;
		kinds_add(stack_entry_extra(e), op->fault_kinds, w);
	}
	return 0;
}

static int file_cmp(const void *a, const void *b)
{
	const struct fault_file *x = *(struct fault_file *const *)a, *y = *(struct fault_file *const *)b;

	if (x->faults != y->faults)
		return x->faults > y->faults ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The faults, sorted: by file, by process, by stack, swap-ins by stack. */
struct faults_sorted {
	struct fault_file **files, **procs;
	struct stack_entry **minor, **swapin;
	size_t nf, np, nm, ns;
};

static struct fault_file **files_sorted(const struct hashmap *m, size_t *n)
{
	struct fault_file **v = malloc((m->nr ? m->nr : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	hashmap_for_each(m, slot) v[(*n)++] = slot->ptr;
	if (*n > 1)
		qsort(v, *n, sizeof(*v), file_cmp);
	return v;
}

static int faults_sort(struct faults *f, struct faults_sorted *o)
{
	o->files = files_sorted(&f->files, &o->nf);
	o->procs = files_sorted(&f->procs, &o->np);
	if (!o->files || !o->procs)
		return -1;
	o->minor = stacktab_sorted(&f->minor, 0, &o->nm);
	o->swapin = stacktab_sorted(&f->swapin, 0, &o->ns);
	return 0;
}

/* "kinds": { "read": N, ... } where the trace has them. */
static void kinds_json(struct json *j, const struct faults *f, const uint64_t *by_kind)
{
	if (!f->kinds)
		return;
	json_begin(j, "kinds");
	for (int k = 0; k < FAULT_KINDS; k++)
		json_u64(j, fault_kind_names[k], by_kind[k]);
	json_end(j);
}

static void stacks_json(struct json *j, const struct session *s, const struct faults *f, const char *key,
			struct stack_entry **v, size_t n)
{
	json_begin_array(j, key);
	for (size_t i = 0; v && i < n && i < f->top; i++) {
		json_begin(j, NULL);
		cmd_json_who(j, s, v[i]);
		json_u64(j, "faults", v[i]->weight);
		kinds_json(j, f, stack_entry_extra(v[i]));
		cmd_json_stack(j, "frames", v[i], f->lines);
		json_end(j);
	}
	json_end(j);
}

static void print_json(const struct session *s, const struct faults *f, const struct faults_sorted *o)
{
	struct json j;

	json_init(&j, stdout);
	json_begin(&j, NULL);
	json_str(&j, "trace", s->path);
	cmd_json_lost(&j, s);
	json_bool(&j, "estimate", f->period > 1);
	json_u64(&j, "period", f->period ? f->period : 1);
	json_u64(&j, "faults", f->total);
	json_u64(&j, "file_backed", f->file);
	json_u64(&j, "anonymous", f->anon);
	json_u64(&j, "unknown", f->unknown);
	json_u64(&j, "major", f->major);
	json_u64(&j, "major_file", f->major_file);
	json_u64(&j, "swapins", f->major_anon);
	kinds_json(&j, f, f->by_kind);
	json_begin_array(&j, "files");
	for (size_t i = 0; i < o->nf && i < f->top; i++) {
		json_begin(&j, NULL);
		json_str(&j, "name", o->files[i]->name);
		json_bool(&j, "file_backed", o->files[i]->file_backed);
		json_u64(&j, "faults", o->files[i]->faults);
		json_u64(&j, "major", o->files[i]->major);
		kinds_json(&j, f, o->files[i]->by_kind);
		json_end(&j);
	}
	json_end(&j);
	json_begin_array(&j, "processes");
	for (size_t i = 0; i < o->np && i < f->top; i++) {
		json_begin(&j, NULL);
		cmd_json_process(&j, s, o->procs[i]->pid);
		json_str(&j, "comm", o->procs[i]->name);
		json_u64(&j, "faults", o->procs[i]->faults);
		kinds_json(&j, f, o->procs[i]->by_kind);
		json_end(&j);
	}
	json_end(&j);
	cmd_json_truncated(&j, o->nm < f->top ? o->nm : f->top, o->nm);
	stacks_json(&j, s, f, "stacks", o->minor, o->nm);
	stacks_json(&j, s, f, "swapin_stacks", o->swapin, o->ns);
	json_end(&j);
}

/* The kind columns: their heading, or one row's counts. */
static void kinds_text(const struct faults *f, const uint64_t *by_kind)
{
	for (int k = 0; f->kinds && k < FAULT_KINDS; k++) {
		char up[16];

		for (size_t c = 0; c < sizeof(up); c++)
			if (!(up[c] = (char)toupper((unsigned char)fault_kind_names[k][c])))
				break;
		if (by_kind)
			printf(" %8llu", (unsigned long long)by_kind[k]);
		else
			printf(" %8s", up);
	}
}

static void stacks_text(const struct faults *f, const char *title, struct stack_entry **v, size_t n)
{
	for (size_t i = 0; v && i < n && i < f->top; i++) {
		char who[128];

		printf("\n%llu %s from stack (%s)", (unsigned long long)v[i]->weight, title,
		       stack_entry_who(v[i], who, sizeof(who)));
		const char *sep = ":";
		const uint64_t *by_kind = stack_entry_extra(v[i]);

		for (int k = 0; f->kinds && k < FAULT_KINDS; k++)
			if (by_kind[k]) {
				printf("%s %llu %s", sep, (unsigned long long)by_kind[k], fault_kind_names[k]);
				sep = ",";
			}
		printf("\n");
		print_stack(v[i], f->lines, "\t\t");
	}
}

static void print_text(const struct session *s, const struct faults *f, const struct faults_sorted *o)
{
	printf("# memsight faults of '%s': %llu page faults, %llu file-backed, %llu anonymous%s; %llu major "
	       "(%llu on files, %llu swap-ins)\n",
	       s->path, (unsigned long long)f->total, (unsigned long long)f->file, (unsigned long long)f->anon,
	       f->unknown ? ", some outside any known mapping" : "", (unsigned long long)f->major,
	       (unsigned long long)f->major_file, (unsigned long long)f->major_anon);
	if (f->period > 1)
		printf("# ESTIMATE: one fault in %llu was recorded (-e faults/%llu); each counts for %llu\n",
		       (unsigned long long)f->period, (unsigned long long)f->period, (unsigned long long)f->period);
	if (!f->kinds && f->total)
		printf("# no fault kinds: recorded with the page-faults software event\n");
	else if (f->total)
		printf("# kinds: each fault is a read, a write or an exec; cow (a write to a present page) and kernel (the "
		       "kernel touching user memory) are among those, counted again\n");
	printf("\n%10s %8s", "FAULTS", "MAJOR");
	kinds_text(f, NULL);
	printf("  %-6s %s\n", "TYPE", "MAPPING");
	for (size_t i = 0; i < o->nf && i < f->top; i++) {
		printf("%10llu %8llu", (unsigned long long)o->files[i]->faults, (unsigned long long)o->files[i]->major);
		kinds_text(f, o->files[i]->by_kind);
		printf("  %-6s %s\n", o->files[i]->file_backed ? "file" : "anon", o->files[i]->name);
	}
	printf("\n%10s", "FAULTS");
	kinds_text(f, NULL);
	printf("  %7s %s\n", "PID", "COMM");
	for (size_t i = 0; i < o->np && i < f->top; i++) {
		printf("%10llu", (unsigned long long)o->procs[i]->faults);
		kinds_text(f, o->procs[i]->by_kind);
		printf("  %7d %s\n", o->procs[i]->pid, o->procs[i]->name);
	}
	stacks_text(f, "faults", o->minor, o->nm);
	if (o->ns)
		printf("\n# swap-ins (major faults on anonymous memory) by stack\n");
	stacks_text(f, "swap-ins", o->swapin, o->ns);
}

int cmd_faults(int argc, char **argv, struct analyze_opts *a)
{
	struct faults f = { .pid = -1, .lines = 1 };
	const struct opt options[] = {
		OPT_U64('T', "top", &f.top, "N", "files and stacks shown (default 10 in text, all in JSON)"),
		OPT_PID(&f.pid),
		OPT_BOOL(0, "kernel", &f.kernel, "include kernel frames in the stacks"),
		OPT_JSON(&f.json),
		OPT_LINES(&f.lines),
		OPT_INPUT,
		OPT_SAMPLES,
		OPT_STACKS,
		OPT_END(),
	};
	struct faults_sorted o = { 0 };
	struct session s;
	char err[512];
	int r = cmd_parse(argc, argv, options, usage_text, a), ret = 1;

	if (r >= 0)
		return r;
	f.top = cmd_top_count(f.top, f.json, 10);
	if (cmd_open_group(&s, a->trace, a, "page fault", "faults", "swap"))
		return 1;
	hashmap_init(&f.files, 0);
	hashmap_init(&f.procs, 0);
	stacktab_init_per_command(&f.minor, f.kernel, 1);
	stacktab_init_per_command(&f.swapin, f.kernel, 1);
	/* A stack's faults split by kind. */
	stacktab_set_extra(&f.minor, FAULT_KINDS * sizeof(uint64_t));
	stacktab_set_extra(&f.swapin, FAULT_KINDS * sizeof(uint64_t));
	if (memops_replay(&s, on_fault, &f, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
	} else if (faults_sort(&f, &o)) {
		msg_error("out of memory");
	} else {
		(f.json ? print_json : print_text)(&s, &f, &o);
		ret = 0;
	}
	free(o.files);
	free(o.procs);
	free(o.minor);
	free(o.swapin);
	hashmap_for_each(&f.files, slot) free(slot->ptr);
	hashmap_release(&f.files);
	hashmap_for_each(&f.procs, slot) free(slot->ptr);
	hashmap_release(&f.procs);
	stacktab_release(&f.minor);
	stacktab_release(&f.swapin);
	return cmd_close(&s, ret);
}
