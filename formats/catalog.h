/*
 * formats/catalog.h: every event memsight records, listed once. The
 * recorder opens the events of the groups asked for from this list (its -h
 * names the groups from it); the analyzer files each recorded event by it.
 * The names are part of the trace's contract: a trace names its events, and
 * an analyzer files them by these names.
 *
 * CATALOG_GROUPS(X) calls X(name, help) for each -e group, in -h order;
 * help's lines are separated by \n. The malloc group's events are uprobes,
 * made per allocator from allocfns.h, not listed here.
 *
 * CATALOG_EVENTS(X) calls X(group, event, type, config, stack, addr, kind,
 * fields...) for each event:
 *   group   the -e group that records it (an event in two groups is
 *           recorded once, with the most either asks)
 *   event   "system:name" for a tracepoint, perf's name for a software event
 *   type    TP, a tracepoint (config unused); SYSCALL, a syscall's exit
 *           recorded with the user registers that hold the call's
 *           arguments (CATALOG_SYSCALL_ARG_REGS), so that one sample has
 *           what was asked and what came back: every SYSCALL row the
 *           groups ask for is one event, CATALOG_SYSCALL_CARRIER, whose
 *           kernel filter keeps the calls by number (config, x86-64's),
 *           and the analyzer files each of its samples under the row its
 *           id names (traces of earlier recorders hold the row's own
 *           tracepoint, filed the same); PAST, a tracepoint
 *           traces of earlier recorders hold, which the analyzer still
 *           files and the recorder no longer opens; SW, a software event
 *           whose config is its PERF_COUNT_SW_ id; or SW_ELSE, a software
 *           event recorded only where none of the group's tracepoints of
 *           the same kind exists on the kernel (the recorder says so once)
 *   stack   1: take a stack (the events that start something: an
 *           allocation, a reclaim, a kill); the events that end or free it
 *           are matched by pointer, pfn or thread and need none
 *   addr    1: sample the address (page faults)
 *   kind    how the analyzer files it: EVK_<kind> in analyze/replay/session.h
 *           (a kind that does not exist there fails the build); OTHER for an
 *           event only `memsight events` shows
 *   fields  the tracepoint fields the analyzer reads by position, for the
 *           syscalls; for a SYSCALL event "ret", then the names of the
 *           call's arguments in their order; NULL for none
 */
#ifndef MEMSIGHT_CATALOG_H
#define MEMSIGHT_CATALOG_H

#define CATALOG_GROUPS(X)                                                                              \
	X("brk", "brk() calls with the new break")                                                     \
	X("mmap", "mmap, munmap, mremap with sizes and results")                                       \
	X("faults", "every page fault (period 1) with its address and kind;\npage-faults, perf's name, is this group")   \
	X("malloc", "malloc, calloc, realloc, free, ... (wrapper or uprobes)")                            \
	X("kmem", "kmalloc, kmem_cache, page and percpu allocations\nand frees")                       \
	X("reclaim", "direct and memcg reclaim, kswapd, slab shrinking")                               \
	X("oom", "OOM kills (with the system's state then) and reaping")                               \
	X("shm", "shmget, shmat, shmdt, shmctl with results")                                          \
	X("rss", "RSS counter changes (kmem:rss_stat)")                                                \
	X("migrate", "page migrations")                                                                \
	X("compaction", "compaction runs, kcompactd, khugepaged's THP collapses")                      \
	X("swap", "major faults with stacks (swap-ins on anonymous\nmemory; no kernel has a swap-in tracepoint)")     \
	X("signals", "fatal signals of memory errors (SEGV, BUS, ABRT,\nILL, TRAP, FPE) with stacks; with malloc, frees take\nstacks too (for memsight errors)")

