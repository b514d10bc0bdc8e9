/* test_engine_subtree.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * rules 7, 9, 10, 11 and 12: inheritance, the guarantee, the oom_kill
 * counter, notification and under_oom over the subtree, and the freeze escalation.
 *
 * Written against docs/SEMANTICS.md, not core/: each test drives the engine with the
 * fake clock and fake shell of harness.h and checks the actions it asks for. A rule's
 * tests are the criterion suite rule<n> (or rule<n>_<variant>); unit-rules checks that
 * every rule has one. */
#include "harness.h"

TestSuite(rule7, .init = setup_kernel, .fini = teardown);
TestSuite(rule9, .init = setup_kernel, .fini = teardown);
TestSuite(rule10, .init = setup_kernel, .fini = teardown);
TestSuite(rule11, .init = setup_kernel, .fini = teardown);
TestSuite(rule12, .init = setup_kernel, .fini = teardown);
TestSuite(freeze, .init = setup_kernel, .fini = teardown);


/* ----------------------------------------- rule 7: inheritance */

Test(rule7, child_inherits_T_and_D)
{
	cr_assert_eq(wdelay(B, 1234), 0);
	cr_assert_eq(wdis(B, 1), 0);
	clr();
	add(NEWID, B, 10 * MiB, OE_UNLIMITED);
	oe_view v = view(NEWID);
	cr_assert_eq(v.delay_ms, 1234);
	cr_assert(v.disable);
	cr_assert(v.managed);
	HASV(OE_ACT_SET_MAX, NEWID, 10 * MiB + CEIL);
	HASV(OE_ACT_SET_HIGH, NEWID, 10 * MiB);
}

Test(rule7, child_of_default_parent_is_native)
{
	add(NEWID, S, 10 * MiB, OE_UNLIMITED);
	oe_view v = view(NEWID);
	cr_assert_eq(v.delay_ms, 0);
	cr_assert_not(v.disable);
	cr_assert_not(v.managed);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_SET_HIGH);
}

Test(rule7, child_inherits_consumed_T)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(10);
	add(NEWID, A, 10 * MiB, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).delay_ms, 0);
}

Test(rule7, child_of_held_parent_is_under_oom)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(10);
	clr();
	add(NEWID, A, 10 * MiB, OE_UNLIMITED);
	cr_assert(view(NEWID).under_oom, "rule 12: the whole subtree is under OOM");
	cr_assert_not(view(NEWID).in_hold);
}

Test(rule7, unlimited_child_inherits_but_is_unmanaged)
{
	cr_assert_eq(wdelay(A, 500), 0);
	clr();
	add(NEWID, A, OE_UNLIMITED, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).delay_ms, 500);
	cr_assert_not(view(NEWID).managed);
	NOT(OE_ACT_SET_MAX, NEWID);
}

Test(rule7, subtree_write_reaches_every_descendant)
{
	cr_assert_eq(wdelay(A, 42), 0);
	cr_assert_eq(view(A).delay_ms, 42);
	cr_assert_eq(view(B).delay_ms, 42);
	cr_assert_eq(view(C).delay_ms, 42);
	cr_assert_eq(view(S).delay_ms, 42);
	cr_assert_eq(view(P).delay_ms, 0);
	cr_assert(view(C).managed);
	HASV(OE_ACT_SET_MAX, C, LC + CEIL);
	HASV(OE_ACT_SET_MAX, S, LS + CEIL);
	/* a write lower in the tree does not go up */
	cr_assert_eq(wdelay(B, 7), 0);
	cr_assert_eq(view(A).delay_ms, 42);
	cr_assert_eq(view(B).delay_ms, 7);
	cr_assert_eq(view(C).delay_ms, 7);
	cr_assert_eq(view(S).delay_ms, 42);
}

/* -------- rule 9: the guarantee, and the broken promise logged */

Test(rule9, kernel_kill_during_delay_is_logged)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	clr();
	oe_reading r = {.current = LA + CEIL, .ev_oom = 1, .ev_oom_kill = 1, .local_oom = 1, .local_oom_kill = 1};
	sample_r(A, &r);
	HAS(OE_ACT_LOG, A);
	size_t i = (size_t)find(OE_ACT_LOG, A);
	cr_assert_not_null(ACT.v[i].msg);
}

Test(rule9, hierarchical_kill_during_delay_is_logged)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	clr();
	oe_reading r = {.current = LA + MiB, .ev_oom_kill = 1};
	sample_r(A, &r);
	HAS(OE_ACT_LOG, A);
}

Test(rule9, no_log_without_kill)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	clr();
	oe_reading r = {.current = LA + MiB, .ev_high = 50, .ev_max = 0};
	sample_r(A, &r);
	NONE_OF(OE_ACT_LOG);
}

Test(rule9, no_log_for_unmanaged)
{
	oe_reading r = {.current = LA};
	sample_r(A, &r);
	clr();
	r.ev_oom = 1;
	r.ev_oom_kill = 1;
	r.local_oom = 1;
	r.local_oom_kill = 1;
	sample_r(A, &r);
	NONE_OF(OE_ACT_LOG);
}

