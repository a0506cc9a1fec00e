/*
 * analyze/replay/session.h: one trace opened for analysis.
 *
 * Owns reading the META of a trace (host facts, events, tracefs formats
 * handed to libtraceevent, /proc snapshots, kernel symbols, late build-ids,
 * statistics, losses), decoding perf records by each event's sample_type,
 * and replaying the process/map records into the machine before each
 * sample is handed to a command. Commands see samples, never raw records.
 */
#ifndef MEMSIGHT_SESSION_H
#define MEMSIGHT_SESSION_H

#include <linux/perf_event.h>
#include <stdint.h>

#include "../../formats/allocfns.h"
#include "../../formats/meta.h"
#include "../../formats/stackdump.h"
#include "../../formats/trace.h"
#include "machine.h"
#include "../stacks/jitsyms.h"
#include "../stacks/symbols.h"

struct tep_handle;
struct tep_event;
struct tep_format_field;

enum ev_kind {
	EVK_OTHER,
	EVK_TRACKING,
	EVK_BRK_ENTER,
	EVK_BRK_EXIT,
	EVK_MMAP_ENTER,
	EVK_MMAP_EXIT,
	EVK_MUNMAP_ENTER,
	EVK_MUNMAP_EXIT,
	EVK_MREMAP_ENTER,
	EVK_MREMAP_EXIT,
	EVK_FAULT,
	EVK_FAULT_MAJ,
	EVK_ALLOC_ENTRY,	/* an allocation function's entry uprobe */
	EVK_ALLOC_RET,		/* its return uprobe */
	/* kernel memory (groups kmem, reclaim, oom, shm, rss, migrate,
	 * compaction); their fields are read by name, sample_num() */
	EVK_KMALLOC,
	EVK_KMEM_CACHE_ALLOC,
	EVK_KFREE,
	EVK_KMEM_CACHE_FREE,
	EVK_PAGE_ALLOC,
	EVK_PAGE_FREE,
	EVK_PAGE_FREE_BATCHED,
	EVK_PERCPU_ALLOC,
	EVK_PERCPU_FREE,
	EVK_DIRECT_RECLAIM_BEGIN,
	EVK_DIRECT_RECLAIM_END,
	EVK_MEMCG_RECLAIM_BEGIN,
	EVK_MEMCG_RECLAIM_END,
	EVK_KSWAPD_WAKE,
	EVK_KSWAPD_SLEEP,
	EVK_WAKEUP_KSWAPD,
	EVK_SHRINK_SLAB_START,
	EVK_SHRINK_SLAB_END,
	EVK_OOM_VICTIM,
	EVK_OOM_REAP,		/* wake_reaper, start/finish/skip_task_reaping */
	EVK_SHM_ENTER,		/* sys_enter_shm*: ev->d.name says which */
	EVK_SHM_EXIT,
	EVK_RSS_STAT,
	EVK_MIGRATE_START,
	EVK_MIGRATE,
	EVK_COMPACT_TRY,
	EVK_COMPACT_BEGIN,
	EVK_COMPACT_END,
	EVK_COMPACT_MIGRATEPAGES,
	EVK_COMPACT_DEFER,
	EVK_KCOMPACTD_WAKE,
	EVK_KCOMPACTD_SLEEP,
	EVK_SIGNAL,		/* signal:signal_deliver of a memory error's signal */
	EVK_DEEP_STACK,		/* deep-stacks: unwound for others to join from, never shown */
	EVK_SYSCALLS,		/* the syscall carrier (catalog.h): each sample is filed as
				 * the event of its call, one of its calls[] */
};

/* Field slots of allocation events in sess_event.fields. */
enum { AF_SIZE, AF_NMEMB, AF_PTR, AF_MEMPTR, AF_ALIGN, AF_CALLER, AF_INSN, AF_RATE, AF_WEIGHT, AF_KIND, AF_FN };
enum { AF_RET, AF_RET_IP, AF_RET_FN };

#define SESS_MAX_FIELDS 11
#define SESS_NAMED_FIELDS 12
#define SESS_MAX_CHAIN 512
#define SESS_MAX_USER_FRAMES 256

