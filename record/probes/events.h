/*
 * record/probes/events.h: what memsight can record, as perf_event_attr.
 *
 * Owns the table of event groups (-e brk,mmap,faults), finding tracepoints
 * in tracefs (mounting it when nobody has), and building each event's attr.
 * An event knows where the callchain sits in its samples so the drain loop
 * can collect kernel addresses without a general sample parser. Knows
 * nothing of rings, targets or the trace file.
 */
#ifndef MEMSIGHT_RECORD_EVENTS_H
#define MEMSIGHT_RECORD_EVENTS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct rec_event {
	char name[128];		 /* "syscalls:sys_exit_mmap", "page-faults" */
	const char *group;	 /* "mmap", "faults", "" for the tracking event */
	char *format;		 /* tracefs format text, NULL for non-tracepoints */
	struct perf_event_attr attr;
	uint64_t *ids;		 /* one per fd opened */
	size_t described;	 /* ids in the trace's description of it so far (one opened late) */
	int *fds;		 /* the fds, in the order of ids */
	size_t nr_ids, ids_alloc;
	uint64_t samples;	 /* counted by the drain loop */
	unsigned callchain_off;	 /* byte offset of the callchain in a sample, 0 if none */
	char filter[512];	 /* PERF_EVENT_IOC_SET_FILTER text for every fd, "" for none */
	int dropped;		 /* the kernel refused its filter: not recorded */
	int victim_pid_off;	 /* oom:mark_victim: offset of "pid" in its raw data; 0 for
				  * other events (the common fields hold offset 0) */
	int watch;		 /* what a flight recorder trigger reads from it (flight.h), 0 for nothing */
	int dump_data;		 /* its stack dump holds a result to read, not frames to unwind:
				  * kept by the pointers rule (write/scrub.h) */
	uint64_t keep_regs;	 /* user registers the scrub keeps as they are: a syscall's
				  * arguments, which are no addresses to unwind by */
	/* The syscall carrier (catalog.h's SYSCALL rows): the calls its
	 * filter keeps, each with its arguments' registers and what
	 * --filter narrows it to; its group lists theirs ("brk,mmap"). */
	struct rec_syscall {
		uint64_t nr;
		const char *name, *group;
		uint64_t regs;
		char filter[256];
	} calls[8];
	size_t nr_calls;
	char *groups;		 /* the carrier's group, owned */
	int id_off;		 /* the carrier: offset of the call's number in its raw data */
	uint64_t count_total;	 /* firings (over the period) and lost samples as it stopped */
	uint64_t count_lost;
};

enum rec_callchain {
	REC_CG_NONE,
	REC_CG_FP,		/* kernel and user frame-pointer callchains */
	REC_CG_DWARF,		/* kernel callchain, user registers and stack dump */
};

/* --call-graph dwarf: the registers DWARF CFI on x86-64 can need (the
 * general-purpose ones and ip; not flags or segments), and the default
 * stack dump (see record.c for how it was chosen). */
#define REC_DWARF_REGS 0xff01ffull
/* perf_regs.h numbering for x86-64: the stack pointer. */
#define REC_REG_SP 7
#define REC_DWARF_STACK_DEFAULT 8192u
/* --deep-freq: the default, and the most asked of the kernel (whose
 * kernel.perf_event_max_sample_rate may be lower still). */
#define REC_DEEP_FREQ_DEFAULT 500
#define REC_DEEP_FREQ_MAX 10000u

struct rec_opts_events {
	enum rec_callchain callchain;
	unsigned stack_size;	/* REC_CG_DWARF: bytes of user stack per sample */
	int system_wide;
	int inherit;
	int enable_on_exec;
	unsigned wakeup_bytes;
	int build_id;		/* kernel puts build-ids into MMAP2 */
	int format_lost;	/* read() can give each event's lost samples */
};

/* The names of the groups this recorder knows, for -h and errors. */
extern const char *const events_group_names[];

/* Path of the tracefs mount, mounting it at /sys/kernel/tracing when no
 * tracefs is mounted. NULL with errno set when there is none. */
const char *events_tracefs(void);
/* Use path as tracefs instead of looking for the mount. */
void events_tracefs_use(const char *path);

/* Read a tracefs file into a malloc'd NUL-terminated string. */
char *events_tracefs_read(const char *rel, size_t *len);

/*
 * Append the events of group `name` to *evs, each taking one sample in
 * `period` firings (0 or 1: every one). An event another group already
 * added is not added twice. Returns 0, with the events this kernel lacks
 * listed in `missing` ("" when none) and in *fallback the software event
 * recorded in place of tracepoints the kernel lacks (NULL when none);
 * -ENOENT for an unknown group name; -ENODEV when the kernel has none of
 * its events; -EACCES when tracefs may not be read.
 */
int events_group_add(const char *name, uint64_t period, const struct rec_opts_events *o, struct rec_event **evs,
		     size_t *nr, char *missing, size_t missing_len, const char **fallback);

/* The tracking event (dummy software event carrying MMAP2, COMM, FORK, EXIT). */
int events_tracking_add(const struct rec_opts_events *o, struct rec_event **evs, size_t *nr);

/* The deep-stacks event (formats/catalog.h): page faults sampled freq
 * times a second with the largest stack dump, for -g dwarf. */
int events_deep_add(const struct rec_opts_events *o, unsigned freq, struct rec_event **evs, size_t *nr);
/* Whether e is that event: its samples go to rings of their own. */
int events_is_deep(const struct rec_event *e);

int events_id_add(struct rec_event *e, uint64_t id, int fd);
int events_push(struct rec_event **evs, size_t *nr, const struct rec_event *e);
/* The attr fields every memsight event shares (see FORMAT.md, DATA). */
void events_attr_common(struct perf_event_attr *a, const struct rec_opts_events *o);
unsigned events_callchain_offset(uint64_t sample_type);
/* Byte offset, in a sample, just past its fixed u64 fields (those before
 * the callchain). */
unsigned events_fixed_end(uint64_t sample_type);
/* Add the stack fields -g asks for to an event that takes stacks. */
void events_stack_attr(struct perf_event_attr *a, const struct rec_opts_events *o);
/* Where a sample's PERF_SAMPLE_RAW data starts and how long it is; NULL
 * when the event has none or the record is cut short. */
const unsigned char *events_sample_raw(const struct rec_event *e, const unsigned char *rec, size_t size,
				       uint32_t *raw_len);
/* The offset of a tracepoint field in its raw data, from the format text;
 * -1 when it has none. */
int events_field_offset(const char *format, const char *field);
/* The syscall carrier's kernel filter, from its calls and what --filter
 * gave each, into e->filter. Returns 0, or -ENOSPC when it is too long. */
int events_syscalls_filter(struct rec_event *e);
/* The registers a sample of e keeps as they are: for the carrier, those
 * of the call the sample is of (none for a call it does not keep). */
uint64_t events_sample_keep_regs(const struct rec_event *e, const unsigned char *rec, size_t size);
void events_free(struct rec_event *evs, size_t nr);

#endif
