/*
 * analyze/replay/chains.c: a sample's stack as one chain of addresses, its
 * kernel callchain and then its user frames: unwound from the registers and
 * stack dump of a --call-graph dwarf sample (code a runtime compiled looked
 * up in its perf maps and jitdumps), or a frame-pointer walk cut where it
 * left the process's code, with a probed function's caller put back; and
 * what the unwinder has to say once the replay is over.
 */
#include "session.h"
#include "session_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../../formats/msg.h"
#include "../stacks/unwind.h"

/* The unwinder's view of code a runtime compiled: its name, start and
 * unwind table. */
static int jit_code_of(void *arg, int pid, uint64_t addr, uint64_t time, struct unwind_jit_code *c)
{
	struct session *s = arg;
	const struct jit_sym *e = s->jit.nr_files ? jitsyms_find(&s->jit, pid, addr, time) : NULL;

	if (!e)
		return 0;
	*c = (struct unwind_jit_code){ e->name, e->start, e->eh_frame, e->eh_frame_len, e->eh_frame_addr };
	return 1;
}

/* A --call-graph dwarf sample: its kernel callchain, then the user frames
 * unwound from its registers and stack dump, as one chain. */
void session_sample_unwind(struct session *s, struct sample *smp)
{
	struct unwind_input in = { smp->pid, smp->tid, smp->regs_mask, smp->regs, smp->stack, 0, smp->time,
				   smp->ev->kind == EVK_DEEP_STACK };
	enum unwind_stop stop;
	uint64_t n = 0, fp_at = 0, fp_nr = 0;
	int got;

	if (!s->uw) {
		if (!(s->uw = unwind_new(s->o.unwinder, &s->m, s->o.unwind_check)))
			return;
		unwind_set_jit(s->uw, jit_code_of, s);
	}
	if (smp->ev->kind == EVK_FAULT || smp->ev->kind == EVK_FAULT_MAJ)
		in.fault_addr = smp->ev->tp ? sample_num(smp, "address") : smp->addr;
	for (uint64_t i = 0; i < smp->nr_ips && n < SESS_MAX_CHAIN - SESS_MAX_USER_FRAMES - 1; i++) {
		if (smp->ips[i] == PERF_CONTEXT_USER)
			break;
		s->chain[n++] = smp->ips[i];
	}
	/* A sample in the kernel with no user part (a kernel thread) has no
	 * user registers; one of a process with mappings lost them, and is
	 * counted as a stack that could not start. */
	if (!smp->regs) {
		struct hm_slot *slot = hashmap_u64_find(&s->m.procs, (uint32_t)smp->pid);
		const struct process *p = slot ? slot->ptr : NULL;

		if (p && p->nr_maps)
			unwind_sample(s->uw, &in, s->chain + n, 0, &stop);
		goto out;
	}
	s->chain[n++] = PERF_CONTEXT_USER;
	/* An event that took a frame-pointer chain beside its dump (a fatal
	 * signal's: its stack pointer may lie in a guard gap, where no dump
	 * can be read) has it stand in where the dump holds nothing. */
	{
		uint64_t i = 0;

		while (i < smp->nr_ips && smp->ips[i] != PERF_CONTEXT_USER)
			i++;
		for (fp_at = ++i; i < smp->nr_ips && fp_nr < SESS_MAX_USER_FRAMES && smp->ips[i] < PERF_CONTEXT_MAX; i++)
			fp_nr++;
	}
	if (fp_nr && !smp->stack.size) {
		memcpy(s->chain + n, smp->ips + fp_at, fp_nr * sizeof(uint64_t));
		got = (int)fp_nr;
	} else {
		got = unwind_sample(s->uw, &in, s->chain + n, SESS_MAX_USER_FRAMES, &stop);
	}
	n += got;
	if (!got)
		n--;
out:
	smp->ips = s->chain;
	smp->nr_ips = n;
}

/*
 * A frame-pointer walk through code built without frame pointers takes
 * whatever that register holds for the next frame, and goes on through
 * data to the kernel's limit: the user chain is kept up to the first
 * return address that lies in no executable mapping of the process (the
 * sampled ip itself stays whatever it is: a JIT's code, say).
 */