#define CATALOG_EVENTS(X)                                                                                       \
	/* Each closing of a tracepoint's last perf event waits out a grace     \
	 * period of the kernel's, one after another (20-30 ms): a syscall is   \
	 * recorded at its exit alone, its arguments read from the registers   \
	 * the exit sample carries, and all of them through one tracepoint.    \
	 * Traces before held entry and exit.                                  */ \
	X("brk", "syscalls:sys_exit_brk", SYSCALL, 12, 1, 0, BRK_EXIT, "ret", "brk")                             \
	X("mmap", "syscalls:sys_exit_mmap", SYSCALL, 9, 1, 0, MMAP_EXIT, "ret", "addr", "len", "prot", "flags",  \
	  "fd", "off")                                                                                           \
	X("mmap", "syscalls:sys_exit_munmap", SYSCALL, 11, 1, 0, MUNMAP_EXIT, "ret", "addr", "len")              \
	X("mmap", "syscalls:sys_exit_mremap", SYSCALL, 25, 1, 0, MREMAP_EXIT, "ret", "addr", "old_len",          \
	  "new_len", "flags", "new_addr")                                                                        \
	X("brk", "syscalls:sys_enter_brk", PAST, 0, 1, 0, BRK_ENTER, "brk")                                      \
	X("mmap", "syscalls:sys_enter_mmap", PAST, 0, 1, 0, MMAP_ENTER, "addr", "len", "prot", "flags", "fd", "off") \
	X("mmap", "syscalls:sys_enter_munmap", PAST, 0, 1, 0, MUNMAP_ENTER, "addr", "len")                       \
	X("mmap", "syscalls:sys_enter_mremap", PAST, 0, 1, 0, MREMAP_ENTER, "addr", "old_len", "new_len", "flags", \
	  "new_addr")                                                                                            \
	/* The exceptions tracepoints carry the fault's error code, which the   \
	 * software event lacks; each fault is recorded once, by whichever.    */ \
	X("faults", "exceptions:page_fault_user", TP, 0, 1, 0, FAULT, NULL)                                       \
	X("faults", "exceptions:page_fault_kernel", TP, 0, 1, 0, FAULT, NULL)                                     \
	X("faults", "page-faults", SW_ELSE, PERF_COUNT_SW_PAGE_FAULTS, 1, 1, FAULT, NULL)                         \
	X("faults", "major-faults", SW, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 0, 1, FAULT_MAJ, NULL)                     \
	X("kmem", "kmem:kmalloc", TP, 0, 1, 0, KMALLOC, NULL)                                                     \
	X("kmem", "kmem:kfree", TP, 0, 0, 0, KFREE, NULL)                                                         \
	X("kmem", "kmem:kmem_cache_alloc", TP, 0, 1, 0, KMEM_CACHE_ALLOC, NULL)                                   \
	X("kmem", "kmem:kmem_cache_free", TP, 0, 0, 0, KMEM_CACHE_FREE, NULL)                                     \
	X("kmem", "kmem:mm_page_alloc", TP, 0, 1, 0, PAGE_ALLOC, NULL)                                            \
	X("kmem", "kmem:mm_page_free", TP, 0, 0, 0, PAGE_FREE, NULL)                                              \
	X("kmem", "kmem:mm_page_free_batched", TP, 0, 0, 0, PAGE_FREE_BATCHED, NULL)                              \
	X("kmem", "percpu:percpu_alloc_percpu", TP, 0, 1, 0, PERCPU_ALLOC, NULL)                                  \
	X("kmem", "percpu:percpu_free_percpu", TP, 0, 0, 0, PERCPU_FREE, NULL)                                    \
	X("reclaim", "vmscan:mm_vmscan_direct_reclaim_begin", TP, 0, 1, 0, DIRECT_RECLAIM_BEGIN, NULL)           \
	X("reclaim", "vmscan:mm_vmscan_direct_reclaim_end", TP, 0, 0, 0, DIRECT_RECLAIM_END, NULL)               \
	X("reclaim", "vmscan:mm_vmscan_memcg_reclaim_begin", TP, 0, 1, 0, MEMCG_RECLAIM_BEGIN, NULL)             \
	X("reclaim", "vmscan:mm_vmscan_memcg_reclaim_end", TP, 0, 0, 0, MEMCG_RECLAIM_END, NULL)                 \
	X("reclaim", "vmscan:mm_vmscan_kswapd_wake", TP, 0, 0, 0, KSWAPD_WAKE, NULL)                              \
	X("reclaim", "vmscan:mm_vmscan_kswapd_sleep", TP, 0, 0, 0, KSWAPD_SLEEP, NULL)                            \
	X("reclaim", "vmscan:mm_vmscan_wakeup_kswapd", TP, 0, 0, 0, WAKEUP_KSWAPD, NULL)                          \
	X("reclaim", "vmscan:mm_shrink_slab_start", TP, 0, 0, 0, SHRINK_SLAB_START, NULL)                         \
	X("reclaim", "vmscan:mm_shrink_slab_end", TP, 0, 0, 0, SHRINK_SLAB_END, NULL)                             \
	X("oom", "oom:mark_victim", TP, 0, 1, 0, OOM_VICTIM, NULL)                                                \
	X("oom", "oom:wake_reaper", TP, 0, 0, 0, OOM_REAP, NULL)                                                  \
	X("oom", "oom:start_task_reaping", TP, 0, 0, 0, OOM_REAP, NULL)                                           \
	X("oom", "oom:finish_task_reaping", TP, 0, 0, 0, OOM_REAP, NULL)                                          \
	X("oom", "oom:skip_task_reaping", TP, 0, 0, 0, OOM_REAP, NULL)                                            \
	X("oom", "oom:reclaim_retry_zone", TP, 0, 0, 0, OTHER, NULL)                                              \
	X("oom", "oom:compact_retry", TP, 0, 0, 0, OTHER, NULL)                                                   \
	X("oom", "oom:oom_score_adj_update", TP, 0, 0, 0, OTHER, NULL)                                            \
	X("shm", "syscalls:sys_enter_shmget", TP, 0, 1, 0, SHM_ENTER, NULL)                                       \
	X("shm", "syscalls:sys_exit_shmget", TP, 0, 0, 0, SHM_EXIT, "ret")                                        \
	X("shm", "syscalls:sys_enter_shmat", TP, 0, 1, 0, SHM_ENTER, NULL)                                        \
	X("shm", "syscalls:sys_exit_shmat", TP, 0, 0, 0, SHM_EXIT, "ret")                                         \
	X("shm", "syscalls:sys_enter_shmdt", TP, 0, 1, 0, SHM_ENTER, NULL)                                        \
	X("shm", "syscalls:sys_exit_shmdt", TP, 0, 0, 0, SHM_EXIT, "ret")                                         \
	X("shm", "syscalls:sys_enter_shmctl", TP, 0, 1, 0, SHM_ENTER, NULL)                                       \
	X("shm", "syscalls:sys_exit_shmctl", TP, 0, 0, 0, SHM_EXIT, "ret")                                        \
	X("rss", "kmem:rss_stat", TP, 0, 0, 0, RSS_STAT, NULL)                                                    \
	X("migrate", "migrate:mm_migrate_pages_start", TP, 0, 1, 0, MIGRATE_START, NULL)                          \
	X("migrate", "migrate:mm_migrate_pages", TP, 0, 0, 0, MIGRATE, NULL)                                      \
	X("compaction", "compaction:mm_compaction_try_to_compact_pages", TP, 0, 1, 0, COMPACT_TRY, NULL)          \
	X("compaction", "compaction:mm_compaction_begin", TP, 0, 0, 0, COMPACT_BEGIN, NULL)                       \
	X("compaction", "compaction:mm_compaction_end", TP, 0, 0, 0, COMPACT_END, NULL)                           \
	X("compaction", "compaction:mm_compaction_migratepages", TP, 0, 0, 0, COMPACT_MIGRATEPAGES, NULL)         \
	X("compaction", "compaction:mm_compaction_defer_compaction", TP, 0, 0, 0, COMPACT_DEFER, NULL)            \
	X("compaction", "compaction:mm_compaction_kcompactd_wake", TP, 0, 0, 0, KCOMPACTD_WAKE, NULL)             \
	X("compaction", "compaction:mm_compaction_kcompactd_sleep", TP, 0, 0, 0, KCOMPACTD_SLEEP, NULL)           \
	X("compaction", "huge_memory:mm_collapse_huge_page", TP, 0, 0, 0, OTHER, NULL)                            \
	/* No kernel has a swap-in tracepoint and kprobes are not always there: a   \
	 * major fault on anonymous memory is a swap-in, so the group is major      \
	 * faults with their stacks and addresses. */                                \
	X("swap", "major-faults", SW, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1, 1, FAULT_MAJ, NULL)                     \
	/* Delivery, not generation: the task is then in its own context, so  \
	 * the user stack is the one that faulted, aborted or trapped. */      \
	X("signals", "signal:signal_deliver", TP, 0, 1, 0, SIGNAL, NULL)