struct sess_event {
	struct trace_event_desc d;
	struct perf_event_attr attr;	/* zero-extended to this build's size */
	struct tep_event *tp;		/* NULL for non-tracepoints */
	enum ev_kind kind;
	enum alloc_fn fn;		/* EVK_ALLOC_* */
	uint64_t nr_samples;		/* seen during the last replay */
	struct tep_format_field *fields[SESS_MAX_FIELDS]; /* syscall args or "ret" */
	const char *const *field_names;	/* the catalog's names of fields (NULL for none) */
	struct { const char *name; struct tep_format_field *f; } named[SESS_NAMED_FIELDS]; /* sample_num's cache */
	int nr_named;
	/* EVK_SYSCALLS: the calls its filter kept, by number, each with the
	 * index in the session's events of the one its samples are filed as
	 * (which has no ids of its own), and where a sample holds the number */
	struct { int64_t nr; size_t ev; } calls[8];
	size_t nr_calls;
	struct tep_format_field *call_nr;
};

struct sample {
	struct sess_event *ev;
	uint32_t pid, tid, cpu;
	uint64_t time, ip, addr;
	uint64_t nr_ips;
	const uint64_t *ips;	/* callchain with PERF_CONTEXT_* markers */
	uint32_t raw_size;
	const void *raw;
	uint64_t regs_mask;	/* PERF_SAMPLE_REGS_USER: which registers regs holds */
	const uint64_t *regs;	/* NULL when none were recorded */
	struct stackdump stack;	/* PERF_SAMPLE_STACK_USER, dense or packed; size 0 when none */
	uint64_t cgroup;	/* PERF_SAMPLE_CGROUP: its cgroup's id; 0 when not recorded */
	uint16_t misc;
};

/* A tracepoint field of a sample by name: its number (0 when the event
 * has no such field), or its string into buf ("" when none). */
uint64_t sample_num(const struct sample *smp, const char *field);
int64_t sample_snum(const struct sample *smp, const char *field);
const char *sample_str(const struct sample *smp, const char *field, char *buf, size_t len);

/* The system's state the recorder saved when it saw an OOM kill
 * (TRACE_META_OOM): "key value" lines, then "--- SECTION" blocks. */
struct oom_context {
	uint64_t time;
	int victim, trigger;
	char *text;
};

/* A user register of a sample by perf_regs number; 0 when not recorded. */
int sample_reg(const struct sample *smp, int reg, uint64_t *val);
/* perf_regs.h's x86-64 numbers of the stack pointer and the ip. */
#define SAMPLE_REG_SP 7
#define SAMPLE_REG_IP 8

/* How a trace is analyzed: the options of stacks and symbols every
 * command that shows stacks takes, and the diagnostics the environment
 * turns on (read once, by main.c). */
struct analyze_opts {
	struct symbols_opts sym;
	int unwinder;		/* enum unwind_backend, for DWARF stacks */
	int no_inline;		/* no frames for inlined functions */
	int unwind_stats;	/* say how much stack dump complete stacks needed */
	int unwind_check;	/* check the cached unwind rules against libdw's walk */
	int read_stats;		/* say how often the trace was replayed, and its chunks read */
	unsigned leak_heuristics_off; /* --leak-check-heuristics: bits by enum reach_heuristic, off */
	unsigned progress_delay_ms; /* progress on a terminal after this long (msg_progress_begin) */
	const char *cgroup;	/* --cgroup: only the samples of this cgroup and those below it */
	/* --pid, --tid, --comm: only the samples of these (none given: all);
	 * --time: of this window, in ns from the first sample (end 0: on);
	 * --last: of this many ns before the last sample (0: all). */
#define ANALYZE_MAX_SELECT 64
	int pids[ANALYZE_MAX_SELECT], nr_pids;
	int tids[ANALYZE_MAX_SELECT], nr_tids;
	char comms[ANALYZE_MAX_SELECT][16];
	int nr_comms;
	uint64_t time_from, time_to, time_last;
	const char *trace;	/* the trace a command reads: FILE, -i FILE, or ./memsight.trace */
#define ANALYZE_MAX_DEBUG_DIRS 16
	const char *debug_dirs[ANALYZE_MAX_DEBUG_DIRS]; /* sym.debug_dirs points here */
	const char *env_debuginfod_urls; /* $DEBUGINFOD_URLS, for a bare --debuginfod */
	int status_fd;		/* MEMSIGHT_STATUS_FD: what a view counted, for the program that ran it; 0 none */
	int follow_fds[2];	/* MEMSIGHT_FOLLOW_FDS: requests in, replies out, for top (cmd.c); 0 none */
};

