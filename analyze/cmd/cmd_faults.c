/*
 * analyze/cmd/cmd_faults.c: memsight faults, page faults (record -e faults, and
 * -e swap for major faults with stacks) by backing file, as ffaults shows
 * them, and by stack, as faults does; major faults on anonymous memory are
 * the swap-ins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "../model/memops.h"
#include "../model/stacktab.h"

static const char usage_text[] =
	"usage: memsight faults [options] FILE\n"
	"\n"
	"Page faults by backing file (file-backed against anonymous memory) and by\n"
	"stack; major faults on anonymous memory are swap-ins.\n";

struct fault_file {
	const char *name;
	int file_backed;
	uint64_t faults, major;
};

struct faults {
	long pid;
	uint64_t top;
	int json, lines, kernel;
	struct hashmap files;	/* interned name -> struct fault_file * */
	struct stacktab minor, swapin;
	uint64_t total, major, file, anon, unknown, major_anon, major_file;
};

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
		ff->major++;
		f->major++;
		if (fb) {
			f->major_file++;
		} else if (op->map) {
			f->major_anon++;
			if (op->stack->nr_ips && !stacktab_add(&f->swapin, s, op->stack, 1))
				return -1;
		}
		return 0;
	}
	ff->faults++;
	f->total++;
	if (!op->map)
		f->unknown++;
	else if (fb)
		f->file++;
	else
		f->anon++;
	if (op->stack->nr_ips && !stacktab_add(&f->minor, s, op->stack, 1))
		return -1;
	return 0;
}

static int file_cmp(const void *a, const void *b)
{
	const struct fault_file *x = *(struct fault_file *const *)a, *y = *(struct fault_file *const *)b;

	if (x->faults != y->faults)
		return x->faults > y->faults ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The faults, sorted: by file, by stack, swap-ins by stack. */
struct faults_sorted {
	struct fault_file **files;
	struct stack_entry **minor, **swapin;
	size_t nf, nm, ns;
};

static int faults_sort(struct faults *f, struct faults_sorted *o)
{
	o->files = malloc((f->files.nr ? f->files.nr : 1) * sizeof(*o->files));
	if (!o->files)
		return -1;
	hashmap_for_each(&f->files, slot) o->files[o->nf++] = slot->ptr;
	if (o->nf > 1)
		qsort(o->files, o->nf, sizeof(*o->files), file_cmp);
	o->minor = stacktab_sorted(&f->minor, 0, &o->nm);
	o->swapin = stacktab_sorted(&f->swapin, 0, &o->ns);
	return 0;
}

static void stacks_json(struct json *j, const char *key, struct stack_entry **v, size_t n, uint64_t top, int lines)
{
	json_begin_array(j, key);
	for (size_t i = 0; v && i < n && i < top; i++) {
		json_begin(j, NULL);
		json_i64(j, "pid", v[i]->pid);
		json_str(j, "comm", v[i]->comm);
		json_u64(j, "faults", v[i]->weight);
		cmd_json_frames(j, "frames", v[i]->frames, v[i]->nr_frames, lines);
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
	json_u64(&j, "faults", f->total);
	json_u64(&j, "file_backed", f->file);
	json_u64(&j, "anonymous", f->anon);
	json_u64(&j, "unknown", f->unknown);
	json_u64(&j, "major", f->major);
	json_u64(&j, "major_file", f->major_file);
	json_u64(&j, "swapins", f->major_anon);
	json_begin_array(&j, "files");
	for (size_t i = 0; i < o->nf && i < f->top; i++) {
		json_begin(&j, NULL);
		json_str(&j, "name", o->files[i]->name);
		json_bool(&j, "file_backed", o->files[i]->file_backed);
		json_u64(&j, "faults", o->files[i]->faults);
		json_u64(&j, "major", o->files[i]->major);
		json_end(&j);
	}
	json_end(&j);
	stacks_json(&j, "stacks", o->minor, o->nm, f->top, f->lines);
	stacks_json(&j, "swapin_stacks", o->swapin, o->ns, f->top, f->lines);
	json_end(&j);
}

static void stacks_text(const char *title, struct stack_entry **v, size_t n, uint64_t top, int lines)
{
	for (size_t i = 0; v && i < n && i < top; i++) {
		printf("\n%llu %s from stack (pid %d %s)\n", (unsigned long long)v[i]->weight, title, v[i]->pid,
		       v[i]->comm);
		print_frames(v[i]->frames, v[i]->nr_frames, lines, "\t\t");
	}
}

static void print_text(const struct session *s, const struct faults *f, const struct faults_sorted *o)
{
	printf("# memsight faults of '%s': %llu page faults, %llu file-backed, %llu anonymous%s; %llu major "
	       "(%llu on files, %llu swap-ins)\n",
	       s->path, (unsigned long long)f->total, (unsigned long long)f->file, (unsigned long long)f->anon,
	       f->unknown ? ", some outside any known mapping" : "", (unsigned long long)f->major,
	       (unsigned long long)f->major_file, (unsigned long long)f->major_anon);
	printf("\n%10s %8s  %-6s %s\n", "FAULTS", "MAJOR", "TYPE", "MAPPING");
	for (size_t i = 0; i < o->nf && i < f->top; i++)
		printf("%10llu %8llu  %-6s %s\n", (unsigned long long)o->files[i]->faults,
		       (unsigned long long)o->files[i]->major, o->files[i]->file_backed ? "file" : "anon",
		       o->files[i]->name);
	stacks_text("faults", o->minor, o->nm, f->top, f->lines);
	if (o->ns)
		printf("\n# swap-ins (major faults on anonymous memory) by stack\n");
	stacks_text("swap-ins", o->swapin, o->ns, f->top, f->lines);
}

int cmd_faults(int argc, char **argv, struct analyze_opts *a)
{
	struct faults f = { .pid = -1, .top = 10 };
	const struct opt options[] = {
		OPT_U64('T', "top", &f.top, "N", "files and stacks shown (default 10)"),
		OPT_PID(&f.pid),
		OPT_BOOL(0, "kernel", &f.kernel, "include kernel frames in the stacks"),
		OPT_BOOL(0, "json", &f.json, "one JSON object instead of text"),
		OPT_LINES(&f.lines),
		OPT_STACKS,
		OPT_END(),
	};
	struct faults_sorted o = { 0 };
	struct session s;
	char err[512];
	int r = cmd_parse(argc, argv, options, usage_text, a), ret = 1;

	if (r >= 0)
		return r;
	if (cmd_open_group(&s, argv[optind], a, "page fault", "faults", "swap"))
		return 1;
	hashmap_init(&f.files, 0);
	stacktab_init(&f.minor, f.kernel, 1);
	stacktab_init(&f.swapin, f.kernel, 1);
	if (memops_replay(&s, on_fault, &f, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
	} else if (faults_sort(&f, &o)) {
		msg_error("out of memory");
	} else {
		(f.json ? print_json : print_text)(&s, &f, &o);
		ret = 0;
	}
	free(o.files);
	free(o.minor);
	free(o.swapin);
	hashmap_for_each(&f.files, slot) free(slot->ptr);
	hashmap_release(&f.files);
	stacktab_release(&f.minor);
	stacktab_release(&f.swapin);
	return cmd_close(&s, ret);
}
