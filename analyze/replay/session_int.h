/*
 * analyze/replay/session_int.h: what the parts of a session share
 * (session.c, cgroups.c, sample.c, chains.c); commands use session.h.
 */
#ifndef MEMSIGHT_SESSION_INT_H
#define MEMSIGHT_SESSION_INT_H

#include "session.h"

/* err set from fmt; returns -1. */
int session_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* cgroups.c: META cgroups and namespaces, and --cgroup. */
void session_cgroup_add(struct session *s, uint64_t id, const char *path);
void session_cgroups_load(struct session *s, const char *text, size_t len);
void session_nspids_load(struct session *s, const char *text, size_t len, const char *key);
int session_cgroup_under(const char *c, const char *want);
int session_cgroup_want_set(struct session *s, char *err, size_t errlen);

/* sample.c: a PERF_RECORD_SAMPLE into smp; 0, or -1 when it does not
 * decode. */
int session_sample_parse(struct session *s, const unsigned char *rec, size_t len, struct sample *smp);

/* chains.c: smp->ips made the sample's whole chain. */
void session_sample_unwind(struct session *s, struct sample *smp);
void session_sample_fp_cut(struct session *s, struct sample *smp);
void session_sample_put_caller(struct session *s, struct sample *smp);

#endif
