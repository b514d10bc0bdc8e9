/* ctl_table.c — implements ctl_table.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_table.h"
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

/* Room for the largest batch the engine can emit: release_all and subtree
 * writes emit a few actions per cgroup. Grown only when cgroups are added,
 * never on the event -> kill path. */
void ctl_ensure_room_locked(od_controller *c, size_t extra_nodes)
{
	size_t need = 8 * (oe_count(c->eng) + extra_nodes) + 64;
	if (c->acts.cap >= need)
		return;
	/* An eighth more, not twice: 8 actions of 88 bytes per cgroup are locked in
	 * memory, 7 MiB at 10,000 cgroups; doubling could leave half of it unused. */
	size_t old = c->acts.cap, cap = MAX(need, old + old / 8);
	c->buf = g_renew(oe_action, c->buf, cap);
	/* touched now, not on the kill path (the old part is resident already) */
	memset(c->buf + old, 0, (cap - old) * sizeof *c->buf);
	oe_actions_init(&c->acts, c->buf, cap);
}

void ctl_copy_out_locked(od_controller *c, oe_action *v, od_cg **cgs)
{
	if (c->acts.overflow)
		g_critical("engine action buffer overflow (%zu actions): some real knobs may lag "
			   "until the next event", c->acts.cap);
	for (size_t i = 0; i < c->acts.n; i++) {
		v[i] = c->acts.v[i];
		cgs[i] = ctl_cg_ref(g_hash_table_lookup(c->cgs, &v[i].id));
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
