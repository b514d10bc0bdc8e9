/* ctl_table.c — implements ctl_table.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_table.h"
#include "ctl_hooks.h"
#include "ctl_lock.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ctl_table_init(od_controller *c, const oe_config *cfg)
{
	c->eng = oe_new(cfg);
	c->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, (GDestroyNotify)ctl_cg_unref);
	ctl_ensure_room_locked(c, 0);
}

void ctl_table_free(od_controller *c)
{
	g_hash_table_destroy(c->cgs);
	oe_free(c->eng);
	g_free(c->buf);
	g_free(c->wide);
}

od_cg *ctl_cg_ref(od_cg *g)
{
	if (g)
		g_atomic_int_inc(&g->ref);
	return g;
}

void ctl_cg_unref(od_cg *g)
{
	if (g && g_atomic_int_dec_and_test(&g->ref)) {
		if (g->hold) {
			od_kio_hold_close(g->hold);
			g_free(g->hold);
		}
		close(g->fd);
		g_free(g);
	}
}

const char *ctl_cg_path(const od_cg *g, char *buf, size_t size)
{
	char link[32];
	if (!g) {
		snprintf(buf, size, "?");
		return buf;
	}
	snprintf(link, sizeof link, "/proc/self/fd/%d", g->fd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		snprintf(buf, size, "cgroup %" PRIu64, g->id);
	else
		buf[n] = '\0';
	return buf;
}

od_cg *ctl_lookup_ref(od_controller *c, uint64_t id)
{
	ctl_lock(c, "lookup");
	od_cg *g = ctl_cg_ref(g_hash_table_lookup(c->cgs, &id));
	ctl_unlock(c);
	return g;
}

/* The resident buffer is locked in memory (88 bytes an action) and sized for the
 * calls that must not allocate: the deadline thread's ticks and samples, the loop's
 * samples. Per call, oe_tick emits at most 2 actions per held cgroup (PERSIST,
 * SAMPLE) and oe_sample at most 2 per cgroup of the sampled subtree (NOTIFY,
 * CHANGED: rule 11, and under_oom moving) and a dozen of its own; an add, a removal
 * and a knob write on one cgroup, a few. Only a delay write (up to 5 per cgroup of
 * the subtree: PERSIST, SET_HIGH, SET_MAX, FORGET, SAMPLE) and the hand-back (up
 * to 4 per cgroup) emit more, and both come from threads that may allocate: they
 * widen first (ctl_lock_wide). So 2 per cgroup and a slack for the dozen:
 * tests/unit/test_action_bounds.c checks these bounds against the engine. At
 * 10,000 cgroups 1.7 MiB, not the 7 MiB of a reserve of 8 per cgroup. */
#define RESIDENT_PER_CG 2
#define WIDE_PER_CG 8
#define SLACK_ACTS 64
#define GROW_ACTS 512 /* 44 KiB: room for 256 more cgroups before the next realloc */

void ctl_ensure_room_locked(od_controller *c, size_t extra_nodes)
{
	size_t need = RESIDENT_PER_CG * (oe_count(c->eng) + extra_nodes) + SLACK_ACTS;
	if (c->buf_cap >= need)
		return;
	/* A fixed step, not a fraction: an eighth more left up to 190 KiB unused (and
	 * locked) at 10,000 cgroups. Growing by a step is cheap: over malloc's mmap
	 * threshold (startup.c) realloc moves pages (mremap) instead of copying them. */
	size_t old = c->buf_cap, cap = need + GROW_ACTS;
	c->buf = g_renew(oe_action, c->buf, cap);
	/* touched now, not on the kill path (the old part is resident already) */
	memset(c->buf + old, 0, (cap - old) * sizeof *c->buf);
	c->buf_cap = cap;
	if (!c->wide)
		oe_actions_init(&c->acts, c->buf, cap);
}

static void count_one(uint64_t id, void *ud)
{
	(void)id;
	(*(size_t *)ud)++;
}

static size_t wide_need_locked(od_controller *c, uint64_t id)
{
	size_t n = 0;
	if (id)
		oe_foreach_subtree(c->eng, id, count_one, &n);
	else
		n = oe_count(c->eng);
	return WIDE_PER_CG * n + SLACK_ACTS;
}

void ctl_lock_wide(od_controller *c, const char *site, uint64_t id)
{
	oe_action *spare = NULL;
	size_t spare_cap = 0;
	for (;;) {
		ctl_lock(c, site);
		size_t need = wide_need_locked(c, id);
		if (need <= c->acts.cap && !spare)
			return;
		if (spare_cap >= need) {
			c->wide = spare;
			oe_actions_init(&c->acts, spare, spare_cap);
			return;
		}
		/* Allocated without the lock: the deadline thread may be waiting for it. */
		ctl_unlock(c);
		g_free(spare);
		spare_cap = need + need / 8; /* the subtree may grow before we are back */
		spare = g_new(oe_action, spare_cap);
	}
}

oe_action *ctl_unwiden_locked(od_controller *c)
{
	oe_action *w = c->wide;
	if (w) {
		c->wide = NULL;
		oe_actions_init(&c->acts, c->buf, c->buf_cap);
	}
	return w;
}

void ctl_copy_out_locked(od_controller *c, oe_action *v, od_cg **cgs)
{
	if (c->acts.overflow)
		g_critical("engine action buffer overflow (%zu actions): some real knobs may lag "
			   "until the next event", c->acts.cap);
	int64_t now = 0;
	for (size_t i = 0; i < c->acts.n; i++) {
		v[i] = c->acts.v[i];
		cgs[i] = ctl_cg_ref(g_hash_table_lookup(c->cgs, &v[i].id));
		oe_view view;
		if ((v[i].kind == OE_ACT_NOTIFY || v[i].kind == OE_ACT_CHANGED) &&
		    oe_view_get(c->eng, v[i].id, &view)) {
			if (!now)
				now = od_now();
			ctl_hooks_observed(&c->hooks, v[i].id, v[i].kind == OE_ACT_NOTIFY, &view, now);
		}
	}
}

/* oe_next_wakeup walks every cgroup, and only holds set wake-ups: an add or a
 * remove that involves no hold leaves the timer as it was, or adding (or removing)
 * N cgroups one by one would cost N^2. */
bool ctl_holds_in_locked(od_controller *c, const uint64_t *ids, size_t n)
{
	oe_view v;
	for (size_t i = 0; i < n; i++)
		if (oe_view_get(c->eng, ids[i], &v) && v.in_hold)
			return true;
	return false;
}
