/* test_audit.c — the audit's hold records (daemon/audit.c) over the controller's
 * fixture (ctl_fixture.h: g managed with L and a 200 ms delay). Issue 19: its figures
 * count from the onset the deadline counts from (the engine's), not from when the
 * audit thread heard of the hold (3-39 ms later under systemd); and one hold is one
 * record. */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

#include "ctl_fixture.h"
#include "oomd/audit.h"

static od_audit *audit;

static void audit_setup(void)
{
	setup(OE_KILL_KERNEL);
	audit = od_audit_new(ctl, OE_KILL_KERNEL);
}

static void audit_teardown(void)
{
	od_audit_free(audit);
	teardown();
}

TestSuite(audit, .init = audit_setup, .fini = audit_teardown, .timeout = 20);

/* The records of g (open first, then ended), waiting up to 2 s for `n` of them. */
static GArray *records_of_g(guint n, bool ended)
{
	for (int i = 0; i < 400; i++) {
		g_autoptr(GArray) all = od_audit_records(audit);
		GArray *mine = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
		for (guint k = 0; k < all->len; k++) {
			od_hold_record *r = &g_array_index(all, od_hold_record, k);
			if (r->cgroup_id == gid && (!ended || r->end != OD_END_NONE))
				g_array_append_val(mine, *r);
		}
		if (mine->len >= n)
			return mine;
		g_array_unref(mine);
		g_usleep(5000);
	}
	return g_array_new(FALSE, FALSE, sizeof(od_hold_record));
}

Test(audit, the_record_counts_from_the_engines_onset)
{
	/* The audit thread hears of the hold late: make it very late. */
	int64_t t0 = start_hold();
	oe_view v;
	cr_assert(od_controller_view(ctl, gid, &v));
	cr_assert(v.in_hold);
	cr_assert_geq(v.hold_onset_ns, t0);
	g_autoptr(GArray) recs = records_of_g(1, false);
	cr_assert_eq(recs->len, 1, "no record of the hold");
	od_hold_record *r = &g_array_index(recs, od_hold_record, 0);
	cr_assert_eq(r->onset_ns, v.hold_onset_ns, "the record's onset is %.3f ms after the engine's",
		     (r->onset_ns - v.hold_onset_ns) / 1e6);
	cr_assert_eq(r->deadline_ns - r->onset_ns, 200 * 1000000LL,
		     "deadline - onset is %.3f ms, not T = 200 ms", (r->deadline_ns - r->onset_ns) / 1e6);
}

Test(audit, a_kill_at_the_deadline_was_held_at_least_T)
{
	od_controller_start_deadlines(ctl);
	start_hold();
	cr_assert(wait_for_kill(3000, "memory.max", "33554432"), "no kill (memory.max = L) within 3 s");
	g_autoptr(GArray) recs = records_of_g(1, true);
	cr_assert_eq(recs->len, 1, "no ended record");
	od_hold_record *r = &g_array_index(recs, od_hold_record, 0);
	cr_assert_eq(r->end, OD_END_KILL_KERNEL, "ended %s", od_end_name(r->end));
	double held = (r->end_ns - r->onset_ns) / 1e6;
	cr_assert_geq(held, 200.0, "held %.3f ms for T = 200 ms: counted from a later onset", held);
	cr_assert_geq(r->kill_late_ns, 0);
}

Test(audit, one_hold_one_record_through_a_dip)
{
	/* oom_kill_disable 1, a hold, then a reading 1 MiB under L (issue 19: that one
	 * reading ended the hold and the next one started a second). */
	cr_assert_eq(od_controller_write_disable(ctl, gid, 1), 0);
	start_hold();
	char cur[32];
	g_snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L - MiB);
	put("memory.current", cur);
	g_usleep(10000);
	od_controller_sample(ctl, gid);
	g_snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L + MiB);
	put("memory.current", cur);
	g_usleep(10000);
	od_controller_sample(ctl, gid);
	oe_view v;
	cr_assert(od_controller_view(ctl, gid, &v));
	cr_assert(v.in_hold);
	g_usleep(300 * 1000); /* the audit thread has heard everything by now */
	g_autoptr(GArray) recs = records_of_g(1, false);
	cr_assert_eq(recs->len, 1, "%u records of one hold", recs->len);
	cr_assert_eq(g_array_index(recs, od_hold_record, 0).end, OD_END_NONE);
	od_audit_stats st;
	od_audit_stats_get(audit, &st);
	cr_assert_eq(st.started, 1, "%" G_GUINT64_FORMAT " onsets counted", st.started);
}