void session_sample_fp_cut(struct session *s, struct sample *smp)
{
	const struct process *p = NULL;
	const struct map *m = NULL;
	int user = 0, first = 0, frames = 0;

	for (uint64_t i = 0; i < smp->nr_ips; i++) {
		uint64_t ip = smp->ips[i];

		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			first = 1;
			if (user)
				s->fp_stacks++;
			continue;
		}
		/* The kernel walks at most max_stack frames, its own and the
		 * user's together: a chain that long lost its outer callers. */
		if (++frames == s->max_stack && user && i + 1 == smp->nr_ips)
			s->fp_deep++;
		if (!user || first) {
			first = 0;
			continue;
		}
		if (!p && (!(p = machine_process_find(&s->m, smp->pid)) || !p->nr_maps))
			return;
		m = process_find_map(p, ip, m);
		if (!m || !(m->prot & PROT_EXEC)) {
			smp->nr_ips = i;
			s->fp_cut++;
			return;
		}
	}
}

/* A frame-pointer walk taken at a probed function's first instruction
 * reads its caller's return address next, from the caller's frame: the
 * caller itself is missing. The entry probe read the return address at
 * the stack pointer (the caller field): put it back after the first user
 * frame, into s->chain. */
void session_sample_put_caller(struct session *s, struct sample *smp)
{
	uint64_t caller = session_field(s, smp, AF_CALLER), n = 0;
	int first = 0;

	if (!caller || smp->nr_ips > SESS_MAX_CHAIN - 1)
		return;
	for (uint64_t i = 0; i < smp->nr_ips; i++) {
		uint64_t ip = smp->ips[i];

		s->chain[n++] = ip;
		if (ip == PERF_CONTEXT_USER) {
			first = 1;
			continue;
		}
		if (first && ip < PERF_CONTEXT_MAX) {
			first = 0;
			if (i + 1 >= smp->nr_ips || smp->ips[i + 1] != caller)
				s->chain[n++] = caller;
		}
	}
	smp->ips = s->chain;
	smp->nr_ips = n;
}

/* The unwinder's report, a line at a time, as notes of the command that
 * runs: under its name, and once a run however many views replay. */
static void unwind_notes(struct unwinder *uw)
{
	char *buf = NULL, *line, *nl;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m) {
		unwind_report(uw, stderr);
		return;
	}
	unwind_report(uw, m);
	fclose(m);
	for (line = buf; line && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			nl = line + strlen(line) - 1;
		else
			*nl = 0;
		msg_note("%s", strncmp(line, "memsight: ", 10) ? line : line + 10);
	}
	free(buf);
}

void session_report_unwind(struct session *s)
{
	if (s->uw)
		unwind_notes(s->uw);
	/* Under 1% of the stacks is a small matter, said with -v. */
	if (s->fp_cut && (msg_verbose() || s->fp_cut * 100 >= s->fp_stacks))
		msg_note("%llu of %llu frame-pointer stacks ran into code built without frame pointers and were "
			 "cut where they left the code; record with -g dwarf for whole stacks",
			 (unsigned long long)s->fp_cut, (unsigned long long)s->fp_stacks);
	if (s->fp_deep && (msg_verbose() || s->fp_deep * 100 >= s->fp_stacks))
		msg_note("%llu of %llu frame-pointer stacks are %d frames deep, as deep as the recording kernel "
			 "walks (kernel.perf_event_max_stack): their outermost callers are missing; raise it with sysctl "
			 "before recording, or record with -g dwarf",
			 (unsigned long long)s->fp_deep, (unsigned long long)s->fp_stacks, s->max_stack);
	if (s->uw && s->o.unwind_stats)
		fprintf(stderr, "unwind: %llu stacks, %llu frames, deepest dump byte read %llu\n",
			(unsigned long long)unwind_stats(s->uw)->stacks, (unsigned long long)unwind_stats(s->uw)->frames,
			(unsigned long long)unwind_stats(s->uw)->max_stack_used);
	if (s->uw && s->o.unwind_stats)
		fprintf(stderr, "unwind: %llu address spaces, %llu objects opened, %llu spaces needing libdw's whole unwinder\n",
			(unsigned long long)unwind_stats(s->uw)->spaces,
			(unsigned long long)unwind_stats(s->uw)->objects_opened,
			(unsigned long long)unwind_stats(s->uw)->spaces_whole);
	if (s->o.unwind_stats) {
		size_t seen, held = machine_processes_with_maps(&s->m, &seen);

		fprintf(stderr, "processes: %zu seen, %zu holding maps at the end\n", seen, held);
	}
	if (s->uw && s->o.unwind_stats)
		for (int i = 0; i < 16; i++)
			fprintf(stderr, "unwind: complete stacks needing < %d KiB: %llu\n", i + 1,
				(unsigned long long)unwind_stats(s->uw)->need_kib[i]);
}