/* Two threads read memory.events; the later reader may reach the engine first. */
Test(rule9, reading_older_than_the_last_is_ignored)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	oe_reading r = {.current = LA + MiB, .ev_high = 50, .ev_oom = 1, .ev_oom_kill = 1,
			.local_oom = 1, .local_oom_kill = 1};
	sample_r(A, &r);
	cr_assert_eq(view(A).oom_kill, 1);
	clr();
	oe_reading old = {.current = LA + MiB, .ev_high = 40};
	sample_r(A, &old);
	NONE_OF(OE_ACT_LOG);
	cr_assert_eq(view(A).oom_kill, 1, "an older reading moved the counter back");
	clr();
	/* the next real reading (no new kill) is not counted as a second kill */
	oe_reading next = r;
	next.ev_high = 60;
	sample_r(A, &next);
	NONE_OF(OE_ACT_LOG);
	cr_assert_eq(view(A).oom_kill, 1);
}

Test(rule9, kernel_kill_after_our_kill_is_not_a_broken_promise)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	advance_ms(30);
	clr();
	oe_reading r = {.current = LA - MiB, .ev_oom = 1, .ev_oom_kill = 1, .local_oom = 1, .local_oom_kill = 1};
	sample_r(A, &r);
	NONE_OF(OE_ACT_LOG);
	cr_assert_eq(view(A).oom_kill, 1, "the kernel's kill counts as this cgroup's (rule 10)");
}

Test(rule9, kill_in_held_descendant_is_logged)
{
	/* a task of the held cgroup's subtree killed by the kernel before the deadline */
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(300);
	clr();
	oe_reading r = {.current = LB, .ev_oom = 1, .ev_oom_kill = 1, .local_oom = 1, .local_oom_kill = 1};
	sample_r(B, &r);
	oe_reading ra = {.current = LA + MiB, .ev_oom_kill = 1};
	sample_r(A, &ra);
	cr_assert_geq(count_kind(OE_ACT_LOG), 1, "no task of the held cgroup may be OOM-killed; got %s", dump());
}

/* ------------------------------- rule 10: the oom_kill counter */

Test(rule10, oom_kill_is_local_count)
{
	oe_reading r = {.current = LA, .ev_oom_kill = 9, .local_oom_kill = 2};
	sample_r(A, &r);
	cr_assert_eq(view(A).oom_kill, 2, "v1 counts the cgroup's own kills, not its subtree's");
}

Test(rule10, new_cgroup_starts_at_zero)
{
	add(NEWID, A, 10 * MiB, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).oom_kill, 0);
	cr_assert_not(view(NEWID).under_oom);
}

/* --------------------------------------- rule 11: notification */

Test(rule11, ancestor_onset_notifies_descendants_only)
{
	hold_A(1000);
	HAS(OE_ACT_NOTIFY, A);
	HAS(OE_ACT_NOTIFY, B);
	HAS(OE_ACT_NOTIFY, C);
	HAS(OE_ACT_NOTIFY, S);
	NOT(OE_ACT_NOTIFY, ROOT);
	NOT(OE_ACT_NOTIFY, P);
	cr_assert_eq(count(OE_ACT_NOTIFY, C), 1);
}

Test(rule11, child_onset_does_not_notify_parent)
{
	cr_assert_eq(wdelay(B, 1000), 0);
	clr();
	sample(B, LB + MiB);
	cr_assert(view(B).in_hold);
	HAS(OE_ACT_NOTIFY, B);
	HAS(OE_ACT_NOTIFY, C);
	NOT(OE_ACT_NOTIFY, A);
	NOT(OE_ACT_NOTIFY, S);
	cr_assert_not(view(A).under_oom);
}

Test(rule11, each_onset_notifies_again)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	recover(A, LA - MiB);
	cr_assert_eq(wdelay(A, 1000), 0);
	advance_ms(100);
	clr();
	sample(A, LA + MiB);
	HAS(OE_ACT_NOTIFY, A);
	HAS(OE_ACT_NOTIFY, C);
}

Test(rule11, native_oom_of_ancestor_notifies_deep)
{
	oe_reading r = {.current = LB};
	sample_r(B, &r);
	clr();
	r.ev_oom = 2;
	r.local_oom = 2;
	sample_r(B, &r);
	HAS(OE_ACT_NOTIFY, B);
	HAS(OE_ACT_NOTIFY, C);
	NOT(OE_ACT_NOTIFY, A);
}

Test(rule11, old_counters_at_start_are_not_an_onset)
{
	add(NEWID, ROOT, 10 * MiB, OE_UNLIMITED);
	clr();
	oe_reading r = {.current = MiB, .ev_oom = 7, .local_oom = 7, .ev_oom_kill = 2, .local_oom_kill = 2};
	sample_r(NEWID, &r);
	NONE_OF(OE_ACT_NOTIFY);
	cr_assert_eq(view(NEWID).oom_kill, 2);
}

