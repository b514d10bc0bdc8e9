/* controller.c — the facade of controller.h that the shells call: making and
 * freeing the controller, adding and removing cgroups, the watcher's samples, user
 * writes through the shadow tree, views, the status snapshot and the hand-back.
 * Each entry point says who its caller is (a ctl_ctx: ctl.h); how the parts fit:
 * ctl.h.
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl.h"
#include "ctl_act.h"
#include "ctl_adopt.h"
#include "ctl_deadline.h"
#include "ctl_post.h"
#include "ctl_hooks.h"
#include "ctl_lock.h"
#include "ctl_table.h"
#include "oomd/kernel_io.h"

#include <limits.h>
#include <time.h>

int64_t od_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Who calls each entry point (ctl.h); the deadline thread and actuators have their own. */
static const ctl_ctx WORKER = { .who = CTL_WORKER }, LOOP = { .who = CTL_LOOP };

od_controller *od_controller_new(const oe_config *cfg)
{
	od_controller *c = g_new0(od_controller, 1);
	if (ctl_deadlines_init(c) != 0) {
		g_free(c);
		return NULL;
	}
	if (ctl_post_init(c) != 0) {
		ctl_deadlines_free(c);
		g_free(c);
		return NULL;
	}
	ctl_lock_init(c);
	ctl_lock_name_thread("the main loop"); /* main() makes the controller on the loop's thread */
	ctl_hooks_init(&c->hooks);
	g_mutex_init(&c->adopt_lock);
	g_cond_init(&c->adopt_done);
	c->order = od_order_new();
	ctl_table_init(c, cfg);
	ctl_actuators_start(c);
	return c;
}

void od_controller_free(od_controller *c)
{
	if (!c)
		return;
	ctl_deadlines_stop(c);
	ctl_actuators_stop(c);
	ctl_table_free(c);
	od_order_free(c->order);
	ctl_deadlines_free(c);
	ctl_post_free(c);
	ctl_hooks_clear(&c->hooks);
	ctl_lock_clear(c);
	g_mutex_clear(&c->adopt_lock);
	g_cond_clear(&c->adopt_done);
	g_free(c);
}

od_hooks_reg *od_controller_set_hooks(od_controller *c, const od_hooks *h)
{
	return ctl_hooks_add(&c->hooks, h);
}

void od_controller_remove_hooks(od_controller *c, od_hooks_reg *reg)
{
	ctl_hooks_remove(&c->hooks, reg);
}

int od_controller_add(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out)
{
	return ctl_adopt(c, &WORKER, parent_id, dirfd, id_out);
}

int od_controller_add_from_loop(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out)
{
	return ctl_adopt(c, &LOOP, parent_id, dirfd, id_out);
}

size_t od_controller_states_adopted(od_controller *c)
{
	return (size_t)g_atomic_int_get(&c->states_adopted);
}

void od_controller_remove(od_controller *c, uint64_t id)
{
	ctl_remove_subtree(c, &LOOP, id);
}

void od_controller_sample(od_controller *c, uint64_t id)
{
	od_cg *g = ctl_lookup_ref(c, id);
	if (!g)
		return;
	ctl_sample(c, &LOOP, g);
	ctl_cg_unref(g);
}

void od_controller_real_max_changed(od_controller *c, uint64_t id)
{
	od_cg *g = ctl_lookup_ref(c, id);
	if (!g)
		return;
	uint64_t v;
	if (od_kio_read_u64(g->fd, "memory.max", &v) == 0) {
		ctl_lock(c, "real max");
		/* As a sample (ctl_sample): only this cgroup's hold can move the timer. At
		 * 10,000 cgroups a subtree write's echo (10,000 memory.max events) was
		 * 10,000 walks of the whole tree, seconds of the loop after the write. */
		bool was_held = ctl_holds_in_locked(c, &id, 1);
		oe_real_max_seen(c->eng, od_now(), id, v, &c->acts);
		ctl_finish_locked_rearm(c, &LOOP, was_held || ctl_holds_in_locked(c, &id, 1));
	}
	ctl_cg_unref(g);
}

typedef int (*write_fn)(oe_engine *, int64_t, uint64_t, uint64_t, oe_actions *);

void od_controller_adopting(od_controller *c, bool on)
{
	g_mutex_lock(&c->adopt_lock);
	g_atomic_int_set(&c->adopting, on);
	if (!on)
		g_cond_broadcast(&c->adopt_done);
	g_mutex_unlock(&c->adopt_lock);
}