/* A set of hooks ahead of the audit's whose first call blocks until released: the
 * hooks of the onset's batch run late, as on an actuator the host starves. */
static GMutex slow_lock;
static GCond slow_cond;
static int slow_state; /* 0: not called yet, 1: blocked in the first call, 2: released */

static void slow_hook(void *ud, uint64_t id)
{
	(void)ud, (void)id;
	g_mutex_lock(&slow_lock);
	if (slow_state == 0) {
		slow_state = 1;
		g_cond_broadcast(&slow_cond);
		while (slow_state != 2)
			g_cond_wait(&slow_cond, &slow_lock);
	}
	g_mutex_unlock(&slow_lock);
}

static gpointer sample_g(gpointer unused)
{
	(void)unused;
	od_controller_sample(ctl, gid);
	return NULL;
}

/* o-audit and o-metrics on 6.1 under CI load (2026-12-07): the onset's hooks ran
 * after the hold had ended, the view they took showed no hold, and the hold was never
 * recorded. The audit's events are the views the engine calls left, in their order. */
Test(audit, a_hold_over_before_its_hooks_ran_is_recorded)
{
	od_audit_free(audit);
	od_hooks h = { .control_changed = slow_hook, .notify = slow_hook };
	od_hooks_reg *slow = od_controller_set_hooks(ctl, &h);
	audit = od_audit_new(ctl, OE_KILL_KERNEL); /* its hooks run after the slow ones */
	char cur[32];
	g_snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L + MiB);
	put("memory.current", cur);
	put("memory.events", events1);
	put("memory.events.local", events1);
	GThread *t = g_thread_new("onset", sample_g, NULL);
	g_mutex_lock(&slow_lock);
	gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	while (slow_state == 0 && g_cond_wait_until(&slow_cond, &slow_lock, until))
		;
	bool blocked = slow_state == 1;
	g_mutex_unlock(&slow_lock);
	cr_assert(blocked, "the onset's hooks were never called");
	/* the hold ends (its cgroup removed) while the onset's hooks wait */
	od_controller_remove(ctl, gid);
	oe_view v;
	cr_assert_not(od_controller_view(ctl, gid, &v));
	g_mutex_lock(&slow_lock);
	slow_state = 2;
	g_cond_broadcast(&slow_cond);
	g_mutex_unlock(&slow_lock);
	g_thread_join(t);
	g_autoptr(GArray) recs = records_of_g(1, true);
	od_controller_remove_hooks(ctl, slow);
	cr_assert_eq(recs->len, 1, "%u records of a hold that ended before its hooks ran", recs->len);
	cr_assert_eq(g_array_index(recs, od_hold_record, 0).end, OD_END_REMOVED, "ended %s",
		     od_end_name(g_array_index(recs, od_hold_record, 0).end));
}

/* Rule 6: a delay of 0 written during the hold kills at once, before the deadline the
 * hold began with: the record says kill-early, from the daemon's kill itself (the
 * fixture's oom_kill never moves), however the views between moved the deadline. */
Test(audit, a_delay_of_0_during_the_hold_is_a_kill_early)
{
	od_controller_start_deadlines(ctl);
	start_hold();
	cr_assert_eq(od_controller_write_delay(ctl, gid, 0), 0);
	cr_assert(wait_for_kill(3000, "memory.max", "33554432"), "no kill (memory.max = L) within 3 s");
	g_autoptr(GArray) recs = records_of_g(1, true);
	cr_assert_eq(recs->len, 1, "no ended record");
	od_hold_record *r = &g_array_index(recs, od_hold_record, 0);
	cr_assert_eq(r->end, OD_END_KILL_EARLY, "ended %s", od_end_name(r->end));
	cr_assert_lt(r->end_ns - r->onset_ns, 200 * 1000000LL, "held %.1f ms: not before the deadline",
		     (r->end_ns - r->onset_ns) / 1e6);
}