Test(rule11, child_native_oom_does_not_notify_parent_subtree)
{
	/* cgroup v2 memory.events is hierarchical: B's own OOM also raises A's `oom`.
	 * Only memory.events.local tells whose limit it was; v1 notified B's subtree only. */
	oe_reading ra = {.current = 60 * MiB};
	oe_reading rb = {.current = LB};
	sample_r(A, &ra);
	sample_r(B, &rb);
	clr();
	ra.ev_oom = 1; /* hierarchical count moved, A's own (local) did not */
	sample_r(A, &ra);
	NOT(OE_ACT_NOTIFY, A);
	NOT(OE_ACT_NOTIFY, S);
	rb.ev_oom = 1;
	rb.local_oom = 1;
	sample_r(B, &rb);
	HAS(OE_ACT_NOTIFY, B);
	HAS(OE_ACT_NOTIFY, C);
	cr_assert_eq(count(OE_ACT_NOTIFY, C), 1, "got %s", dump());
}

Test(rule11, kernel_oom_of_managed_cgroup_not_held_still_notifies)
{
	/* usage jumped past L + ceiling between two readings: the kernel's backstop acted */
	cr_assert_eq(wdelay(A, 1000), 0);
	oe_reading r = {.current = LA - MiB};
	sample_r(A, &r);
	clr();
	r.ev_oom = 1;
	r.local_oom = 1;
	r.ev_oom_kill = 1;
	r.local_oom_kill = 1;
	sample_r(A, &r);
	HAS(OE_ACT_NOTIFY, A);
	HAS(OE_ACT_NOTIFY, C);
	cr_assert_eq(view(A).oom_kill, 1);
}

/* --------------------- rule 12: under_oom on the whole subtree */

Test(rule12, under_oom_marks_whole_subtree)
{
	cr_assert_eq(wdelay(B, 1000), 0);
	clr();
	sample(B, LB + MiB);
	cr_assert(view(B).under_oom);
	cr_assert(view(C).under_oom);
	cr_assert_not(view(A).under_oom);
	cr_assert_not(view(S).under_oom);
	cr_assert_not(view(P).under_oom);
	cr_assert(view(B).in_hold);
	cr_assert_not(view(C).in_hold, "in_hold is the cgroup's own hold only");
	HAS(OE_ACT_CHANGED, B);
	HAS(OE_ACT_CHANGED, C);
	NOT(OE_ACT_CHANGED, A);
}

Test(rule12, nested_holds_keep_descendant_under_oom)
{
	/* A held, then B held as well; A recovers: C still under OOM through B */
	cr_assert_eq(wdelay(A, 5000), 0);
	sample(A, LA + MiB);
	cr_assert_eq(wdelay(B, 5000), 0);
	cr_assert_eq(view(A).delay_ms, 0);
	sample(B, LB + MiB);
	cr_assert(view(B).in_hold);
	advance_ms(100);
	recover(A, LA - MiB);
	cr_assert_not(view(A).under_oom);
	cr_assert(view(B).under_oom);
	cr_assert(view(C).under_oom);
	cr_assert_not(view(S).under_oom);
}

Test(rule12, under_oom_is_shown_to_new_and_old_descendants_until_end)
{
	int64_t t0 = hold_A(1000);
	cr_assert(view(B).under_oom);
	cr_assert(view(S).under_oom);
	cr_assert_not(view(P).under_oom);
	cr_assert_not(view(B).in_hold);
	now_ns = t0 + MS(200);
	recover(A, LA - MiB);
	cr_assert_not(view(B).under_oom);
	cr_assert_not(view(S).under_oom);
}

/* ------------------------- escalation: freeze above L + margin */

Test(freeze, over_margin_freezes_once)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	sample(A, LA + MARGIN + MiB);
	HAS(OE_ACT_FREEZE, A);
	cr_assert(view(A).frozen);
	advance_ms(100);
	sample(A, LA + MARGIN + 2 * MiB);
	cr_assert_eq(count(OE_ACT_FREEZE, A), 1);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(freeze, below_margin_does_not_freeze)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	sample(A, LA + MARGIN);
	NONE_OF(OE_ACT_FREEZE);
	cr_assert_not(view(A).frozen);
}

Test(freeze, onset_far_over_margin_freezes)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	sample(A, LA + MARGIN + MiB);
	cr_assert(view(A).in_hold);
	HAS(OE_ACT_FREEZE, A);
}

Test(freeze, persist_before_freeze)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	sample(A, LA + MARGIN + MiB);
	SEQ(K(OE_ACT_PERSIST, A), K(OE_ACT_FREEZE, A));
	cr_assert(last_persist(A)->frozen);
}

Test(freeze, kill_thaws)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	sample(A, LA + MARGIN + MiB);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	HAS(OE_ACT_THAW, A);
	cr_assert_not(view(A).frozen);
}

Test(freeze, recovery_thaws)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	sample(A, LA + MARGIN + MiB);
	now_ns = t0 + MS(200);
	clr();
	recover(A, LA - MiB);
	HAS(OE_ACT_THAW, A);
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert_not(view(A).frozen);
}