static int user_write(od_controller *c, write_fn fn, uint64_t id, uint64_t value,
		      const ctl_via *via)
{
	if (g_atomic_int_get(&c->adopting)) {
		g_mutex_lock(&c->adopt_lock);
		while (g_atomic_int_get(&c->adopting))
			g_cond_wait(&c->adopt_done, &c->adopt_lock);
		g_mutex_unlock(&c->adopt_lock);
	}
	ctl_lock_wide(c, "user write", id); /* a delay write reaches the whole subtree */
	int r = fn(c->eng, od_now(), id, value, &c->acts);
	if (r != 0) {
		oe_actions_clear(&c->acts);
		oe_action *wide = ctl_unwiden_locked(c);
		ctl_unlock(c);
		g_free(wide);
		return r;
	}
	const ctl_ctx ctx = { .who = CTL_WORKER, .via = via };
	return ctl_finish_locked(c, &ctx); /* the kernel's errno, if a write of it failed */
}

int od_controller_write_delay(od_controller *c, uint64_t id, uint64_t ms)
{
	return user_write(c, oe_write_delay, id, ms, NULL);
}

int od_controller_write_disable(od_controller *c, uint64_t id, uint64_t v)
{
	return user_write(c, oe_write_disable, id, v, NULL);
}

int od_controller_write_limit(od_controller *c, uint64_t id, uint64_t bytes, int fd)
{
	const ctl_via via = { .id = id, .kind = OE_ACT_SET_MAX, .fd = fd };
	return user_write(c, oe_write_limit, id, bytes, fd >= 0 ? &via : NULL);
}

int od_controller_write_high(od_controller *c, uint64_t id, uint64_t bytes, int fd)
{
	const ctl_via via = { .id = id, .kind = OE_ACT_SET_HIGH, .fd = fd };
	return user_write(c, oe_write_high, id, bytes, fd >= 0 ? &via : NULL);
}

bool od_controller_view(od_controller *c, uint64_t id, oe_view *v)
{
	ctl_lock(c, "view");
	bool ok = oe_view_get(c->eng, id, v);
	ctl_unlock(c);
	return ok;
}

size_t od_controller_snapshot(od_controller *c, uint64_t only, od_snapshot_fn fn, void *ud)
{
	/* Allocated outside the lock: a cgroup added meanwhile waits for the next call. */
	ctl_lock(c, "snapshot");
	size_t cap = only ? 1 : g_hash_table_size(c->cgs) + 16, n = 0;
	ctl_unlock(c);
	od_cg **cgs = g_new(od_cg *, cap);
	oe_view *views = g_new(oe_view, cap);
	ctl_lock(c, "snapshot");
	GHashTableIter it;
	gpointer val = only ? g_hash_table_lookup(c->cgs, &only) : NULL;
	if (!only)
		g_hash_table_iter_init(&it, c->cgs);
	while (n < cap && (only ? val != NULL : g_hash_table_iter_next(&it, NULL, &val))) {
		od_cg *g = val;
		if (oe_view_get(c->eng, g->id, &views[n]))
			cgs[n++] = ctl_cg_ref(g);
		val = NULL;
	}
	ctl_unlock(c);
	char p[PATH_MAX];
	for (size_t i = 0; i < n; i++) {
		fn(ud, cgs[i]->id, ctl_cg_path(cgs[i], p, sizeof p), &views[i]);
		ctl_cg_unref(cgs[i]);
	}
	g_free(cgs);
	g_free(views);
	return n;
}

void od_controller_release_all(od_controller *c)
{
	/* No tick may queue a kill behind our back once we look, and whatever the
	 * actuators still have (a freeze behind a kill...) must land before the
	 * hand-back, or it could undo it. */
	ctl_deadlines_stop(c);
	od_order_drain(c->order);
	ctl_lock_wide(c, "release", 0);
	oe_release_all(c->eng, &c->acts);
	size_t n = c->acts.n;
	ctl_rearm_locked(c);
	oe_action *v = g_new(oe_action, MAX(n, 1));
	od_cg **g = g_new(od_cg *, MAX(n, 1));
	ctl_copy_out_locked(c, v, g);
	oe_actions_clear(&c->acts);
	oe_action *wide = ctl_unwiden_locked(c);
	ctl_unlock(c);
	g_free(wide);
	g_message("handing %zu actions back to the kernel (every managed cgroup: memory.max = L, "
		  "the user's memory.high, thawed, state removed)", n);
	/* Inline even on the loop thread, as a worker would: this is the shutdown path
	 * and must be done before the process exits. */
	for (size_t i = 0; i < n; i++) {
		ctl_run_one(c, &WORKER, &v[i], g[i]);
		ctl_cg_unref(g[i]);
	}
	g_free(v);
	g_free(g);
}