struct session {
	struct analyze_opts o;
	char *path;
	struct trace_reader r;
	char *host;
	size_t host_len;
	char *stats;
	size_t stats_len;
	char *buildids;
	size_t buildids_len;
	char *probes;		/* META probes: "pid\tlate_ns\tpath\n", allocators probed while recording */
	unsigned selection_said; /* that --pid, --comm, ... matched nothing, said once */
	size_t probes_len;
	char *snapshot;		/* TRACE_META_SNAPSHOT: the trigger that cut this window */
	size_t snapshot_len;
	char *objects;		/* TRACE_META_OBJECTS: the objects stacks touched, carried or why not */
	size_t objects_len;
	int vdso_looked;	 /* vdso: the embedded vDSO image, once looked for */
	struct dso *vdso;
	uint64_t vdso_size;
	struct sess_event *evs;
	size_t nr_evs;
	struct sess_id { uint64_t id; struct sess_event *ev; } *ids;
	size_t nr_ids;
	struct tep_handle *tep;
	struct symbols syms;
	struct jitsyms jit;	/* the runtimes' perf maps and jitdumps the trace carries */
	uint64_t jit_bad;	/* of them, the copies that could not be read */
	char jit_err[256];	/* why the first could not */
	struct machine m;
	struct oom_context *ooms;
	size_t nr_ooms;
	size_t *reach_chunks;	/* the TRACE_META_REACH chunks (--leak-check scans) */
	size_t nr_reach;
	uint64_t lost;		/* from LOSS chunks */
	uint64_t lost_unreported; /* of those, what no PERF_RECORD_LOST placed in time */
	uint64_t lost_records;	/* PERF_RECORD_LOST seen in the replay */
	uint64_t lost_live;	/* the recorder's count while recording, from the last META lost */
	uint64_t lost_deep;	/* deep-stacks samples lost, from LOSS chunks (not in lost) */
	uint64_t lost_deep_records; /* PERF_RECORD_LOST of the deep-stacks rings seen in the replay */
	int loss_said;		/* the command's own output says what was lost */
	/* Page faults of the wrapper's writes to its own report rings, left
	 * out of every view: the recorder's cost, not the program's memory.
	 * Counted once a sample, whichever view saw it first. */
	uint64_t own_faults, own_last_time;
	int own_last_tid;
	uint64_t last_loss;	/* time of the last PERF_RECORD_LOST in the replay, 0 if none */
	uint64_t nr_samples, first_time, last_time;
	uint64_t since;		/* --last: the first time kept, 0 for all */
	int recorder_pid;
	unsigned page_size;
	int nr_snapshots;
	int include_recorder;
	struct unwinder *uw;	/* for --call-graph dwarf samples, made on first use */
	int no_unwind;		/* set by commands that never show stacks */
	int prefetched;		/* the embedded objects were given to the loader */
	uint64_t chain[SESS_MAX_CHAIN]; /* a DWARF sample's kernel + unwound user chain */
	struct hashmap cgroup_paths; /* cgroup id -> its path below the hierarchy's root (interned) */
	struct hashmap proc_cgroup;  /* pid -> the cgroup id of its last sample */
	struct hashmap nspids;	     /* pid -> its pid inside its own pid namespace */
	char *cgroup_want;	     /* --cgroup, as a path below the hierarchy's root */
	uint64_t fp_stacks;	/* user frame-pointer callchains seen */
	uint64_t fp_cut;	/* of those, cut where they left the process's code */
	uint64_t fp_deep;	/* of those, as deep as the kernel walks (max_stack): callers lost */
	int max_stack;		/* the recording kernel's perf_event_max_stack; 0 when not known */
	/* The trace's numbers of the malloc family (META alloc_fns) as this
	 * build's: -1 for one it does not know. */
	int16_t alloc_fn_of[AF_NR * 2];
	struct replay_hook { void (*fn)(void *); void *arg; } *at_end; /* see session_at_replay_end */
	size_t nr_at_end, at_end_alloc;
	struct exec_hook {
		void (*fn)(void *arg, struct session *s, int pid, uint64_t time);
		void *arg;
	} *on_exec;		/* see session_on_exec */
	size_t nr_on_exec;
	/* What the views of a replay share (cmd.c: the allocations paired
	 * once for all), released with the session. */
	void *shared;
	void (*shared_release)(void *shared);
	struct map_hook {
		void (*fn)(void *arg, struct session *s, int pid, const struct map *map);
		void *arg;
	} *on_code_map;		/* see session_on_code_map */
	size_t nr_on_code_map;
	/* A command that shows a live trace as it grows (session_replay):
	 * called (again 0) when the replay has handed on every sample it can
	 * (with --last, every one before the window: none of them goes to
	 * the views, s->since says), before the file is looked at again:
	 * returns 0 to go on, SESSION_FOLLOW_SHOW to go on to the look's
	 * horizon without looking (a process that shows the window),
	 * TRACE_FOLLOW_END to end the replay there, or another value to stop
	 * with it. Called (again 1) when the trace changed in a way only a
	 * replay from the start reads; the replay then returns
	 * SESSION_REPLAY_AGAIN. */
	int (*follow)(struct session *s, void *arg, int again);
	void *follow_arg;
	struct window_hook {
		int (*fn)(void *arg, struct session *s, uint64_t from);
		void *arg;
	} on_window;		/* see session_on_window */
	int follow_shown;	/* a process that shows a followed replay: it ends once it has */
};

