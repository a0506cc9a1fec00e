/*
 * record/record.c: memsight-record, the recorder.
 *
 * Owns the targets (a command it starts, running pids, or the whole
 * system), the per-CPU perf ring buffers and their drain loop, and the order
 * in which a trace file is put together: header, META (host, tracefs
 * header_page, events, /proc snapshots), DATA chunks as rings fill, then
 * kernel symbols, late build-ids, statistics, LOSS, INDEX and TRAILER.
 *
 * Until the events are open and the command has started, the trace is
 * written under a temporary name beside the output, so a failed start leaves
 * neither garbage nor a clobbered older trace. From then on the file is at
 * its final name and every chunk on disk stays readable whatever happens.
 *
 * Knows nothing of unwinding, symbols or how the analyzer reads records.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "objects/archive.h"
#include "recorder.h"

/* The kernel writes a LOST record only once room comes back, so what is
 * lost in the last moments may never be reported. Each event's own lost
 * count (PERF_FORMAT_LOST, Linux 6.0) is exact. Older kernels: an event
 * with period 1 fired `count` times and each firing is a sample, so count
 * minus the samples received is what was lost (exact for a target's
 * events; system-wide, some kernels count firings they never sample).
 * While recording (exact set), only the exact count: the samples not
 * drained yet would count as lost by the other. */
static void lost_counted(struct recorder *rc, int exact, uint64_t *counted, uint64_t *counted_deep)
{
	*counted = *counted_deep = 0;
	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];
		uint64_t total = 0, lost = 0;
		uint64_t *sum = events_is_deep(e) ? counted_deep : counted;

		if (exact && !(e->attr.read_format & PERF_FORMAT_LOST))
			continue;
		for (size_t j = 0; j < e->nr_ids && !rc->counts_read; j++) {
			uint64_t v[2] = { 0, 0 };

			if (read(e->fds[j], v, sizeof(v)) < 8)
				continue;
			/* A sampled event (GROUP/N) takes one sample each time
			 * its own counter passes a multiple of N. */
			total += v[0] / e->attr.sample_period;
			lost += v[1];
		}
		if (rc->counts_read) {
			total = e->count_total;
			lost = e->count_lost;
		}
		if (e->attr.read_format & PERF_FORMAT_LOST)
			*sum += lost;
		else if (e->group[0] && !e->attr.freq && total > e->samples)
			*sum += total - e->samples;
	}
}

/* Each event's counts as it stopped, for count_lost once its descriptors
 * are gone: an event switched off counts no more. */
static void counts_keep(struct recorder *rc)
{
	for (size_t i = 0; i < rc->nr_evs; i++) {
		struct rec_event *e = &rc->evs[i];

		e->count_total = e->count_lost = 0;
		for (size_t j = 0; j < e->nr_ids; j++) {
			uint64_t v[2] = { 0, 0 };

			if (read(e->fds[j], v, sizeof(v)) < 8)
				continue;
			e->count_total += v[0] / e->attr.sample_period;
			e->count_lost += v[1];
		}
	}
	rc->counts_read = 1;
}

static void count_lost(struct recorder *rc)
{
	uint64_t counted, reported = 0, counted_deep, reported_deep = 0;

	lost_counted(rc, 0, &counted, &counted_deep);
	for (int c = 0; c < rc->nr_rings; c++)
		*(rc->rings[c].deep ? &reported_deep : &reported) += rc->rings[c].lost;
	rc->lost_unreported = counted > reported ? counted - reported : 0;
	rc->lost_deep_unreported = counted_deep > reported_deep ? counted_deep - reported_deep : 0;
	/* A ring of the wrapper's that held what it does not write was read
	 * no further: at least one report lost with it. */
	if (rc->as.broken) {
		msg_warn("%llu of the malloc wrapper's rings were refused or held malformed records: what their "
			 "threads reported after that is lost",
			 (unsigned long long)rc->as.broken);
		rc->lost_unreported += rc->as.broken;
	}
	if (rc->as.dropped) {
		msg_warn("the malloc wrapper dropped %llu reports while the recorder was behind (--no-block): they "
			 "count as lost; --block makes the program wait instead",
			 (unsigned long long)rc->as.dropped);
		rc->lost_unreported += rc->as.dropped;
	}
}