/* The signals group's kernel filter: the signals that end or stop a task
 * for a memory error (SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV),
 * by their x86-64 numbers, which tracefs filters compare. */
/* A syscall's arguments in a SYSCALL event's sample: the user registers
 * (perf_regs.h's x86-64 numbers) in the order of the arguments, as the
 * x86-64 syscall ABI passes them: rdi, rsi, rdx, r10, r8, r9. The kernel
 * leaves them as user space set them until the call returns. Only a
 * call's own are recorded: the others hold what the program left there. */
#define CATALOG_SYSCALL_NR_ARGS 6
/* The one tracepoint every SYSCALL row is recorded through: its "id" is
 * the call's number, its "ret" the result. */
#define CATALOG_SYSCALL_CARRIER "raw_syscalls:sys_exit"
#define CATALOG_SYSCALL_CARRIER_ID "id"
#define CATALOG_SYSCALL_ARG_REGS { 5, 4, 3, 18, 16, 17 }

/* The sample_regs_user bits of a syscall's first n arguments. */
static inline unsigned long long catalog_syscall_args_mask(int n)
{
	static const int regs[CATALOG_SYSCALL_NR_ARGS] = CATALOG_SYSCALL_ARG_REGS;
	unsigned long long m = 0;

	for (int i = 0; i < n && i < CATALOG_SYSCALL_NR_ARGS; i++)
		m |= 1ull << regs[i];
	return m;
}

