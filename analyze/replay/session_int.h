/*
 * analyze/replay/session_int.h: what the parts of a session share
 * (session.c, cgroups.c, sample.c, chains.c); commands use session.h.
 * session.c uses the parts; they never call it back.
 */
#ifndef MEMSIGHT_SESSION_INT_H
#define MEMSIGHT_SESSION_INT_H

#include "session.h"

/* cgroups.c: META cgroups and namespaces; whether a cgroup is --cgroup's
 * or below it. */
void session_cgroup_add(struct session *s, uint64_t id, const char *path);
void session_cgroups_load(struct session *s, const char *text, size_t len);
void session_nspids_load(struct session *s, const char *text, size_t len, const char *key);
int session_cgroup_under(const char *c, const char *want);

/* sample.c: a PERF_RECORD_SAMPLE into smp; 0, or -1 when it does not
 * decode. */
int session_sample_parse(struct session *s, const unsigned char *rec, size_t len, struct sample *smp);
/* session.c: a sample of the syscall carrier filed as the event of its call (smp->ev
 * left as it is for a call the carrier was not asked for). */
void session_syscall_file(struct session *s, struct sample *smp);

/* chains.c: smp->ips made the sample's whole chain. */
void session_sample_unwind(struct session *s, struct sample *smp);
void session_sample_fp_cut(struct session *s, struct sample *smp);
void session_sample_put_caller(struct session *s, struct sample *smp);

#endif