/* The events lost so far, as often as the loop wakes when idle, into the
 * trace (a META lost chunk) when more than it said last. The kernel
 * writes a LOST record only with the next event its ring takes, which for
 * a program gone quiet after a burst may be when it exits: a reader of
 * the trace as it is written would count nothing lost meanwhile. */
static void lost_publish(struct recorder *rc)
{
	uint64_t now = rec_now_ns(CLOCK_MONOTONIC), counted, counted_deep, reported, lost;
	char text[64];

	/* A little less than the idle wait: each idle wake looks. */
	if (now - rc->lost_seen_ns < POLL_IDLE_MS * 900000ull)
		return;
	rc->lost_seen_ns = now;
	lost_counted(rc, 1, &counted, &counted_deep);
	reported = rec_lost(rc, 0);
	lost = (counted > reported ? counted : reported) + rc->as.broken + rc->as.dropped;
	if (lost <= rc->lost_live)
		return;
	rc->lost_live = lost;
	snprintf(text, sizeof(text), "lost %llu\n", (unsigned long long)lost);
	writeq_push_meta(&rc->q, TRACE_META_LOST, text, strlen(text));
}

/*
 * Every event on or off, one descriptor after another. A return probe is
 * on before any entry probe and off after the last of them: a free
 * recorded then always comes with the return that gave out its pointer,
 * had that return come since the start. In the other order, the returns
 * switched off first, a block given out and freed in that instant looked
 * freed twice (4 of 5 recordings of a churning -p process did). Calls in
 * the instants of switching, seen in part, are left out by the analyzer:
 * the stats say when every event was on, and when the first went off.
 */