/* What session_replay returns when a trace it follows as it grows
 * changed in a way only a replay from the start reads: META that is not
 * only more of the same (a process, an event, the recording's end), or
 * the file replaced. */
#define SESSION_REPLAY_AGAIN 2
#define SESSION_FOLLOW_SHOW 3

/* Open a trace and read its META, analyzing it as opts say (NULL: the
 * defaults; copied). Returns 0, or -1 with a one-line reason in err. A
 * cut-short trace opens; s->r.stop says where it ends. */
int session_open(struct session *s, const char *path, const struct analyze_opts *opts, char *err, size_t errlen);
void session_release(struct session *s);
/* MEMSIGHT_READ_STATS: how the trace was read, on stderr (session_release
 * says it). */
void session_say_reads(const struct session *s);

/* Callback for every sample in time order. Return 0 to go on. */
typedef int (*session_sample_fn)(struct session *s, struct sample *smp, void *arg);
/* Replay the records: returns 0, -1 with err set, or the callback's value. */
int session_replay(struct session *s, session_sample_fn fn, void *arg, char *err, size_t errlen);

/* Call fn(arg) once when the replay under way ends, before
 * session_replay returns: for work that waits for all the samples, like
 * naming the stacks kept. Returns 0 or -ENOMEM. */
int session_at_replay_end(struct session *s, void (*fn)(void *), void *arg);

/* Call fn(arg, s, pid, time) whenever a process execs during the replay
 * under way or the next one: its address space is replaced, and with it
 * its heap break, its blocks and any call pending in it. Returns 0 or
 * -ENOMEM. */
int session_on_exec(struct session *s, void (*fn)(void *arg, struct session *s, int pid, uint64_t time),
		    void *arg);

/* Call fn(arg, s, pid, map) for every mapping of a file's code (PROT_EXEC)
 * a process makes during the replay under way or the next one. Returns 0
 * or -ENOMEM. */
int session_on_code_map(struct session *s, void (*fn)(void *arg, struct session *s, int pid, const struct map *map),
			void *arg);

/* A ring followed as it is written (s->follow) whose recorder begins
 * another segment moves its window on: fn(arg, s, from) is then called,
 * from being when the window's oldest segment began, for the command to
 * drop what it holds of before then (0, or -1 when it cannot: the replay
 * starts again). A command that sets none, and counts no --last window,
 * has its replay start again on the window instead. One hook, for the
 * replay under way or the next one. */
void session_on_window(struct session *s, int (*fn)(void *arg, struct session *s, uint64_t from), void *arg);

/* Whether any event of a group ("kmem") was recorded. */
int session_group_recorded(struct session *s, const char *group);
/* Were page faults recorded with their kinds (the exceptions tracepoints,
 * not the page-faults software event)? */
int session_fault_kinds(const struct session *s);
/* The sampling period of a group's events (GROUP/N), 1 when every event
 * was kept. */
uint64_t session_group_period(struct session *s, const char *group);

/* Host/stats "key value" lookups; return def when absent. */
const char *session_host(struct session *s, const char *key, char *buf, size_t len, const char *def);
long long session_stat(const struct session *s, const char *key, long long def);

/* A tracepoint field of a sample as a number (0 if absent). */
uint64_t session_field(struct session *s, const struct sample *smp, int idx);
/* The arguments of the syscall a SYSCALL event's sample (catalog.h) ended,
 * from its user registers, into args (CATALOG_SYSCALL_NR_ARGS of them)
 * and their names into *names (NULL-ended): their number, or 0 for a
 * sample that has none (an exit of an earlier recorder's trace, whose
 * arguments are its entry's fields). */
