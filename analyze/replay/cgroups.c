/*
 * analyze/replay/cgroups.c: the containers of a system-wide trace: each
 * cgroup's path by the id samples carry, each process's pid inside its own
 * pid namespace, a container's id from its cgroup's path, and whether a
 * cgroup is one --cgroup asked for or below it (session.c resolves the
 * option).
 */
#include "session.h"
#include "session_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void session_cgroup_add(struct session *s, uint64_t id, const char *path)
{
	struct hm_slot *slot = hashmap_u64(&s->cgroup_paths, id, NULL);

	if (slot)
		slot->ptr = (void *)machine_intern(&s->m, path);
}

/* "ID\tPATH" lines (META cgroups). */
void session_cgroups_load(struct session *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *tab = memchr(p, '\t', le - p);
		char path[4096];

		if (tab && (size_t)(le - tab - 1) < sizeof(path)) {
			memcpy(path, tab + 1, le - tab - 1);
			path[le - tab - 1] = 0;
			session_cgroup_add(s, strtoull(p, NULL, 10), path);
		}
		p = nl ? nl + 1 : end;
	}
}

/* "PID\tNSPID" lines (META nspids), or within a process snapshot the
 * line "nspid N" after its "pid P" (key). */
void session_nspids_load(struct session *s, const char *text, size_t len, const char *key)
{
	const char *p = text, *end = text + len;
	long pid = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		char line[64], *e;
		size_t n = (size_t)(le - p) < sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;
		long ns = 0;

		memcpy(line, p, n);
		line[n] = 0;
		p = nl ? nl + 1 : end;
		if (key && !strncmp(line, "pid ", 4))
			pid = atol(line + 4);
		else if (key && !strncmp(line, key, strlen(key)))
			ns = atol(line + strlen(key));
		else if (!key && (pid = strtol(line, &e, 10)) > 0 && *e == '\t')
			ns = atol(e + 1);
		if (pid > 0 && ns > 0) {
			struct hm_slot *slot = hashmap_u64(&s->nspids, (uint32_t)pid, NULL);

			if (slot)
				slot->val = (uint64_t)ns;
		}
	}
}

const char *session_cgroup_path(const struct session *s, uint64_t id)
{
	struct hm_slot *slot = id ? hashmap_u64_find(&s->cgroup_paths, id) : NULL;

	return slot ? slot->ptr : NULL;
}

const char *session_process_cgroup(const struct session *s, int pid)
{
	struct hm_slot *slot = hashmap_u64_find(&s->proc_cgroup, (uint32_t)pid);

	return slot ? session_cgroup_path(s, slot->val) : NULL;
}

int session_nspid(const struct session *s, int pid)
{
	struct hm_slot *slot = hashmap_u64_find(&s->nspids, (uint32_t)pid);

	return slot ? (int)slot->val : 0;
}

const char *session_container_id(const char *path, char *buf, size_t len)
{
	for (const char *p = path; p && *p; p++) {
		size_t n = 0;

		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		/* Runtimes name a container by 64 hex digits, alone or as
		 * docker-ID.scope, cri-containerd-ID.scope, crio-ID, libpod-ID. */
		if (n == 64 && (p == path || !isxdigit((unsigned char)p[-1]))) {
			snprintf(buf, len, "%.12s", p);
			return buf;
		}
		p += n;
		if (!*p)
			break;
	}
	return NULL;
}

/* Whether cgroup path c is want or below it. */
int session_cgroup_under(const char *c, const char *want)
{
	size_t n = strlen(want);

	if (!c)
		return 0;
	if (n == 1 && want[0] == '/')
		return 1;
	return !strncmp(c, want, n) && (c[n] == 0 || c[n] == '/');
}