static void events_switch(struct recorder *rc, int on)
{
	for (size_t e = 0; e < rc->nr_evs; e++) {
		size_t l = strlen(rc->evs[e].name), k = strlen(UPROBES_RETURN_SUFFIX);
		int ret = l > k && !strcmp(rc->evs[e].name + l - k, UPROBES_RETURN_SUFFIX);

		if (ret == on)
			for (size_t j = 0; j < rc->evs[e].nr_ids; j++)
				ioctl(rc->evs[e].fds[j], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
	}
	for (size_t i = 0; i < rc->nr_fds; i++)
		ioctl(rc->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* The signals the recorder takes through its signalfd. */
static const int handled[] = { SIGINT,	SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGCHLD, SIGUSR1,
			       SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGPIPE, SIGXFSZ };

/* The status line: time, records, bytes written and events lost so
 * far, as the summary at the end counts them. */
static void status_show(struct recorder *rc)
{
	uint64_t bytes = rc->w.ring_start ? rc->w.ring_start + rc->w.ring_bytes : rc->w.offset;
	uint64_t lost = rec_lost(rc, 0);

	if (rc->lost_live > lost)
		lost = rc->lost_live;
	msg_progress("recording %.0f s: %llu records, %.1f MiB written, %llu lost",
		     (rec_now_ns(CLOCK_MONOTONIC) - rc->start_ns) / 1e9, (unsigned long long)rc->records,
		     bytes / 1048576.0, (unsigned long long)lost);
}

/* The events go as soon as their rings are drained: a child closes them
 * while the trace is finished (rec_events_release). */
static void events_close(struct recorder *rc)
{
	/* Unmapped first: a mapped ring holds its event open, and the child
	 * that closes the events need not copy the rings' page tables. */
	for (int c = 0; rc->rings && c < rc->nr_rings; c++) {
		if (rc->rings[c].base)
			munmap(rc->rings[c].base, rc->rings[c].map_len);
		rc->rings[c].base = NULL;
	}
	rec_events_release(rc);
}

/* Whether a signal ends the recording (cleanly): the ones a user or a
 * supervisor sends to stop a program. The others (SIGPIPE from a closed
 * stderr, SIGXFSZ, timers, SIGUSR2) are ignored: a write that fails says
 * so itself. */
static int rec_signal_stops(int sig)
{
	return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT || sig == SIGXCPU;
}

/* The next look at rings that flow: soon enough that a ring filling four
 * times as fast as the fullest did since the last look would be half
 * full by then, within [POLL_ACTIVE_MS, POLL_FLOW_MS]. A look by timeout
 * that finds a ring past its wakeup (a quarter) tells of a wakeup the
 * kernel missed: from then on, every POLL_ACTIVE_MS. */
static int poll_flow(struct recorder *rc, int ring_woke, uint64_t since_ns)
{
	uint64_t ms;

	if (!ring_woke && rc->fill_max >= 256)
		rc->wakeups_missed++;
	if (rc->wakeups_missed)
		return POLL_ACTIVE_MS;
	if (!rc->fill_max)
		return POLL_FLOW_MS;
	ms = since_ns / 1000000 * 128 / rc->fill_max;
	return ms < POLL_ACTIVE_MS ? POLL_ACTIVE_MS : ms > POLL_FLOW_MS ? POLL_FLOW_MS : (int)ms;
}

static int run(struct recorder *rc, const sigset_t *mask)
{
	struct epoll_event ev, evs[64];
	int ep, sfd, tfd = -1, stop = 0, ret = -1, timeout = POLL_ACTIVE_MS;
	uint64_t before, cg_read = rec_now_ns(CLOCK_MONOTONIC), pass_ns = cg_read, now;
	int *pidfds = NULL;
	size_t live = 0;
	unsigned usr1_said = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (ep < 0 || sfd < 0)
		return msg_error("cannot set up the event loop: %s", strerror(errno));
	ev.events = EPOLLIN;
	ev.data.u64 = 1ull << 32;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	for (int c = 0; c < rc->nr_rings; c++) {
		if (!rc->rings[c].base)
			continue;
		ev.events = EPOLLIN;
		ev.data.u64 = c;
		epoll_ctl(ep, EPOLL_CTL_ADD, rc->rings[c].fd, &ev);
	}
	if (rc->duration > 0) {
		struct itimerspec its = { 0 };

		tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		its.it_value.tv_sec = (time_t)rc->duration;
		its.it_value.tv_nsec = (long)((rc->duration - (time_t)rc->duration) * 1e9);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
		timerfd_settime(tfd, 0, &its, NULL);
		ev.events = EPOLLIN;
		ev.data.u64 = 2ull << 32;
		epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	}
	if (rc->nr_pids) {
		/* A pidfd turns readable when its process exits. */
		pidfds = calloc(rc->nr_pids, sizeof(*pidfds));
		for (size_t i = 0; pidfds && i < rc->nr_pids; i++) {
			pidfds[i] = syscall(SYS_pidfd_open, rc->pids[i], 0);
			if (pidfds[i] < 0)
				continue;
			ev.events = EPOLLIN;
			ev.data.u64 = (3ull << 32) | i;
			epoll_ctl(ep, EPOLL_CTL_ADD, pidfds[i], &ev);
			live++;
		}
		if (!live)
			stop = 1;
	}
	if (allocstream_fd(rc) >= 0) {
		/* The wrapper's connections: new rings, and rings filling up. */
		ev.events = EPOLLIN;
		ev.data.u64 = 5ull << 32;
		epoll_ctl(ep, EPOLL_CTL_ADD, allocstream_fd(rc), &ev);
	}
	for (size_t i = 0; i < rc->fl.nr_trig; i++) {
		if (rc->fl.trig[i].fd < 0)
			continue;
		/* A PSI trigger's file signals with POLLPRI. */
		ev.events = EPOLLPRI;
		ev.data.u64 = (4ull << 32) | i;
		epoll_ctl(ep, EPOLL_CTL_ADD, rc->fl.trig[i].fd, &ev);
	}
	if (!rc->command) {
		events_switch(rc, 1);
		rc->probes_on_ns = rec_now_ns(CLOCK_MONOTONIC);
	}

	/* How it goes, at a terminal, after a second: for -a and -p alone,
	 * whose terminal is the recorder's; a command writes to it too, and
	 * its lines would break into the status line. */
	if (!rc->quiet && !rc->command)
		msg_progress_begin(1000);
	while (!stop) {
		int n = epoll_wait(ep, evs, 64, flight_timeout(rc, timeout)), ring_woke = 0;

		if (n < 0 && errno != EINTR) {
			msg_error("epoll_wait: %s", strerror(errno));
			goto out;
		}
		rc->fill_max = 0;
		for (int i = 0; i < n; i++) {
			uint32_t kind = evs[i].data.u64 >> 32, idx = (uint32_t)evs[i].data.u64;

			ring_woke |= kind == 0;
			if (kind == 0 && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
				/* Every task of this ring exited: drain it below,
				 * then stop polling it or epoll would spin. */
				rec_drain_all(rc, 0);
				epoll_ctl(ep, EPOLL_CTL_DEL, rc->rings[idx].fd, NULL);
			} else if (kind == 1) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGCHLD) {
						if (rc->command && rec_child_reap(rc))
							stop = 1;
					} else if (si.ssi_signo == SIGUSR1 && rc->fl.ring_size) {
						char detail[64];

						snprintf(detail, sizeof(detail), "SIGUSR1 from pid %u", si.ssi_pid);
						flight_fire(rc, FLIGHT_SIGNAL, "", detail);
					} else if (si.ssi_signo == SIGUSR1) {
						if (!usr1_said++)
							msg_note("SIGUSR1 from pid %u ignored: it asks a ring (--ring) for a "
								 "snapshot; SIGINT or SIGTERM ends a recording",
								 si.ssi_pid);
					} else if (rec_signal_stops(si.ssi_signo)) {
						stop = 1;
					}
				}
			} else if (kind == 2) {
				stop = 1;
			} else if (kind == 3) {
				epoll_ctl(ep, EPOLL_CTL_DEL, pidfds[idx], NULL);
				if (--live == 0)
					stop = 1;
			} else if (kind == 4) {
				flight_psi_event(rc, idx);
			}
		}
		before = rc->drained;
		if (rec_drain_all(rc, 1))
			goto out;
		if (rc->late.nr_pend || rc->late.lines_len)
			rec_late_probes(rc);
		flight_objects(rc);
		rec_objects_early(rc);
		/* --cgroup, by the recorder: processes moved into the cgroup
		 * since are kept from now on. */
		if (rc->cg.by_recorder && rec_now_ns(CLOCK_MONOTONIC) - cg_read > 1000000000ull) {
			cgroup_filter_refresh(&rc->cg);
			cg_read = rec_now_ns(CLOCK_MONOTONIC);
		}
		flight_poll(rc, 0);
		lost_publish(rc);
		if (!rc->quiet && !rc->command)
			status_show(rc);
		/* A full disk (or a failed write) ends the recording at once:
		 * nothing more could be kept, and a -p recording would go on
		 * for ever. */
		if (trace_writer_full(&rc->w)) {
			msg_error("cannot write '%s': %s; recording stopped after %.1f s, the trace holds what reached "
			      "the disk", rc->output, rc->w.err ? trace_writer_strerror(&rc->w) : "the disk is full",
			      (rec_now_ns(CLOCK_MONOTONIC) - rc->start_ns) / 1e9);
			rc->disk_full = 1;
			stop = 1;
		}
		/* Some kernels (6.18 here, with page-fault samples) now and
		 * then never deliver the ring's watermark wakeup: a whole run
		 * then fills the ring and drops everything after it. So while
		 * records flow, look at the rings every few milliseconds as
		 * well, and back off to the wakeups alone once they stop. */
		now = rec_now_ns(CLOCK_MONOTONIC);
		if (rc->drained != before)
			timeout = poll_flow(rc, ring_woke, now - pass_ns);
		else if ((timeout *= 4) > (rc->late.on ? POLL_LATE_MS : POLL_IDLE_MS))
			timeout = rc->late.on ? POLL_LATE_MS : POLL_IDLE_MS;
		if (rc->late.on && timeout > POLL_LATE_MS)
			timeout = POLL_LATE_MS;
		pass_ns = now;
	}
	ret = 0;
out:
	msg_progress_end();
	rc->stop_ns = rec_now_ns(CLOCK_MONOTONIC);
	events_switch(rc, 0);
	allocstream_shut(rc);
	/* The events are off: what is in their rings is all there will be.
	 * They go now, their grace periods waited out by a child while the
	 * rings are drained and the trace finished; the rings' mappings
	 * hold the events that carry them, which are software events. */
	counts_keep(rc);
	rec_events_release(rc);
	/* Nothing more can be kept: the command goes on unrecorded, with
	 * no probe left to trap it. */
	if (rc->disk_full)
		events_close(rc);
	rec_child_stop(rc);
	if (rec_drain_all(rc, 0))
		ret = -1;
	/* Which processes the late probes covered, to the last. */
	rc->late.nr_pend = 0;
	if (rc->late.lines_len)
		rec_late_probes(rc);
	/* A snapshot still waiting for its --after is taken as things are. */
	flight_poll(rc, 1);
	flight_objects(rc);
	rec_rings_flush_all(rc);
	writeq_stop(&rc->q);
	count_lost(rc);
	for (size_t i = 0; pidfds && i < rc->nr_pids; i++)
		if (pidfds[i] >= 0)
			close(pidfds[i]);
	free(pidfds);
	if (tfd >= 0)
		close(tfd);
	close(sfd);
	close(ep);
	return ret;
}

