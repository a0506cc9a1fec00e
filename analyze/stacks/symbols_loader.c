/*
 * analyze/stacks/symbols_loader.c: the loader thread: it loads the objects the stacks touch and
 * names their addresses ahead of the lookups. An object is the loader's
 * from the time it is queued until a lookup settles it (dso_settle).
 */
#include "symbols_int.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>

static void *loader_run(void *arg)
{
	struct dso_loader *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct load_job j;

		while (l->head == l->nr && !l->quit)
			pthread_cond_wait(&l->cv, &l->mu);
		if (l->quit)
			break;
		j = l->queue[l->head++];
		/* A job for an object the main thread took back is dropped. */
		if (j.d->load != (j.name ? LOAD_READY : LOAD_QUEUED))
			continue;
		j.d->load = LOAD_BUSY;
		l->busy = 1;
		pthread_mutex_unlock(&l->mu);
		if (j.name) {
			dso_name_ahead(j.d, j.off, j.ret);
		} else {
			/* The unwinder may have loaded it already, for its
			 * debug file. */
			if (j.d->state == DSO_UNLOADED)
				dso_load(j.d);
			if (j.d->state == DSO_OK) {
				Dwarf_Addr bias;

				dwfl_module_getsymtab(j.d->mod);
				if (j.d->dwarf)
					dwfl_module_getdwarf(j.d->mod, &bias);
			}
		}
		pthread_mutex_lock(&l->mu);
		l->busy = 0;
		j.d->loaded = 1;
		j.d->load = LOAD_READY;
		pthread_cond_broadcast(&l->cv);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void loader_push(struct dso_loader *l, struct load_job j)
{
	pthread_mutex_lock(&l->mu);
	if (l->nr == l->alloc) {
		size_t a = l->alloc ? l->alloc * 2 : 64;
		struct load_job *q = realloc(l->queue, a * sizeof(*q));

		if (!q) {
			/* Not queued: the main thread does it when it needs it. */
			pthread_mutex_unlock(&l->mu);
			return;
		}
		l->queue = q;
		l->alloc = a;
	}
	l->queue[l->nr++] = j;
	if (!j.name)
		j.d->load = LOAD_QUEUED;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void symbols_prefetch(struct symbols *s, struct dso *d, int dwarf)
{
	struct dso_loader *l = s->loader;

	/* Queued ones have a loader until they are settled; this thread alone
	 * writes that field, so it is read without the lock. */
	if (!d || d->loader || d->load != LOAD_IDLE || (d->state != DSO_UNLOADED && d->state != DSO_OK))
		return;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (!l)
			return;
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		if (pthread_create(&l->thread, NULL, loader_run, l)) {
			pthread_mutex_destroy(&l->mu);
			pthread_cond_destroy(&l->cv);
			free(l);
			return;
		}
		s->loader = l;
	}
	d->loader = l;
	d->dwarf = dwarf;
	loader_push(l, (struct load_job){ .d = d });
}

void symbols_prefetch_name(struct dso *d, uint64_t off, int ret)
{
	struct hm_slot *slot;
	int created;

	if (!d || !d->loader)
		return;
	/* Each address once: the loader thread's cache is not this thread's
	 * to look in. */
	slot = hashmap_u64(&d->asked, off << 1 | !!ret, &created);
	if (!slot || !created)
		return;
	slot->ptr = d;
	loader_push(d->loader, (struct load_job){ .d = d, .off = off, .name = 1, .ret = !!ret });
}

int dso_wait_loaded(struct dso *d)
{
	struct dso_loader *l = d->loader;
	int ready;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->mu);
	while (d->load == LOAD_QUEUED || (d->load == LOAD_BUSY && !d->loaded))
		pthread_cond_wait(&l->cv, &l->mu);
	ready = d->loaded;
	pthread_mutex_unlock(&l->mu);
	return ready;
}

void dso_settle(struct dso *d)
{
	struct dso_loader *l = d->loader;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	while (d->load == LOAD_BUSY)
		pthread_cond_wait(&l->cv, &l->mu);
	d->load = LOAD_DONE;
	d->loader = NULL;
	pthread_mutex_unlock(&l->mu);
	hashmap_release(&d->asked);
}

void loader_stop(struct dso_loader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cv);
	free(l->queue);
	free(l);
}


void symbols_fork_prepare(struct symbols *s)
{
	struct dso_loader *l = s->loader;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	while (l->head < l->nr || l->busy)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
}

int symbols_fork_child(struct symbols *s)
{
	struct dso_loader *l = s->loader;

	if (!l)
		return 0;
	/* The thread did not come across: a new one serves the same queue,
	 * whose lock and condition no other thread holds now. */
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	return pthread_create(&l->thread, NULL, loader_run, l) ? -1 : 0;
}