int sample_syscall_args(const struct sample *smp, uint64_t *args, const char *const **names);
/* The function a sample of an allocation event stands for: its event's,
 * or where one event holds an object's otel_memory probes (AF_OTEL_SITES)
 * the one its kind names, or where one holds several functions' probes
 * (AF_ALLOCS, AF_FREES) the one its fn names; -1 for a kind or fn that
 * names none. */
int session_alloc_fn(struct session *s, const struct sample *smp);
/* The path below its hierarchy's root of cgroup id, NULL when unknown. */
const char *session_cgroup_path(const struct session *s, uint64_t id);
/* The cgroup of a process by its last sample replayed, NULL when none is
 * known (a recording without -a). */
const char *session_process_cgroup(const struct session *s, int pid);
/* The pid of a process inside its own pid namespace, 0 when it is in the
 * recorder's. */
int session_nspid(const struct session *s, int pid);
/* The container a cgroup path names (Docker, containerd, CRI-O, podman:
 * a component holding a 64-digit hex id), as its 12-digit short id in
 * buf; NULL when it names none. */
const char *session_container_id(const char *path, char *buf, size_t len);

/* Say on stderr, in one line each for DWARF and frame-pointer stacks, how
 * many stopped before their outermost frame, and why. */
void session_report_unwind(struct session *s);
/* Warn once on stderr about an incomplete trace. */
void session_warn_incomplete(struct session *s);

/* Whether events are missing: lost by the kernel, or the trace cut short. */
int session_incomplete(const struct session *s);
/* After a replay: the time before which events may be missing (the last
 * loss the replay placed; the trace's end when some loss has no time, or
 * it is cut short), 0 when none is. */
uint64_t session_loss_horizon(const struct session *s);
/* After a replay: the events lost, the most that the LOSS chunks, the
 * PERF_RECORD_LOST records met and the recorder's counts while recording
 * say (each counts from the start; a trace still being written has no
 * LOSS chunk, and its records lag the kernel's count). */
uint64_t session_lost(const struct session *s);
/* After a replay: the deep-stacks samples lost in their own rings. They
 * cost no finding, only stacks left as the dump ended them. */
uint64_t session_lost_deep(const struct session *s);

/* ---- frames ---------------------------------------------------------- */

struct frame {
	uint64_t ip;
	int kernel;
	const char *obj;	/* object path or map name (interned), NULL for kernel or unmapped */
	const char *sym;	/* NULL when unknown */
	uint64_t off;		/* into sym, or the file offset / address */
	struct dso *dso;	/* the object, for source lines; NULL if none */
	uint64_t file_off;	/* offset of ip in dso's file */
	int ret;		/* ip is a return address */
	int inlined;		/* a function inlined at ip, shown above the one it is in */
	const char *call_file;	/* a frame that inlined the one below it: the call's source */
	int call_line;
};

/* The sample's callchain, innermost first, symbolized. kernel/user pick
 * the parts. Returns the number of frames. */
int session_frames(struct session *s, const struct sample *smp, struct frame *out, int max, int kernel,
		   int user);
/* The same in two steps. First each frame's object, from the maps of the
 * sample's moment, without names (cheap; it also starts loading the
 * objects on another thread); then the names, with inlined functions as
 * frames of their own, at any later time: n raw frames in, at most max out. */
int session_frames_raw(struct session *s, const struct sample *smp, struct frame *out, int max, int kernel,
		       int user);
int session_frames_name(struct session *s, const struct frame *raw, int n, struct frame *out, int max);
/* What session_frames_raw's frames are made of, without making them: for
 * each frame FRAME_KEY_WORDS words (its object's name and dso, and its
 * offset there; a kernel frame's address), at most max words in all.
 * Equal keys are the same code path in any process, and give equal raw
 * frames. Returns the number of words. */
#define FRAME_KEY_WORDS 3
int session_frames_key(struct session *s, const struct sample *smp, uint64_t *key, int max, int kernel, int user);
/* The raw frame of one frame's key words. A user frame in an object has
 * its offset there for an address: the key is the same in every process. */
void frame_of_key(const uint64_t *key, struct frame *f);
/* Start loading what naming the raw frame f will need, on another thread. */
void session_frame_prefetch(struct session *s, const struct frame *f);
/* Source file and line of a frame (the call site for a function that
 * inlined the frame below it); 0, or -1 when unknown. */
int frame_srcline(const struct frame *f, const char **file, int *line);
/* "sym+0x1f", "fn (inlined)", "[libc.so.6]+0x1234" or "[unknown]" into buf. */
const char *frame_name(const struct frame *f, char *buf, size_t len, int with_offset);

#endif