static void cleanup(struct recorder *rc)
{
	/* Started before the command; a failed start ends here. */
	writeq_stop(&rc->q);
	events_close(rc);
	for (int c = 0; rc->rings && c < rc->nr_rings; c++)
		free(rc->rings[c].chunk);
	allocstream_close(rc);
	free(rc->wrapper_out.chunk);
	rec_events_wait(rc);
	rec_pidfile_remove(rc);
	free(rc->rings);
	free(rc->fds);
	free(rc->ids);
	events_free(rc->evs, rc->nr_evs);
	free(rc->evs);
	free(rc->bounce);
	free(rc->tasks);
	scrub_free(&rc->scrub);
	cgroup_filter_release(&rc->cg);
	leakcheck_release(&rc->lc);
	execmap_release(&rc->em);
	lateprobe_release(&rc->late);
	jitmaps_release(&rc->jm);
	objset_release(&rc->objs);
	embed_list_release(&rc->objects_later);
	for (size_t i = 0; i < rc->nr_nobid; i++)
		free(rc->nobid[i].name);
	free(rc->nobid);
	ksyms_set_release(&rc->ksyms);
	ksyms_table_release(&rc->kallsyms);
	trace_writer_release(&rc->w);
	flight_release(&rc->fl);
	rec_options_release(rc);
}