/* The number of fields of a CATALOG_EVENTS row; for a SYSCALL row, one
 * more than its arguments. */
#define CATALOG_NR_FIELDS(...) ((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)))

#define CATALOG_SIGNALS_FILTER "sig == 4 || sig == 5 || sig == 6 || sig == 7 || sig == 8 || sig == 11"

/* The name of one of them, "signal" for any other. */
static inline const char *catalog_signal_name(int sig)
{
	switch (sig) {
	case 4: return "SIGILL";
	case 5: return "SIGTRAP";
	case 6: return "SIGABRT";
	case 7: return "SIGBUS";
	case 8: return "SIGFPE";
	case 11: return "SIGSEGV";
	default: return "signal";
	}
}

/* The tracking event: no samples, it carries the MMAP2, COMM, FORK and
 * EXIT records; the analyzer files it as EVK_TRACKING. */
#define CATALOG_TRACKING_EVENT "dummy"

/* The deep-stacks event: page faults sampled a few times a second with
 * the largest user stack dump the kernel copies. Its samples are no
 * findings: the analyzer unwinds them only to complete the stacks of
 * other samples of the same thread that ran past their smaller dump. */
#define CATALOG_DEEP_EVENT "deep-stacks"
#define CATALOG_DEEP_GROUP "stacks"
#define CATALOG_DEEP_DUMP 65528u

#endif
