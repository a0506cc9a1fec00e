/*
 * analyze/cmd/cmd_faults.c: memsight faults, page faults (record -e faults, and
 * -e swap for major faults with stacks) by backing file, as ffaults shows
 * them, and by stack, as faults does; major faults on anonymous memory are
 * the swap-ins.
 */
#include <getopt.h>
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
	"stack; major faults on anonymous memory are swap-ins.\n"
	"\n"
	"  -T, --top N          files and stacks shown (default 10)\n"
	"      --pid PID        only this process\n"
	"      --kernel         include kernel frames in the stacks\n"
	"      --lines          add file:line to each frame\n"
	"      --json           one JSON object instead of text\n"
	"  -h, --help           show this help\n"
	CMD_STACK_OPTIONS;

struct fault_file {
	const char *name;
	int file_backed;
	uint64_t faults, major;
};

struct faults {
	long pid;
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

static void stacks_json(const char *key, struct stack_entry **v, size_t n, uint64_t top, int lines)
{
	printf(",\"%s\":[", key);
	for (size_t i = 0; v && i < n && i < top; i++) {
		printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", v[i]->pid);
		json_str(v[i]->comm);
		printf(",\"faults\":%llu,\"frames\":", (unsigned long long)v[i]->weight);
		json_frames(v[i]->frames, v[i]->nr_frames, lines);
		putchar('}');
	}
	putchar(']');
}

static void stacks_text(const char *title, struct stack_entry **v, size_t n, uint64_t top, int lines)
{
	for (size_t i = 0; v && i < n && i < top; i++) {
		printf("\n%llu %s from stack (pid %d %s)\n", (unsigned long long)v[i]->weight, title, v[i]->pid,
		       v[i]->comm);
		print_frames(v[i]->frames, v[i]->nr_frames, lines, "\t\t");
	}
}

int cmd_faults(int argc, char **argv)
{
	enum { OPT_PID = 256, OPT_JSON, OPT_LINES, OPT_KERNEL };
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'T' },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct faults f = { .pid = -1 };
	struct fault_file **files = NULL;
	struct stack_entry **minor = NULL, **swapin = NULL;
	struct session s;
	uint64_t top = 10, v;
	size_t nf = 0, nm = 0, ns = 0;
	int c, json = 0, lines = 0, kernel = 0, ret = 1;
	char err[512];

	while ((c = getopt_long(argc, argv, "T:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			if (parse_u64("--top", optarg, &top))
				return 2;
			break;
		case OPT_PID:
			if (parse_u64("--pid", optarg, &v))
				return 2;
			f.pid = v;
			break;
		case OPT_KERNEL:
			kernel = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_LINES:
			lines = 1;
			break;
		case 'h':
			return cmd_usage(usage_text, 1);
		default:
			return cmd_usage(usage_text, 0);
		}
	}
	if (cmd_one_file(argc))
		return 2;
	if (cmd_open_group(&s, argv[optind], "page fault", "faults", "swap"))
		return 1;
	hashmap_init(&f.files, 0);
	stacktab_init(&f.minor, kernel, 1);
	stacktab_init(&f.swapin, kernel, 1);
	if (memops_replay(&s, on_fault, &f, err, sizeof(err))) {
		msg_error("%s", err[0] ? err : "out of memory");
		goto out;
	}
	files = malloc((f.files.nr ? f.files.nr : 1) * sizeof(*files));
	if (!files)
		goto out;
	hashmap_for_each(&f.files, slot) files[nf++] = slot->ptr;
	if (nf > 1)
		qsort(files, nf, sizeof(*files), file_cmp);
	minor = stacktab_sorted(&f.minor, 0, &nm);
	swapin = stacktab_sorted(&f.swapin, 0, &ns);
	if (json) {
		printf("{\"trace\":");
		json_str(s.path);
		printf(",\"faults\":%llu,\"file_backed\":%llu,\"anonymous\":%llu,\"unknown\":%llu,\"major\":%llu,"
		       "\"major_file\":%llu,\"swapins\":%llu,\"files\":[",
		       (unsigned long long)f.total, (unsigned long long)f.file, (unsigned long long)f.anon,
		       (unsigned long long)f.unknown, (unsigned long long)f.major, (unsigned long long)f.major_file,
		       (unsigned long long)f.major_anon);
		for (size_t i = 0; i < nf && i < top; i++) {
			printf("%s{\"name\":", i ? "," : "");
			json_str(files[i]->name);
			printf(",\"file_backed\":%s,\"faults\":%llu,\"major\":%llu}", files[i]->file_backed ? "true" : "false",
			       (unsigned long long)files[i]->faults, (unsigned long long)files[i]->major);
		}
		putchar(']');
		stacks_json("stacks", minor, nm, top, lines);
		stacks_json("swapin_stacks", swapin, ns, top, lines);
		printf("}\n");
	} else {
		printf("# memsight faults of '%s': %llu page faults, %llu file-backed, %llu anonymous%s; %llu major "
		       "(%llu on files, %llu swap-ins)\n",
		       s.path, (unsigned long long)f.total, (unsigned long long)f.file, (unsigned long long)f.anon,
		       f.unknown ? ", some outside any known mapping" : "", (unsigned long long)f.major,
		       (unsigned long long)f.major_file, (unsigned long long)f.major_anon);
		printf("\n%10s %8s  %-6s %s\n", "FAULTS", "MAJOR", "TYPE", "MAPPING");
		for (size_t i = 0; i < nf && i < top; i++)
			printf("%10llu %8llu  %-6s %s\n", (unsigned long long)files[i]->faults,
			       (unsigned long long)files[i]->major, files[i]->file_backed ? "file" : "anon",
			       files[i]->name);
		stacks_text("faults", minor, nm, top, lines);
		if (ns)
			printf("\n# swap-ins (major faults on anonymous memory) by stack\n");
		stacks_text("swap-ins", swapin, ns, top, lines);
	}
	ret = 0;
out:
	session_report_unwind(&s);
	symbols_report_unresolved(&s.syms, stderr);
	free(files);
	free(minor);
	free(swapin);
	hashmap_for_each(&f.files, slot) free(slot->ptr);
	hashmap_release(&f.files);
	stacktab_release(&f.minor);
	stacktab_release(&f.swapin);
	session_release(&s);
	return ret;
}