/* The drain loop is what the kernel waits on: when root, let it win the
 * CPU over the command and the compression thread (a failure just leaves
 * the priority as it was). Before the command runs: it starts on this CPU
 * and fills a ring in milliseconds. SCHED_FIFO at the lowest real-time
 * priority, where allowed: with more busy threads than CPUs (50 on 2) even
 * nice -10 came back too late a third of the time and 16 MiB rings
 * overflowed; woken as a real-time thread it never did. Dropping to an
 * ordinary thread while the rings keep up, so as not to take the
 * command's CPU when it wakes there, lost 3,000 events of a fault storm
 * that began after a calm start. What it starts (the compression thread,
 * the child that closes the events) goes back to normal scheduling. */
static void drain_priority(struct recorder *rc)
{
	struct sched_param sp = { .sched_priority = 1 };

	setpriority(PRIO_PROCESS, gettid(), -10);
	rc->realtime = !sched_setscheduler(0, SCHED_FIFO, &sp);
}

/* From here until the rings are flushed the compression thread owns the
 * writer. Started before the command runs: it faults in its buffers. */
static void writer_start(struct recorder *rc)
{
	size_t prefault = PREFAULT_OTHER;
	int r;

	if (rc->callchain == REC_CG_DWARF)
		prefault = rc->stack_dump == SCRUB_RAW ? PREFAULT_DWARF_RAW : PREFAULT_DWARF;
	rc->q.prepare = rec_chunk_prepare;
	rc->q.prepare_arg = rc;
	r = writeq_start(&rc->q, &rc->w, WRITEQ_MAX, CHUNK_BUF, prefault);
	if (r)
		msg_note("no compression thread (%s); compressing in the drain loop", strerror(-r));
}

/* Whether an event takes kernel callchains, whose addresses the trace
 * names from kallsyms. */
static int rec_kernel_stacks(const struct recorder *rc)
{
	for (size_t i = 0; i < rc->nr_evs; i++)
		if ((rc->evs[i].attr.sample_type & PERF_SAMPLE_CALLCHAIN) && !rc->evs[i].attr.exclude_callchain_kernel)
			return 1;
	return 0;
}

/* Everything before the recording: the targets are there, the output may
 * be written, the events open and the command waiting at its exec. */
