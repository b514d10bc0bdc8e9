/* ctl_hooks.c — implements ctl_hooks.h. A removal takes the lock for writing, so it
 * waits for the calls in flight (readers) and no call starts after it. Hooks never
 * add or remove sets, so the read side never nests under a waiting writer. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_hooks.h"

#include <stddef.h>

struct od_hooks_reg {
	od_hooks h;
};

void ctl_hooks_init(ctl_hooks *hs)
{
	g_rw_lock_init(&hs->lock);
	hs->sets = g_ptr_array_new_with_free_func(g_free);
}

void ctl_hooks_clear(ctl_hooks *hs)
{
	g_ptr_array_unref(hs->sets);
	g_rw_lock_clear(&hs->lock);
}

od_hooks_reg *ctl_hooks_add(ctl_hooks *hs, const od_hooks *h)
{
	od_hooks_reg *r = g_new(od_hooks_reg, 1);
	r->h = *h;
	g_rw_lock_writer_lock(&hs->lock);
	g_ptr_array_add(hs->sets, r);
	g_rw_lock_writer_unlock(&hs->lock);
	return r;
}

void ctl_hooks_remove(ctl_hooks *hs, od_hooks_reg *reg)
{
	if (!reg)
		return;
	g_rw_lock_writer_lock(&hs->lock);
	if (!g_ptr_array_remove(hs->sets, reg)) /* frees reg */
		g_critical("hooks removed that were not registered");
	g_rw_lock_writer_unlock(&hs->lock);
}

typedef void (*hook_fn)(void *ud, uint64_t id);

/* Calls the hook at `member` (offsetof in od_hooks) of every set for ids[n-1] .. ids[0]. */
static void call_all(ctl_hooks *hs, size_t member, const uint64_t *ids, size_t n)
{
	g_rw_lock_reader_lock(&hs->lock);
	for (size_t i = n; i-- > 0;)
		for (guint k = 0; k < hs->sets->len; k++) {
			const od_hooks *h = &((od_hooks_reg *)hs->sets->pdata[k])->h;
			hook_fn fn = *(const hook_fn *)(const void *)((const char *)h + member);
			if (fn)
				fn(h->ud, ids[i]);
		}
	g_rw_lock_reader_unlock(&hs->lock);
}

void ctl_hooks_observed(ctl_hooks *hs, uint64_t id, bool notify, const oe_view *v, int64_t t)
{
	g_rw_lock_reader_lock(&hs->lock);
	for (guint k = 0; k < hs->sets->len; k++) {
		const od_hooks *h = &((od_hooks_reg *)hs->sets->pdata[k])->h;
		if (h->observed)
			h->observed(h->ud, id, notify, v, t);
	}
	g_rw_lock_reader_unlock(&hs->lock);
}

void ctl_hooks_killed(ctl_hooks *hs, uint64_t id, int64_t t, int err)
{
	g_rw_lock_reader_lock(&hs->lock);
	for (guint k = 0; k < hs->sets->len; k++) {
		const od_hooks *h = &((od_hooks_reg *)hs->sets->pdata[k])->h;
		if (h->killed)
			h->killed(h->ud, id, t, err);
	}
	g_rw_lock_reader_unlock(&hs->lock);
}

void ctl_hooks_notify(ctl_hooks *hs, uint64_t id)
{
	call_all(hs, offsetof(od_hooks, notify), &id, 1);
}

void ctl_hooks_changed(ctl_hooks *hs, uint64_t id)
{
	call_all(hs, offsetof(od_hooks, control_changed), &id, 1);
}

void ctl_hooks_removed(ctl_hooks *hs, const uint64_t *ids, size_t n)
{
	call_all(hs, offsetof(od_hooks, removed), ids, n); /* children first */
}