static int record_prepare(struct recorder *rc, sigset_t *mask, sigset_t *oldmask)
{
	struct rlimit rl;

	rc->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	/* One fd per event, CPU and thread: -p on a big process needs many. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (size_t i = 0; i < rc->nr_pids; i++)
		if (kill(rc->pids[i], 0) && errno == ESRCH)
			return msg_error("no process with pid %d: check it with 'ps -p %d'", (int)rc->pids[i],
					 (int)rc->pids[i]);
	/* Before any event is chosen for it. */
	if (rc->command && rec_command_check(rc))
		return -1;
	rc->build_id = rec_probe_build_id();
	if (rc->system_wide) {
		struct stat st;
		char err[PATH_MAX + 256];

		rc->sample_cgroup = rec_probe_cgroup();
		if (cgroups_root(rc->cgroup_root, sizeof(rc->cgroup_root)))
			rc->cgroup_root[0] = 0;
		if (!stat("/proc/self/ns/pid", &st))
			rc->own_pidns = st.st_ino;
		if (rc->cgroup && cgroup_filter_open(&rc->cg, rc->cgroup, err, sizeof(err)))
			return msg_error("%s", err);
		if (rc->cg.by_recorder && !rc->quiet)
			msg_note("--cgroup '%s' is not of the hierarchy the kernel filters by (%s): the recorder keeps "
				 "the events of its %zu processes and their children, and drops the others'",
				 rc->cgroup, rc->cgroup_root[0] ? rc->cgroup_root : "none here", rc->cg.nr);
	}
	rc->format_lost = rec_probe_format_lost();
	rc->lc.emit = rec_reach_emit;
	rc->lc.arg = rc;
	rc->bounce = malloc(1u << 16);
	if (!rc->bounce || scrub_init(&rc->scrub, rc->stack_dump, &rc->em))
		return msg_error("out of memory for packing stack dumps");
	rec_scrub_learn(rc);
	/* Every signal whose default would end the recorder without its
	 * trailer comes through the signalfd instead: it stops the
	 * recording cleanly, or is ignored; the threads started from here on
	 * inherit the mask. The command gets the old mask
	 * back before its exec. */
	sigemptyset(mask);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(mask, handled[i]);
	sigprocmask(SIG_BLOCK, mask, oldmask);
	if (rec_output_check(rc->output, rc->force) || rec_events_setup(rc))
		return -1;
	/* Kernel text is named only at the end, from what kallsyms said:
	 * read it while the recording starts and runs. Only where an event
	 * takes kernel stacks: reading it takes a tenth of a second here,
	 * which a short recording would wait for at its end. */
	if (rec_kernel_stacks(rc))
		ksyms_table_start(&rc->kallsyms);
	if (flight_setup(rc) || rec_output_create(rc))
		return -1;
	if (allocstream_listen(rc) || (rc->command && rec_child_start(rc, oldmask)))
		return -1;
	if (rec_events_open(rc) || rec_meta_start(rc))
		return -1;
	allocstream_bind(rc);
	/* System-wide events are not the child's to enable at exec: start
	 * them before it runs. */
	if (rc->command && rc->system_wide) {
		events_switch(rc, 1);
		rc->probes_on_ns = rec_now_ns(CLOCK_MONOTONIC);
	}
	return 0;
}

/* The command runs and the trace takes its name. */
static int record_start(struct recorder *rc)
{
	drain_priority(rc);
	writer_start(rc);
	/* Replacing a big trace frees its pages inside rename(), for tens of
	 * milliseconds while the command fills the rings: hold the old file
	 * open so that cost comes when it is closed, at the end. Never
	 * following a link, never waiting on a FIFO swapped in since. */
	rc->old_fd = open(rc->output, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rc->command && rec_child_release(rc))
		return -1;
	/* A ring replaced by a restarted recorder may hold what went wrong
	 * before the restart: keep it, and as many before it as snapshots. */
	if (rc->fl.ring_size && rc->old_fd >= 0 && flight_keep_previous(&rc->fl, rc->output, rc->fl.max_snapshots))
		msg_warn("cannot keep the old ring as '%s': %s", rc->fl.previous, strerror(errno));
	rec_output_keep_old(rc);
	if (renameat(rc->out_dfd, rc->tmp_path, rc->out_dfd, rc->out_base))
		return msg_error("cannot create '%s': %s", rc->output, strerror(errno));
	rc->renamed = 1;
	return rec_pidfile_write(rc);
}

/* What closes the trace: the end META, the losses, the trailer; then the
 * summary. Returns the recorder's exit status. */
static int record_finish(struct recorder *rc, int ret)
{
	struct trace_loss *l = calloc(rc->nr_rings + 2, sizeof(*l));
	int n = 0;

	rec_meta_end(rc);
	for (int c = 0; l && c < rc->nr_rings; c++)
		l[n++] = (struct trace_loss){ rc->rings[c].cpu, rc->rings[c].deep ? TRACE_LOSS_DEEP : TRACE_LOSS_EVENTS,
					      rc->rings[c].lost };
	if (l && rc->lost_unreported)
		l[n++] = (struct trace_loss){ TRACE_LOSS_UNREPORTED, TRACE_LOSS_EVENTS, rc->lost_unreported };
	if (l && rc->lost_deep_unreported)
		l[n++] = (struct trace_loss){ TRACE_LOSS_UNREPORTED, TRACE_LOSS_DEEP, rc->lost_deep_unreported };
	if (l)
		trace_writer_add_loss(&rc->w, l, n);
	free(l);
	if (rc->disk_full)
		ret = 1;
	if (trace_writer_finish(&rc->w)) {
		msg_error("cannot write '%s': %s; the trace holds what was written before", rc->output,
			  trace_writer_strerror(&rc->w));
		ret = 1;
	}
	rec_summary(rc);
	/* A snapshot a trigger asked for and did not get is the recorder's
	 * failure, whatever the command did: a supervisor must see it. */
	if (rc->fl.failed)
		ret = 1;
	/* As time(1) and perf record do: the command's own status, so a
	 * script sees its failure through the recorder. */
	if (!ret && rc->command && rc->child_done && !rc->child_stopped) {
		int st = rc->child_status;

		if (WIFSIGNALED(st)) {
			msg_note("the command was killed by SIG%s",
				 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
			ret = 128 + WTERMSIG(st);
		} else if (WEXITSTATUS(st)) {
			if (!rc->quiet)
				msg_note("the command exited with status %d", WEXITSTATUS(st));
			ret = WEXITSTATUS(st);
		}
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct recorder rc = { .out_fd = -1, .out_dfd = -1, .go_fd = -1, .err_fd = -1, .old_fd = -1, .argc = argc, .argv = argv,
			       .cg.fd = -1, .as = { .listen_fd = -1, .ep = -1 },
			       .wrapper_out = { .cpu = -1, .stream = TRACE_STREAM_WRAPPER, .fd = -1 } };
	sigset_t mask, oldmask;
	int ret = 1, r;

	if (argc > 1 && !strcmp(argv[1], "archive"))
		return archive_main(argc - 1, argv + 1);
	msg_init("memsight record");
	execmap_init(&rc.em);
	jitmaps_init(&rc.jm);
	r = rec_options_parse(&rc, argc, argv);
	if (r) {
		flight_release(&rc.fl);
		execmap_release(&rc.em);
		jitmaps_release(&rc.jm);
		rec_options_release(&rc);
		return r > 0 ? 0 : 2;
	}
	if (!record_prepare(&rc, &mask, &oldmask) && !record_start(&rc)) {
		ret = run(&rc, &mask) ? 1 : 0;
		events_close(&rc);
		/* -p: the processes are stopped and scanned now, at the end. */
		for (size_t i = 0; !ret && rc.leak_check && i < rc.nr_pids; i++)
			if (!kill(rc.pids[i], 0))
				leakcheck_attach(&rc.lc, rc.pids[i]);
		ret = record_finish(&rc, ret);
	}
	if (rc.child > 0 && !rc.child_done && rc.go_fd >= 0) {
		/* Closing the go pipe makes the waiting child exit. */
		close(rc.go_fd);
		waitpid(rc.child, NULL, 0);
	}
	if (rc.out_fd >= 0) {
		close(rc.out_fd);
		if (!rc.renamed)
			unlinkat(rc.out_dfd, rc.tmp_path, 0);
	}
	if (rc.out_dfd >= 0)
		close(rc.out_dfd);
	cleanup(&rc);
	return ret;
}
