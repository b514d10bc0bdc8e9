/* Unit tests of the pure rules engine (include/oomd/engine.h) against
 * docs SEMANTICS.md, rules 1-12, with a fake clock. */
#include "harness.h"

TestSuite(managed, .init = setup_kernel, .fini = teardown);
TestSuite(rule1, .init = setup_kernel, .fini = teardown);
TestSuite(rule2, .init = setup_kernel, .fini = teardown);
TestSuite(rule3, .init = setup_kernel, .fini = teardown);
TestSuite(rule3_group, .init = setup_group, .fini = teardown);
TestSuite(rule4, .init = setup_kernel, .fini = teardown);
TestSuite(rule5, .init = setup_kernel, .fini = teardown);
TestSuite(rule6, .init = setup_kernel, .fini = teardown);
TestSuite(rule7, .init = setup_kernel, .fini = teardown);
TestSuite(rule9, .init = setup_kernel, .fini = teardown);
TestSuite(rule10, .init = setup_kernel, .fini = teardown);
TestSuite(rule11, .init = setup_kernel, .fini = teardown);
TestSuite(rule12, .init = setup_kernel, .fini = teardown);
TestSuite(freeze, .init = setup_kernel, .fini = teardown);
TestSuite(invalid, .init = setup_kernel, .fini = teardown);
TestSuite(realmax, .init = setup_kernel, .fini = teardown);
TestSuite(persist, .init = setup_kernel, .fini = teardown);
TestSuite(release, .init = setup_kernel, .fini = teardown);
TestSuite(tree, .init = setup_kernel, .fini = teardown);

/* ---------------------------------------------------------------- managed knobs */

Test(managed, unmanaged_cgroup_keeps_real_knobs)
{
	oe_view v = view(A);
	cr_assert_not(v.managed);
	cr_assert_eq(v.limit, LA);
	cr_assert_eq(v.user_high, OE_UNLIMITED);
	cr_assert_eq(v.delay_ms, 0);
	cr_assert_not(v.disable);
	cr_assert_eq(v.real_max, LA);
	cr_assert_eq(v.real_high, OE_UNLIMITED);
	/* adding an unmanaged cgroup sets no knob */
	add(NEWID, ROOT, 10 * MiB, 8 * MiB);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_SET_HIGH);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(managed, delay_makes_managed_high_L_max_L_plus_ceiling)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	HASV(OE_ACT_SET_HIGH, A, LA);
	HASV(OE_ACT_SET_MAX, A, LA + CEIL);
	oe_view v = view(A);
	cr_assert(v.managed);
	cr_assert_eq(v.delay_ms, 1000);
	cr_assert_eq(v.real_max, LA + CEIL);
	cr_assert_eq(v.real_high, LA);
	/* what users see stays L and their own high */
	cr_assert_eq(v.limit, LA);
	cr_assert_eq(v.user_high, OE_UNLIMITED);
}

Test(managed, persist_precedes_knobs)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	SEQ(K(OE_ACT_PERSIST, A), K(OE_ACT_SET_MAX, A));
	SEQ(K(OE_ACT_PERSIST, A), K(OE_ACT_SET_HIGH, A));
	const oe_persisted *p = last_persist(A);
	cr_assert_not_null(p);
	cr_assert_eq(p->delay_ms, 1000);
	cr_assert_eq(p->limit, LA);
	cr_assert_eq(p->user_high, OE_UNLIMITED);
	cr_assert_not(p->disable);
	cr_assert_not(p->in_hold);
}

Test(managed, lower_user_high_is_kept)
{
	add(NEWID, ROOT, 100 * MiB, 40 * MiB);
	clr();
	cr_assert_eq(wdelay(NEWID, 500), 0);
	/* min(L, user high) = 40M, which is already applied */
	NOT(OE_ACT_SET_HIGH, NEWID);
	HASV(OE_ACT_SET_MAX, NEWID, 100 * MiB + CEIL);
	cr_assert_eq(view(NEWID).real_high, 40 * MiB);
}

Test(managed, disable_alone_makes_managed)
{
	cr_assert_eq(wdis(A, 1), 0);
	HASV(OE_ACT_SET_MAX, A, LA + CEIL);
	HASV(OE_ACT_SET_HIGH, A, LA);
	cr_assert(view(A).managed);
	cr_assert(view(A).disable);
}

Test(managed, unlimited_L_is_never_managed)
{
	cr_assert_eq(wdelay(P, 1000), 0);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_SET_HIGH);
	oe_view v = view(P);
	cr_assert_eq(v.delay_ms, 1000);
	cr_assert_not(v.managed);
	cr_assert_eq(v.real_max, OE_UNLIMITED);
	/* even over any size it is not held */
	clr();
	sample(P, 10 * GiB);
	cr_assert_not(view(P).in_hold);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(managed, ceiling_saturates)
{
	add(NEWID, ROOT, OE_UNLIMITED - 4096, OE_UNLIMITED);
	clr();
	cr_assert_eq(wdelay(NEWID, 10), 0);
	cr_assert_eq(view(NEWID).real_max, OE_UNLIMITED, "L + ceiling must saturate, not wrap");
	uint64_t v;
	if (lastv(OE_ACT_SET_MAX, NEWID, &v))
		cr_assert_eq(v, OE_UNLIMITED);
}

Test(managed, delay_zero_hands_back_to_kernel)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(wdelay(A, 0), 0);
	HASV(OE_ACT_SET_MAX, A, LA);
	HASV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	HAS(OE_ACT_FORGET, A);
	cr_assert_not(view(A).managed);
	cr_assert_eq(view(A).real_max, LA);
}

Test(managed, same_value_twice_emits_no_knobs)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(wdelay(A, 2000), 0);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_SET_HIGH);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(managed, write_limit_while_managed)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(wlimit(A, 200 * MiB), 0);
	HASV(OE_ACT_SET_MAX, A, 200 * MiB + CEIL);
	HASV(OE_ACT_SET_HIGH, A, 200 * MiB);
	oe_view v = view(A);
	cr_assert_eq(v.limit, 200 * MiB);
	cr_assert(v.managed);
}

Test(managed, write_limit_while_unmanaged_is_plain)
{
	cr_assert_eq(wlimit(A, 200 * MiB), 0);
	LASTV(OE_ACT_SET_MAX, A, 200 * MiB);
	NOT(OE_ACT_SET_HIGH, A);
	cr_assert_eq(view(A).limit, 200 * MiB);
	cr_assert_eq(view(A).real_max, 200 * MiB);
}

Test(managed, write_limit_max_unmanages)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(wlimit(A, OE_UNLIMITED), 0);
	LASTV(OE_ACT_SET_MAX, A, OE_UNLIMITED);
	HASV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	cr_assert_not(view(A).managed);
	cr_assert_eq(view(A).delay_ms, 1000, "T is kept even while L is max");
}

Test(managed, write_high_while_managed)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(whigh(A, 60 * MiB), 0);
	HASV(OE_ACT_SET_HIGH, A, 60 * MiB);
	cr_assert_eq(view(A).user_high, 60 * MiB);
	clr();
	/* a user high above L: real high stays L */
	cr_assert_eq(whigh(A, 500 * MiB), 0);
	LASTV(OE_ACT_SET_HIGH, A, LA);
	cr_assert_eq(view(A).user_high, 500 * MiB);
	cr_assert_eq(view(A).real_high, LA);
}

Test(managed, write_high_while_unmanaged_is_plain)
{
	cr_assert_eq(whigh(A, 60 * MiB), 0);
	LASTV(OE_ACT_SET_HIGH, A, 60 * MiB);
	cr_assert_eq(view(A).user_high, 60 * MiB);
	cr_assert_eq(view(A).real_high, 60 * MiB);
}

/* ---------------------------------------------------------------- rule 1 */

Test(rule1, unmanaged_over_L_is_not_held)
{
	sample(A, LA + 10 * MiB);
	oe_view v = view(A);
	cr_assert_not(v.in_hold);
	cr_assert_not(v.under_oom);
	NONE_OF(OE_ACT_KILL_KERNEL);
	NONE_OF(OE_ACT_KILL_GROUP);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_FREEZE);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(rule1, native_oom_notifies_subtree_without_hold)
{
	oe_reading r = {.current = LA};
	sample_r(A, &r);
	clr();
	r.ev_oom = 1;
	r.local_oom = 1;
	sample_r(A, &r);
	HAS(OE_ACT_NOTIFY, A);
	HAS(OE_ACT_NOTIFY, B);
	HAS(OE_ACT_NOTIFY, C);
	HAS(OE_ACT_NOTIFY, S);
	NOT(OE_ACT_NOTIFY, ROOT);
	NOT(OE_ACT_NOTIFY, P);
	NONE_OF(OE_ACT_KILL_KERNEL);
	NONE_OF(OE_ACT_SET_MAX);
	cr_assert_not(view(A).in_hold);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(rule1, nothing_due_without_hold)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	cr_assert_eq(wdis(S, 1), 0);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
	clr();
	advance_ms(100000);
	tick();
	EMPTY();
}

/* ---------------------------------------------------------------- rule 2 */

Test(rule2, onset_starts_hold_and_consumes_T)
{
	int64_t t0 = hold_A(1000);
	oe_view v = view(A);
	cr_assert(v.in_hold);
	cr_assert(v.under_oom);
	cr_assert_eq(v.delay_ms, 0, "T is one-shot: reads 0 after the onset");
	cr_assert_eq(v.deadline_ns, t0 + MS(1000));
	NONE_OF(OE_ACT_KILL_KERNEL);
	/* the hold keeps the knobs that hold it */
	cr_assert_eq(v.real_max, LA + CEIL);
	cr_assert_eq(v.real_high, LA);
	NOT(OE_ACT_SET_MAX, A);
}

Test(rule2, charges_over_L_without_tasks_start_no_hold)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	oe_reading r = {.current = LA + MiB, .no_tasks = true};
	sample_r(A, &r);
	cr_assert_not(view(A).in_hold, "left-over charges with no task started a hold: %s", dump());
	cr_assert_eq(view(A).delay_ms, 1000, "T spent on a hold of nobody");
	NONE_OF(OE_ACT_NOTIFY);
	/* a task that comes and pushes is held */
	advance_ms(50);
	r.no_tasks = false;
	r.ev_high = 1;
	sample_r(A, &r);
	cr_assert(view(A).in_hold);
}

Test(rule2, onset_notifies_and_wakes_pollers)
{
	hold_A(1000);
	HAS(OE_ACT_NOTIFY, A);
	HAS(OE_ACT_CHANGED, A);
	cr_assert_eq(count(OE_ACT_NOTIFY, A), 1);
}

Test(rule2, onset_persists_hold)
{
	int64_t t0 = hold_A(1000);
	const oe_persisted *p = last_persist(A);
	cr_assert_not_null(p, "hold must be persisted; got %s", dump());
	cr_assert(p->in_hold);
	cr_assert_eq(p->delay_ms, 0);
	cr_assert_eq(p->deadline_ns, t0 + MS(1000));
}

Test(rule2, no_kill_for_at_least_T)
{
	int64_t t0 = hold_A(1000);
	for (int64_t t = t0 + MS(50); t < t0 + MS(1000); t += MS(50)) {
		now_ns = t;
		clr();
		sample(A, LA + 2 * MiB);
		tick();
		NONE_OF(OE_ACT_KILL_KERNEL);
		NONE_OF(OE_ACT_KILL_GROUP);
		cr_assert(view(A).under_oom);
	}
	now_ns = t0 + MS(1000) - 1;
	clr();
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule2, descendants_keep_their_T)
{
	hold_A(1000);
	cr_assert_eq(view(A).delay_ms, 0);
	cr_assert_eq(view(B).delay_ms, 1000);
	cr_assert_eq(view(C).delay_ms, 1000);
	cr_assert_eq(view(S).delay_ms, 1000);
}

Test(rule2, usage_at_L_is_not_oom)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	sample(A, LA);
	cr_assert_not(view(A).in_hold);
	cr_assert_eq(view(A).delay_ms, 1000);
	NONE_OF(OE_ACT_NOTIFY);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(rule2, one_notify_per_onset)
{
	hold_A(1000);
	clr();
	advance_ms(100);
	sample(A, LA + 3 * MiB);
	advance_ms(100);
	sample(A, LA + 3 * MiB);
	NONE_OF(OE_ACT_NOTIFY);
}

Test(rule2, wakeup_during_hold)
{
	int64_t t0 = hold_A(1000);
	int64_t w = oe_next_wakeup(E);
	cr_assert_neq(w, OE_NO_DEADLINE);
	cr_assert_leq(w, t0 + MS(1000));
	cr_assert_leq(w, t0 + SAMPLE_NS);
	cr_assert_gt(w, t0 - 1);
}

Test(rule2, tick_asks_for_samples)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + SAMPLE_NS;
	clr();
	tick();
	HAS(OE_ACT_SAMPLE, A);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule2, held_by_disable_with_zero_delay)
{
	cr_assert_eq(wdis(A, 1), 0);
	clr();
	sample(A, LA + MiB);
	oe_view v = view(A);
	cr_assert(v.in_hold);
	cr_assert(v.under_oom);
	HAS(OE_ACT_NOTIFY, A);
}

/* ---------------------------------------------------------------- rule 3 */

Test(rule3, kernel_kill_at_deadline)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	cr_assert_eq(count(OE_ACT_KILL_KERNEL, A), 1);
	oe_view v = view(A);
	cr_assert_not(v.in_hold);
	cr_assert_not(v.under_oom);
	HAS(OE_ACT_CHANGED, A);
}

Test(rule3, after_kill_cgroup_is_back_to_kernel)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	oe_view v = view(A);
	cr_assert_not(v.managed);
	cr_assert_eq(v.real_max, LA);
	cr_assert_eq(v.real_high, OE_UNLIMITED);
	HASV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	HAS(OE_ACT_FORGET, A);
	SEQ(K(OE_ACT_KILL_KERNEL, A), K(OE_ACT_SET_HIGH, A));
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(rule3, late_tick_still_kills)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(5000);
	clr();
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule3, kill_clears_under_oom_of_descendants)
{
	int64_t t0 = hold_A(1000);
	cr_assert(view(C).under_oom);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	cr_assert_not(view(B).under_oom);
	cr_assert_not(view(C).under_oom);
	cr_assert_not(view(S).under_oom);
	HAS(OE_ACT_CHANGED, B);
	HAS(OE_ACT_CHANGED, C);
}

Test(rule3, second_oom_after_kill_is_native)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	advance_ms(10);
	clr();
	sample(A, LA + MiB);
	cr_assert_not(view(A).in_hold);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
	NONE_OF(OE_ACT_SET_MAX);
}

Test(rule3, rewritten_delay_delays_again)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	advance_ms(10);
	clr();
	cr_assert_eq(wdelay(A, 300), 0);
	HASV(OE_ACT_SET_MAX, A, LA + CEIL);
	clr();
	int64_t t1 = now_ns;
	sample(A, LA + MiB);
	cr_assert(view(A).in_hold);
	HAS(OE_ACT_NOTIFY, A);
	now_ns = t1 + MS(299);
	clr();
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t1 + MS(300);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule3, kernel_kill_not_counted_by_guess)
{
	/* the kernel's kill is counted from its own counters, not guessed */
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	cr_assert_eq(view(A).oom_kill, 0);
}

Test(rule3_group, group_kill_at_deadline)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	HAS(OE_ACT_KILL_GROUP, A);
	NONE_OF(OE_ACT_KILL_KERNEL);
	oe_group_killed(E, A, 3, &ACT);
	oe_view v = view(A);
	cr_assert_not(v.in_hold);
	cr_assert_not(v.under_oom);
	cr_assert_eq(v.oom_kill, 3);
	cr_assert_not(v.managed);
	cr_assert_eq(v.real_max, LA);
	cr_assert_eq(v.real_high, OE_UNLIMITED);
	LASTV(OE_ACT_SET_MAX, A, LA);
	LASTV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
}

Test(rule3_group, group_kills_accumulate)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	oe_group_killed(E, A, 3, &ACT);
	advance_ms(10);
	cr_assert_eq(wdelay(A, 100), 0);
	int64_t t1 = now_ns;
	sample(A, LA + MiB);
	now_ns = t1 + MS(100);
	clr();
	tick();
	answer_over(A);
	HAS(OE_ACT_KILL_GROUP, A);
	oe_group_killed(E, A, 2, &ACT);
	cr_assert_eq(view(A).oom_kill, 5);
}

/* ---------------------------------------------------------------- rules 4, 8 */

Test(rule4, disable_wins_over_delay)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	for (int i = 1; i <= 30; i++) {
		now_ns = t0 + MS(1000) * i;
		clr();
		tick();
		sample(A, LA + MiB);
		NONE_OF(OE_ACT_KILL_KERNEL);
		NONE_OF(OE_ACT_KILL_GROUP);
	}
	cr_assert(view(A).in_hold);
	cr_assert(view(A).under_oom);
	cr_assert(view(A).managed);
}

/* Under global pressure every kernel call allocates and may stall: between the
 * deadline and the kill there is only the reading the kill is decided on. */
Test(rule3, nothing_between_deadline_and_kill)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	clr();
	tick(); /* the harness answers the SAMPLE with a reading still over L */
	cr_assert(ACT.n >= 2 && ACT.v[0].kind == OE_ACT_SAMPLE && ACT.v[1].kind == OE_ACT_KILL_KERNEL,
		  "at the deadline a SAMPLE, then at once the kill; got %s", dump());
}

Test(rule4, disable_spent_persisted)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	const oe_persisted *p = last_persist(A);
	cr_assert_not_null(p, "delay_spent must be persisted; got %s", dump());
	cr_assert(p->delay_spent);
	cr_assert(p->in_hold);
	cr_assert(p->disable);
}

Test(rule4, enable_after_spent_kills_at_once)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(3000);
	tick();
	clr();
	cr_assert_eq(wdis(A, 0), 0);
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	cr_assert_not(view(A).under_oom);
	cr_assert_not(view(A).disable);
}

Test(rule4, enable_before_deadline_kills_at_deadline)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(400);
	clr();
	cr_assert_eq(wdis(A, 0), 0);
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).in_hold);
	now_ns = t0 + MS(999);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule4, disable_with_zero_delay_never_kills)
{
	cr_assert_eq(wdis(A, 1), 0);
	clr();
	sample(A, LA + MiB);
	cr_assert(view(A).in_hold);
	int64_t w = oe_next_wakeup(E);
	cr_assert_leq(w, now_ns + SAMPLE_NS, "held cgroups are re-sampled");
	for (int i = 0; i < 20; i++) {
		advance_ms(500);
		tick();
		sample(A, LA + MiB);
	}
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).under_oom);
	clr();
	cr_assert_eq(wdis(A, 0), 0);
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule4, disable_written_during_hold_stops_kill)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(500);
	clr();
	cr_assert_eq(wdis(A, 1), 0);
	now_ns = t0 + MS(5000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).under_oom);
}

Test(rule4, disable_is_shown_in_view)
{
	cr_assert_eq(wdis(B, 1), 0);
	cr_assert(view(B).disable);
	cr_assert_not(view(A).disable, "D is set on this cgroup only");
	cr_assert_not(view(C).disable, "D is set on this cgroup only");
	cr_assert_eq(wdis(B, 0), 0);
	cr_assert_not(view(B).disable);
}

/* ---------------------------------------------------------------- rule 5 */

/* The hold of A ended by the last input, without a kill: nothing is due any more, and
 * still nothing at `deadline` (a time past the hold's old deadline). */
static void ended_without_kill(int64_t deadline)
{
	cr_assert_not(view(A).in_hold, "the hold of A did not end: %s", dump());
	cr_assert_not(view(A).under_oom);
	cr_assert_not(view(C).under_oom);
	HAS(OE_ACT_CHANGED, A);
	NONE_OF(OE_ACT_KILL_KERNEL);
	NONE_OF(OE_ACT_KILL_GROUP);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
	now_ns = deadline;
	clr();
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule5, usage_back_under_L_ends_hold)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(300);
	clr();
	sample(A, LA - MiB);
	ended_without_kill(t0 + MS(5000));
}

Test(rule5, every_task_moved_out_ends_hold_though_charges_stay_over_L)
{
	/* cgroup v2 leaves a moved task's charges behind: usage stays over L with nobody
	 * left to hold. The hold must end then, not at its deadline. */
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(300);
	clr();
	oe_reading r = {.current = LA + 2 * MiB, .no_tasks = true};
	sample_r(A, &r);
	/* T was consumed: handed back to the kernel */
	LASTV(OE_ACT_SET_MAX, A, LA);
	ended_without_kill(t0 + MS(60000));
}

Test(rule5, own_hand_back_over_left_over_charges_is_not_a_native_oom)
{
	/* The memory.max = L write over left-over charges makes the kernel count an OOM
	 * that finds no task: not an OOM to tell the listeners about. */
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(300);
	oe_reading r = {.current = LA + 2 * MiB, .no_tasks = true};
	sample_r(A, &r);
	cr_assert_not(view(A).in_hold);
	now_ns = t0 + MS(400);
	clr();
	r.local_oom = 1;
	r.ev_oom = 1;
	sample_r(A, &r);
	NONE_OF(OE_ACT_NOTIFY);
	/* later a real native OOM (a new task over L) is news again */
	now_ns = t0 + MS(5000);
	clr();
	r.local_oom = 2;
	r.ev_oom = 2;
	r.no_tasks = false;
	sample_r(A, &r);
	HAS(OE_ACT_NOTIFY, A);
}

Test(rule5, some_tasks_left_keep_the_hold)
{
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(300);
	oe_reading r = {.current = LA + 2 * MiB, .no_tasks = false};
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "a populated cgroup over L lost its hold");
}

Test(rule5, dip_under_L_while_still_throttled_keeps_the_hold)
{
	/* At memory.high = L the kernel reclaims usage just under L for a moment while
	 * the tasks still push: that is not a recovery (it would spend the delay and
	 * let the kernel kill at once). */
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	oe_reading r = {.current = LA + MiB, .ev_high = 10};
	sample_r(A, &r);
	now_ns = t0 + MS(110);
	clr();
	r.current = LA - 4096;
	r.ev_high = 25;
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "a dip under L with high events still rising ended the hold: %s", dump());
	NONE_OF(OE_ACT_SET_MAX);
	/* quiet just under L: a task may sleep up to 2 s in the high penalty */
	now_ns = t0 + MS(120);
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "quiet for 10 ms just under L ended the hold");
	now_ns = t0 + MS(1500);
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "quiet for 1.4 s just under L ended the hold");
	now_ns = t0 + MS(2300);
	sample_r(A, &r); /* quiet for longer than any penalty sleep: the pressure is gone */
	cr_assert_not(view(A).in_hold);
}

Test(rule5, quiet_streak_restarts_when_pressure_returns)
{
	int64_t t0 = hold_A(60000);
	oe_reading r = {.current = LA - 4096, .ev_high = 5};
	now_ns = t0 + MS(100);
	sample_r(A, &r);
	now_ns = t0 + MS(1500);
	r.ev_high = 6; /* pushed again */
	sample_r(A, &r);
	now_ns = t0 + MS(2500);
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "the quiet streak did not restart after new pressure");
	now_ns = t0 + MS(4000); /* quiet since 2500 only */
	sample_r(A, &r);
	cr_assert(view(A).in_hold, "the quiet streak counted from before the last push");
	now_ns = t0 + MS(4700);
	sample_r(A, &r);
	cr_assert_not(view(A).in_hold);
}

Test(rule5, recovery_hands_back_consumed_cgroup)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(300);
	sample(A, LA);
	/* exactly at L and quiet: recovered once no penalty sleep can hide a push */
	now_ns = t0 + MS(300) + MS(2200);
	clr();
	sample(A, LA);
	/* T consumed and D = 0: back to the kernel */
	cr_assert_not(view(A).managed);
	LASTV(OE_ACT_SET_MAX, A, LA);
	LASTV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	HAS(OE_ACT_FORGET, A);
}

Test(rule5, recovery_keeps_knobs_when_still_managed)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(300);
	clr();
	sample(A, LA - MiB);
	cr_assert_not(view(A).in_hold);
	cr_assert(view(A).managed);
	cr_assert_eq(view(A).real_max, LA + CEIL);
	NOT(OE_ACT_SET_MAX, A);
	NOT(OE_ACT_FORGET, A);
}

Test(rule5, raised_limit_resamples_and_recovers)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	clr();
	cr_assert_eq(wlimit(A, 200 * MiB), 0);
	cr_assert_eq(view(A).limit, 200 * MiB);
	NONE_OF(OE_ACT_KILL_KERNEL);
	if (!view(A).in_hold) {
		/* recovered at once: also fine */
		return;
	}
	HAS(OE_ACT_SAMPLE, A);
	clr();
	sample(A, LA + MiB);
	cr_assert_not(view(A).in_hold);
	cr_assert_not(view(A).under_oom);
	now_ns = t0 + MS(2000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule5, raised_limit_keeps_hold_knobs)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	clr();
	cr_assert_eq(wlimit(A, 200 * MiB), 0);
	if (view(A).in_hold)
		cr_assert_eq(view(A).real_max, 200 * MiB + CEIL,
			     "while held, real max stays L + ceiling");
}

Test(rule5, too_small_raise_does_not_recover)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	cr_assert_eq(wlimit(A, LA + 512 * KiB), 0);
	clr();
	sample(A, LA + MiB);
	cr_assert(view(A).in_hold);
	now_ns = t0 + MS(1000);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA + 512 * KiB);
}

Test(rule5, recovery_then_new_onset_needs_new_T)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(200);
	sample(A, LA - MiB);
	advance_ms(100);
	clr();
	sample(A, LA + MiB);
	cr_assert_not(view(A).in_hold, "T was consumed by the first onset");
	NONE_OF(OE_ACT_NOTIFY);
}

/* ---------------------------------------------------------------- rule 6 */

Test(rule6, rearm_restarts_wait)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(800);
	clr();
	cr_assert_eq(wdelay(A, 2000), 0);
	int64_t t1 = now_ns;
	cr_assert_eq(view(A).deadline_ns, t1 + MS(2000));
	cr_assert_eq(view(A).delay_ms, 0, "the re-armed T is consumed by the running hold");
	cr_assert(view(A).in_hold);
	now_ns = t0 + MS(1000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t1 + MS(2000) - 1;
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t1 + MS(2000);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule6, rearm_shorter)
{
	int64_t t0 = hold_A(10000);
	now_ns = t0 + MS(100);
	cr_assert_eq(wdelay(A, 50), 0);
	clr();
	now_ns = t0 + MS(150);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule6, rearm_zero_kills_now)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	cr_assert_eq(wdelay(A, 0), 0);
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	cr_assert_not(view(A).under_oom);
}

Test(rule6, rearm_zero_with_disable_does_not_kill)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	cr_assert_eq(wdelay(A, 0), 0);
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).in_hold);
	now_ns = t0 + MS(10000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule6, rearm_sets_descendants)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	cr_assert_eq(wdelay(A, 700), 0);
	cr_assert_eq(view(B).delay_ms, 700);
	cr_assert_eq(view(C).delay_ms, 700);
	cr_assert_eq(view(S).delay_ms, 700);
	cr_assert_not(view(B).in_hold);
}

Test(rule6, rearm_after_spent_with_disable_restarts)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(100);
	now_ns = t0 + MS(500); /* spent */
	tick();
	cr_assert_eq(wdelay(A, 1000), 0);
	int64_t t1 = now_ns;
	cr_assert_eq(wdis(A, 0), 0);
	clr();
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL); /* the new wait runs */
	now_ns = t1 + MS(1000);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

/* ---------------------------------------------------------------- rule 7 */

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

/* ---------------------------------------------------------------- rule 9 */

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

/* ---------------------------------------------------------------- rule 10 */

Test(rule10, oom_kill_is_local_count)
{
	oe_reading r = {.current = LA, .ev_oom_kill = 9, .local_oom_kill = 2};
	sample_r(A, &r);
	cr_assert_eq(view(A).oom_kill, 2, "v1 counts the cgroup's own kills, not its subtree's");
}

Test(rule3_group, rule10_group_kills_add_to_local)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(1000);
	tick();
	oe_group_killed(E, A, 3, &ACT);
	advance_ms(10);
	oe_reading r = {.current = LA - MiB, .local_oom_kill = 2};
	sample_r(A, &r);
	cr_assert_eq(view(A).oom_kill, 5);
}

Test(rule10, new_cgroup_starts_at_zero)
{
	add(NEWID, A, 10 * MiB, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).oom_kill, 0);
	cr_assert_not(view(NEWID).under_oom);
}

/* ---------------------------------------------------------------- rule 11 */

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
	sample(A, LA - MiB);
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

/* ---------------------------------------------------------------- rule 12 */

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
	sample(A, LA - MiB);
	cr_assert_not(view(A).under_oom);
	cr_assert(view(B).under_oom);
	cr_assert(view(C).under_oom);
	cr_assert_not(view(S).under_oom);
}

/* ---------------------------------------------------------------- freeze */

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
	sample(A, LA - MiB);
	HAS(OE_ACT_THAW, A);
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert_not(view(A).frozen);
}

Test(rule3_group, freeze_group_kill_thaws)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	sample(A, LA + MARGIN + MiB);
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer_over(A);
	HAS(OE_ACT_KILL_GROUP, A);
	oe_group_killed(E, A, 1, &ACT);
	HAS(OE_ACT_THAW, A);
	cr_assert_not(view(A).frozen);
}

/* ---------------------------------------------------------------- invalid input */

Test(invalid, delay_above_long_max)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	cr_assert_eq(wdelay(A, OE_MAX_DELAY_MS + 1), EINVAL);
	cr_assert_eq(wdelay(A, UINT64_MAX), EINVAL);
	EMPTY();
	cr_assert_eq(view(A).delay_ms, 1000);
	cr_assert_eq(view(C).delay_ms, 1000);
}

Test(invalid, delay_at_long_max_is_accepted)
{
	cr_assert_eq(wdelay(A, OE_MAX_DELAY_MS), 0);
	cr_assert_eq(view(A).delay_ms, OE_MAX_DELAY_MS);
	clr();
	sample(A, LA + MiB);
	cr_assert(view(A).in_hold);
	/* deadline must not overflow into the past */
	now_ns += MS(100000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).deadline_ns >= now_ns);
}

Test(invalid, invalid_delay_in_hold_changes_nothing)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	cr_assert_eq(wdelay(A, OE_MAX_DELAY_MS + 1), EINVAL);
	EMPTY();
	cr_assert_eq(view(A).deadline_ns, t0 + MS(1000));
	cr_assert(view(A).in_hold);
}

Test(invalid, disable_not_0_or_1)
{
	clr();
	cr_assert_eq(wdis(A, 2), EINVAL);
	cr_assert_eq(wdis(A, UINT64_MAX), EINVAL);
	EMPTY();
	cr_assert_not(view(A).disable);
	cr_assert_not(view(A).managed);
}

Test(invalid, root_refuses_disable)
{
	cr_assert_eq(wdis(ROOT, 1), EINVAL);
	cr_assert_eq(wdis(ROOT, 0), EINVAL);
	EMPTY();
}

Test(invalid, root_delay_sets_whole_tree)
{
	cr_assert_eq(wdelay(ROOT, 250), 0);
	cr_assert_eq(view(A).delay_ms, 250);
	cr_assert_eq(view(B).delay_ms, 250);
	cr_assert_eq(view(C).delay_ms, 250);
	cr_assert_eq(view(S).delay_ms, 250);
	cr_assert_eq(view(P).delay_ms, 250);
	NOT(OE_ACT_SET_MAX, ROOT);
	/* and a new top-level cgroup inherits it */
	add(NEWID, ROOT, 10 * MiB, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).delay_ms, 250);
}

Test(invalid, root_is_never_managed)
{
	cr_assert_eq(wdelay(ROOT, 250), 0);
	oe_view v;
	if (oe_view_get(E, ROOT, &v))
		cr_assert_not(v.managed);
	clr();
	sample(ROOT, 100 * GiB);
	NONE_OF(OE_ACT_NOTIFY);
	NOT(OE_ACT_SET_MAX, ROOT);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(invalid, unknown_id_is_enoent)
{
	clr();
	cr_assert_eq(wdelay(999, 10), ENOENT);
	cr_assert_eq(wdis(999, 1), ENOENT);
	cr_assert_eq(wlimit(999, MiB), ENOENT);
	cr_assert_eq(whigh(999, MiB), ENOENT);
	EMPTY();
	oe_view v;
	cr_assert_not(oe_view_get(E, 999, &v));
}

Test(invalid, unknown_id_events_are_ignored)
{
	size_t n0 = oe_count(E);
	clr();
	sample(999, GiB);
	seen_max(999, MiB);
	oe_group_killed(E, 999, 3, &ACT);
	oe_cgroup_remove(E, 999, &ACT);
	EMPTY();
	cr_assert_eq(oe_count(E), n0);
}

Test(invalid, add_with_unknown_parent_fails)
{
	cr_assert_not(oe_cgroup_add(E, now_ns, NEWID, 999, MiB, OE_UNLIMITED, NULL, &ACT));
	oe_view v;
	cr_assert_not(oe_view_get(E, NEWID, &v));
	EMPTY();
}

Test(invalid, add_twice_is_noop)
{
	cr_assert_eq(wdelay(A, 77), 0);
	size_t n0 = oe_count(E);
	clr();
	oe_cgroup_add(E, now_ns, A, ROOT, 5 * MiB, 5 * MiB, NULL, &ACT);
	EMPTY();
	cr_assert_eq(view(A).limit, LA);
	cr_assert_eq(view(A).delay_ms, 77);
	cr_assert_eq(oe_count(E), n0);
}

Test(invalid, action_buffer_overflow_is_flagged)
{
	oe_action small[1];
	oe_actions a;
	oe_actions_init(&a, small, 1);
	cr_assert_eq(oe_write_delay(E, now_ns, A, 1000, &a), 0);
	cr_assert(a.overflow, "several actions into a buffer of 1 must set overflow");
	cr_assert_eq(a.n, 1);
	oe_actions_clear(&a);
	cr_assert_eq(a.n, 0);
	cr_assert_not(a.overflow);
}

/* ---------------------------------------------------------------- direct real memory.max writes */

Test(realmax, own_write_is_ignored)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	seen_max(A, LA + CEIL);
	EMPTY();
	cr_assert_eq(view(A).limit, LA);
}

Test(realmax, previous_own_write_is_ignored)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	cr_assert_eq(wlimit(A, 80 * MiB), 0);
	clr();
	seen_max(A, LA + CEIL); /* late inotify event of the first write */
	cr_assert_eq(view(A).limit, 80 * MiB);
	/* not taken for a foreign write; if anything is written, it is the wanted knobs */
	uint64_t v;
	if (lastv(OE_ACT_SET_MAX, A, &v))
		cr_assert_eq(v, 80 * MiB + CEIL, "got %s", dump());
	if (lastv(OE_ACT_SET_HIGH, A, &v))
		cr_assert_eq(v, 80 * MiB, "got %s", dump());
}

Test(realmax, echo_three_writes_old_is_ignored)
{
	cr_assert_eq(wdelay(A, 1000), 0);      /* max = LA + CEIL */
	cr_assert_eq(wlimit(A, 80 * MiB), 0);  /* max = 80M + CEIL */
	cr_assert_eq(wlimit(A, 60 * MiB), 0);  /* max = 60M + CEIL */
	cr_assert_eq(wlimit(A, 70 * MiB), 0);  /* max = 70M + CEIL */
	clr();
	seen_max(A, LA + CEIL);
	cr_assert_eq(view(A).limit, 70 * MiB, "an old echo of our own write became L");
	LASTV(OE_ACT_SET_MAX, A, 70 * MiB + CEIL);
	LASTV(OE_ACT_SET_HIGH, A, 70 * MiB);
}

Test(realmax, echo_out_of_order_is_repaired)
{
	/* Two writes carried out by two threads can land in the wrong order: the kernel then
	 * holds the older value, and its echo is the only sign of it. */
	cr_assert_eq(wdelay(A, 1000), 0);
	cr_assert_eq(wlimit(A, 80 * MiB), 0);
	clr();
	seen_max(A, LA + CEIL);
	LASTV(OE_ACT_SET_MAX, A, 80 * MiB + CEIL);
	LASTV(OE_ACT_SET_HIGH, A, 80 * MiB);
	/* the echo of the repair itself changes nothing */
	clr();
	seen_max(A, 80 * MiB + CEIL);
	EMPTY();
}

Test(realmax, own_value_long_ago_is_a_foreign_write)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	cr_assert_eq(wlimit(A, 80 * MiB), 0);
	advance_ms(60000);
	clr();
	/* a user writing the value we wrote a minute ago means it */
	seen_max(A, LA + CEIL);
	cr_assert_eq(view(A).limit, LA + CEIL);
}

Test(realmax, foreign_value_becomes_L)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	seen_max(A, 70 * MiB);
	oe_view v = view(A);
	cr_assert_eq(v.limit, 70 * MiB);
	cr_assert_eq(v.real_max, 70 * MiB + CEIL);
	cr_assert_eq(v.real_high, 70 * MiB);
	HASV(OE_ACT_SET_MAX, A, 70 * MiB + CEIL);
	HASV(OE_ACT_SET_HIGH, A, 70 * MiB);
}

Test(realmax, foreign_value_on_unmanaged)
{
	seen_max(A, 70 * MiB);
	cr_assert_eq(view(A).limit, 70 * MiB);
	cr_assert_eq(view(A).real_max, 70 * MiB);
	NONE_OF(OE_ACT_SET_MAX);
}

Test(realmax, foreign_max_unmanages)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	clr();
	seen_max(A, OE_UNLIMITED);
	cr_assert_eq(view(A).limit, OE_UNLIMITED);
	cr_assert_not(view(A).managed);
	HASV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
}

/* ---------------------------------------------------------------- persisted state (restart) */

static oe_persisted pstate(uint64_t L, uint64_t delay, bool dis)
{
	oe_persisted p;
	memset(&p, 0, sizeof p);
	p.limit = L;
	p.user_high = OE_UNLIMITED;
	p.delay_ms = delay;
	p.disable = dis;
	p.deadline_ns = OE_NO_DEADLINE;
	return p;
}

Test(persist, idle_state_restores_user_values)
{
	oe_persisted p = pstate(10 * MiB, 500, false);
	p.user_high = 8 * MiB;
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 8 * MiB, &p, &ACT));
	oe_view v = view(NEWID);
	cr_assert_eq(v.limit, 10 * MiB, "L comes from the persisted state, not the real knob");
	cr_assert_eq(v.user_high, 8 * MiB);
	cr_assert_eq(v.delay_ms, 500);
	cr_assert(v.managed);
	NOT(OE_ACT_SET_MAX, NEWID);
}

Test(persist, persisted_not_inherited)
{
	cr_assert_eq(wdelay(A, 900), 0);
	oe_persisted p = pstate(10 * MiB, 0, true);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	cr_assert_eq(view(NEWID).delay_ms, 0);
	cr_assert(view(NEWID).disable);
}

Test(persist, expired_hold_kills_at_once)
{
	oe_persisted p = pstate(10 * MiB, 0, false);
	p.in_hold = true;
	p.deadline_ns = now_ns - MS(5000);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	answer_over(NEWID);
	HASV(OE_ACT_KILL_KERNEL, NEWID, 10 * MiB);
	cr_assert_not(view(NEWID).in_hold);
	cr_assert_not(view(NEWID).managed);
}

Test(persist, running_hold_resumes)
{
	oe_persisted p = pstate(10 * MiB, 0, false);
	p.in_hold = true;
	int64_t dl = now_ns + MS(700);
	p.deadline_ns = dl;
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	NONE_OF(OE_ACT_KILL_KERNEL);
	oe_view v = view(NEWID);
	cr_assert(v.in_hold);
	cr_assert(v.under_oom);
	cr_assert_eq(v.deadline_ns, dl);
	cr_assert_leq(oe_next_wakeup(E), dl);
	now_ns = dl - 1;
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = dl;
	tick();
	answer_over(NEWID);
	HASV(OE_ACT_KILL_KERNEL, NEWID, 10 * MiB);
}

Test(persist, frozen_flag_kept_and_thawed)
{
	oe_persisted p = pstate(10 * MiB, 0, false);
	p.in_hold = true;
	p.frozen = true;
	p.deadline_ns = now_ns + MS(300);
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	cr_assert(view(NEWID).frozen);
	advance_ms(100);
	clr();
	sample(NEWID, 5 * MiB);
	HAS(OE_ACT_THAW, NEWID);
	cr_assert_not(view(NEWID).frozen);
}

Test(persist, expired_frozen_hold_kills_and_thaws)
{
	oe_persisted p = pstate(10 * MiB, 0, false);
	p.in_hold = true;
	p.frozen = true;
	p.deadline_ns = now_ns - 1;
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	answer_over(NEWID);
	HAS(OE_ACT_KILL_KERNEL, NEWID);
	HAS(OE_ACT_THAW, NEWID);
}

Test(persist, spent_disabled_hold_stays_held)
{
	oe_persisted p = pstate(10 * MiB, 0, true);
	p.in_hold = true;
	p.delay_spent = true;
	p.deadline_ns = now_ns - MS(10000);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(NEWID).in_hold);
	clr();
	cr_assert_eq(wdis(NEWID, 0), 0);
	answer_over(NEWID);
	HASV(OE_ACT_KILL_KERNEL, NEWID, 10 * MiB);
}

Test(persist, group_kills_count)
{
	oe_persisted p = pstate(10 * MiB, 100, false);
	p.group_kills = 4;
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 10 * MiB + CEIL, 10 * MiB, &p, &ACT));
	cr_assert_eq(view(NEWID).oom_kill, 4);
	oe_reading r = {.current = MiB, .local_oom_kill = 1};
	sample_r(NEWID, &r);
	cr_assert_eq(view(NEWID).oom_kill, 5);
}

Test(persist, hold_under_persisted_parent_marks_children)
{
	oe_persisted p = pstate(LA, 0, false);
	p.in_hold = true;
	p.deadline_ns = now_ns + MS(500);
	engine_new(OE_KILL_KERNEL);
	cr_assert(oe_cgroup_add(E, now_ns, A, ROOT, LA + CEIL, LA, &p, &ACT));
	add(B, A, LB, OE_UNLIMITED);
	cr_assert(view(B).under_oom);
}

/* Adoption never loosens the real tree as found (issue 10): whatever the state says,
 * real memory.max ends no higher than it was, plus the ceiling of a managed L that
 * the real tree allowed. */
static uint64_t last_max_or(uint64_t id, uint64_t dflt)
{
	uint64_t v = dflt;
	lastv(OE_ACT_SET_MAX, id, &v);
	return v;
}

Test(persist, forged_unlimited_hold_discarded_for_the_real_limit)
{
	/* The attack of issue 10: "limit=max ... hold=1" over a real memory.max of 32M
	 * that the daemon had raised by its ceiling. */
	oe_persisted p = pstate(OE_UNLIMITED, 0, false);
	p.in_hold = true;
	p.deadline_ns = now_ns + MS(60000);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 32 * MiB + CEIL, 32 * MiB, &p, &ACT));
	HASV(OE_ACT_LOG, NEWID, OE_UNLIMITED);
	oe_view v = view(NEWID);
	cr_assert_eq(v.limit, 32 * MiB, "L from a forged state: %llu", (unsigned long long)v.limit);
	cr_assert_leq(last_max_or(NEWID, 32 * MiB), 32 * MiB + CEIL, "got %s", dump());
	/* The corrected state is stored over the bad one. */
	const oe_persisted *st = last_persist(NEWID);
	cr_assert_not_null(st, "the discarded limit stays stored; got %s", dump());
	cr_assert_eq(st->limit, 32 * MiB);
	/* The hold goes on at the real L: usage over it is still killed at the deadline. */
	answer(NEWID, 33 * MiB);
	now_ns = p.deadline_ns;
	tick();
	answer(NEWID, 33 * MiB);
	HASV(OE_ACT_KILL_KERNEL, NEWID, 32 * MiB);
}

Test(persist, larger_idle_limit_discarded_with_a_log_line)
{
	/* A managed state: the real memory.max found is the daemon's raise, L + ceiling. */
	oe_persisted p = pstate(256 * MiB, 500, false);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 32 * MiB + CEIL, 32 * MiB, &p, &ACT));
	HASV(OE_ACT_LOG, NEWID, 256 * MiB);
	cr_assert_eq(view(NEWID).limit, 32 * MiB, "L %llu", (unsigned long long)view(NEWID).limit);
	cr_assert_eq(view(NEWID).delay_ms, 500, "the state's delay is the admin's: kept");
	NONE_OF(OE_ACT_SET_MAX); /* the real tree already has 32M + ceiling */
	cr_assert_eq(view(NEWID).real_max, 32 * MiB + CEIL);
}

Test(persist, larger_limit_of_unmanaged_state_becomes_the_real_one)
{
	oe_persisted p = pstate(256 * MiB, 0, false);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 32 * MiB, OE_UNLIMITED, &p, &ACT));
	HASV(OE_ACT_LOG, NEWID, 256 * MiB);
	cr_assert_eq(view(NEWID).limit, 32 * MiB);
	NONE_OF(OE_ACT_SET_MAX);
}

Test(persist, own_raise_is_not_a_larger_limit)
{
	/* The daemon raised memory.max to L + ceiling before it died: no log, L kept. */
	oe_persisted p = pstate(32 * MiB, 500, false);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 32 * MiB + CEIL, 32 * MiB, &p, &ACT));
	NONE_OF(OE_ACT_LOG);
	NONE_OF(OE_ACT_SET_MAX);
	cr_assert_eq(view(NEWID).limit, 32 * MiB);
	cr_assert_eq(view(NEWID).user_high, OE_UNLIMITED, "the daemon's own min(L, high) is no clamp");
}

Test(persist, larger_high_discarded)
{
	oe_persisted p = pstate(32 * MiB, 0, false);
	p.user_high = OE_UNLIMITED;
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 32 * MiB, 16 * MiB, &p, &ACT));
	HASV(OE_ACT_LOG, NEWID, OE_UNLIMITED);
	cr_assert_eq(view(NEWID).user_high, 16 * MiB);
	NONE_OF(OE_ACT_SET_HIGH);
}

Test(persist, smaller_limit_from_state_is_kept)
{
	/* Stricter than the real tree: nothing to gain by forging it, and a real restart
	 * (state stored, crash before the raise) looks the same. */
	oe_persisted p = pstate(16 * MiB, 500, false);
	clr();
	cr_assert(oe_cgroup_add(E, now_ns, NEWID, A, 16 * MiB, 16 * MiB, &p, &ACT));
	NONE_OF(OE_ACT_LOG);
	cr_assert_eq(view(NEWID).limit, 16 * MiB);
}

/* xorshift64: the same cases on every run. */
static uint64_t rnd(uint64_t *s, uint64_t n)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s % n;
}

static uint64_t rand_mem(uint64_t *r)
{
	switch (rnd(r, 4)) {
	case 0: return OE_UNLIMITED;
	case 1: return rnd(r, 512) * MiB;
	case 2: return (1 + rnd(r, 511)) * MiB + CEIL;
	default: return rnd(r, UINT32_MAX) << 12;
	}
}

Test(persist, no_state_adopts_a_limit_above_the_real_tree)
{
	/* Whatever trusted state says (any L, high, T, D, hold, deadline), over whatever real
	 * knobs: the adopted L is never above the real memory.max, the user's high never
	 * above the real one unless that is the daemon's own min(L, high). */
	uint64_t seed = 20261204, *r = &seed;
	for (uint64_t i = 0; i < 4000; i++) {
		oe_persisted p = pstate(rand_mem(r), rnd(r, 3) * 500, rnd(r, 2));
		p.user_high = rand_mem(r);
		p.in_hold = rnd(r, 2);
		p.delay_spent = rnd(r, 2);
		p.frozen = rnd(r, 2);
		if (p.in_hold)
			p.deadline_ns = now_ns + MS((int64_t)rnd(r, 10000) - 5000);
		uint64_t rmax = rand_mem(r), rhigh = rand_mem(r), id = 1000 + i;
		clr();
		cr_assert(oe_cgroup_add(E, now_ns, id, A, rmax, rhigh, &p, &ACT));
		oe_view v = view(id);
		cr_assert_leq(v.limit, rmax, "state L %llu over real max %llu adopted as %llu",
			      (unsigned long long)p.limit, (unsigned long long)rmax,
			      (unsigned long long)v.limit);
		uint64_t own = p.limit < p.user_high ? p.limit : p.user_high;
		cr_assert(v.user_high <= rhigh || rhigh == own,
			  "state high %llu over real high %llu adopted as %llu",
			  (unsigned long long)p.user_high, (unsigned long long)rhigh,
			  (unsigned long long)v.user_high);
		if (p.limit > rmax)
			cr_assert_geq(find(OE_ACT_LOG, id), 0, "L discarded without a log line");
	}
}

/* ---------------------------------------------------------------- guarded actions */

static const oe_action *last_of(oe_action_kind kind, uint64_t id)
{
	const oe_action *a = NULL;
	for (size_t i = 0; i < ACT.n; i++)
		if (ACT.v[i].kind == kind && ACT.v[i].id == id)
			a = &ACT.v[i];
	return a;
}

Test(persist, raises_and_freezes_are_guarded_lowering_is_not)
{
	clr();
	cr_assert_eq(wdelay(A, 1000), 0);
	const oe_action *m = last_of(OE_ACT_SET_MAX, A);
	cr_assert_not_null(m);
	cr_assert(m->guarded, "the raise to L + ceiling needs its state first");
	cr_assert_lt(find(OE_ACT_PERSIST, A), find(OE_ACT_SET_MAX, A), "got %s", dump());
	const oe_action *h = last_of(OE_ACT_SET_HIGH, A);
	cr_assert(h && !h->guarded, "memory.high is never guarded");
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	sample(A, LA + MARGIN + MiB);
	const oe_action *f = last_of(OE_ACT_FREEZE, A);
	cr_assert(f && f->guarded, "a freeze needs its state first; got %s", dump());
	now_ns = t0 + MS(1000);
	clr();
	tick();
	answer(A, LA + MiB);
	const oe_action *k = last_of(OE_ACT_KILL_KERNEL, A);
	cr_assert(k && !k->guarded, "a kill is never guarded; got %s", dump());
	cr_assert(last_of(OE_ACT_THAW, A) && !last_of(OE_ACT_THAW, A)->guarded);
	cr_assert_eq(wdis(A, 1), 0); /* managed again: L + ceiling */
	clr();
	cr_assert_eq(wlimit(A, LA / 2), 0);
	m = last_of(OE_ACT_SET_MAX, A);
	cr_assert(m && !m->guarded, "a lower limit is not guarded; got %s", dump());
	/* Unmanaged, no state: raising its L needs none. */
	cr_assert_eq(wdelay(B, 0), 0);
	cr_assert_eq(wdis(B, 0), 0);
	clr();
	cr_assert_eq(wlimit(B, 2 * LB), 0);
	m = last_of(OE_ACT_SET_MAX, B);
	cr_assert(m && !m->guarded, "an unmanaged cgroup's raise is not guarded; got %s", dump());
}

Test(persist, unstored_state_is_stored_again_before_the_next_raise)
{
	clr();
	cr_assert_eq(wdelay(A, 1000), 0);
	/* The shell could not store it and skipped the raise: the kernel still has L. */
	oe_state_unstored(E, A, LA, LA, false);
	clr();
	cr_assert_eq(wlimit(A, LA), 0); /* the same L: only the skipped work is left */
	cr_assert_geq(find(OE_ACT_PERSIST, A), 0, "state not stored again; got %s", dump());
	HASV(OE_ACT_SET_MAX, A, LA + CEIL);
	cr_assert_lt(find(OE_ACT_PERSIST, A), find(OE_ACT_SET_MAX, A));
}

Test(persist, unstored_freeze_is_tried_again)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	clr();
	sample(A, LA + MARGIN + MiB);
	HAS(OE_ACT_FREEZE, A);
	oe_state_unstored(E, A, LA + CEIL, LA, false);
	cr_assert_not(view(A).frozen);
	now_ns += MS(100);
	clr();
	oe_reading r = {.current = LA + MARGIN + 2 * MiB, .ev_high = 1};
	sample_r(A, &r);
	cr_assert_geq(find(OE_ACT_PERSIST, A), 0, "got %s", dump());
	cr_assert_lt(find(OE_ACT_PERSIST, A), find(OE_ACT_FREEZE, A), "got %s", dump());
}

/* ---------------------------------------------------------------- hand-back */

Test(release, managed_back_to_kernel)
{
	cr_assert_eq(wdelay(A, 1000), 0); /* A, B, C, S managed */
	cr_assert_eq(whigh(B, 30 * MiB), 0);
	clr();
	oe_release_all(E, &ACT);
	LASTV(OE_ACT_SET_MAX, A, LA);
	LASTV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	LASTV(OE_ACT_SET_MAX, B, LB);
	uint64_t hb;
	if (lastv(OE_ACT_SET_HIGH, B, &hb)) /* B's real high was already its own 30M */
		cr_assert_eq(hb, 30 * MiB);
	LASTV(OE_ACT_SET_MAX, C, LC);
	HAS(OE_ACT_FORGET, A);
	HAS(OE_ACT_FORGET, B);
	HAS(OE_ACT_FORGET, C);
	HAS(OE_ACT_FORGET, S);
	NOT(OE_ACT_SET_MAX, P);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(release, frozen_is_thawed)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(100);
	sample(A, LA + MARGIN + MiB);
	clr();
	oe_release_all(E, &ACT);
	HAS(OE_ACT_THAW, A);
	LASTV(OE_ACT_SET_MAX, A, LA);
	HAS(OE_ACT_FORGET, A);
}

Test(release, nothing_for_unmanaged)
{
	oe_release_all(E, &ACT);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_SET_HIGH);
	NONE_OF(OE_ACT_THAW);
	NONE_OF(OE_ACT_KILL_KERNEL);
}

/* ---------------------------------------------------------------- tree bookkeeping */

static void collect(uint64_t id, void *ud)
{
	uint64_t *v = ud;
	v[++v[0]] = id;
}

/* The engine has no parent accessor (nothing but these tests would use one): a
 * cgroup's parent is its smallest proper ancestor, found through the subtrees. */
typedef struct {
	uint64_t want;
	size_t n;
	bool found;
} subtree_scan;

static void scan(uint64_t id, void *ud)
{
	subtree_scan *s = ud;
	s->n++;
	s->found |= id == s->want;
}

static uint64_t parent_of(uint64_t id)
{
	uint64_t all[64] = {0};
	oe_foreach_subtree(E, ROOT, collect, all);
	cr_assert_lt(all[0], sizeof all / sizeof all[0] - 1);
	uint64_t best = 0;
	size_t best_n = SIZE_MAX;
	for (uint64_t i = 1; i <= all[0]; i++) {
		subtree_scan s = { .want = id };
		if (all[i] == id)
			continue;
		oe_foreach_subtree(E, all[i], scan, &s);
		if (s.found && s.n < best_n) {
			best = all[i];
			best_n = s.n;
		}
	}
	return best;
}

Test(tree, structure)
{
	cr_assert(oe_count(E) == 6 || oe_count(E) == 5, "5 cgroups (+ root)");
	oe_view v;
	cr_assert(oe_view_get(E, C, &v));
	cr_assert_eq(parent_of(C), B);
	cr_assert_eq(parent_of(A), ROOT);
	cr_assert_eq(parent_of(ROOT), 0);
	cr_assert_eq(parent_of(999), 0);
	uint64_t got[16] = {0};
	oe_foreach_subtree(E, A, collect, got);
	cr_assert_eq(got[0], 4);
	cr_assert_eq(got[1], A, "pre-order: the cgroup first");
	/* B before C (pre-order) */
	int ib = -1, ic = -1;
	for (int i = 1; i <= 4; i++) {
		if (got[i] == B)
			ib = i;
		if (got[i] == C)
			ic = i;
	}
	cr_assert(ib > 0 && ic > ib);
}

Test(tree, remove_held_cgroup_clears_wakeup)
{
	cr_assert_eq(wdelay(C, 1000), 0);
	sample(C, LC + MiB);
	cr_assert_neq(oe_next_wakeup(E), OE_NO_DEADLINE);
	size_t n0 = oe_count(E);
	clr();
	oe_cgroup_remove(E, C, &ACT);
	oe_view v;
	cr_assert_not(oe_view_get(E, C, &v));
	cr_assert_eq(oe_count(E), n0 - 1);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
	advance_ms(5000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(tree, remove_then_readd_starts_fresh)
{
	cr_assert_eq(wdelay(C, 1000), 0);
	oe_cgroup_remove(E, C, &ACT);
	cr_assert_eq(wdelay(B, 0), 0);
	add(C, B, LC, OE_UNLIMITED);
	cr_assert_eq(view(C).delay_ms, 0);
}

/* ---------------------------------------------------------------- more transitions */

Test(rule6, ancestor_write_rearms_held_descendant)
{
	/* the patch: a write retries every pending delay of the subtree */
	cr_assert_eq(wdelay(B, 1000), 0);
	sample(B, LB + MiB);
	int64_t t0 = now_ns;
	cr_assert(view(B).in_hold);
	now_ns = t0 + MS(900);
	cr_assert_eq(wdelay(A, 3000), 0);
	cr_assert_eq(view(B).deadline_ns, now_ns + MS(3000));
	int64_t t1 = now_ns;
	clr();
	now_ns = t0 + MS(1000);
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t1 + MS(3000);
	tick();
	answer_over(B);
	HASV(OE_ACT_KILL_KERNEL, B, LB);
}

Test(rule6, root_write_rearms_every_hold)
{
	cr_assert_eq(wdelay(B, 1000), 0);
	sample(B, LB + MiB);
	cr_assert_eq(wdelay(S, 1000), 0);
	sample(S, LS + MiB);
	clr();
	cr_assert_eq(wdelay(ROOT, 0), 0);
	answer_over(B);
	answer_over(S);
	HASV(OE_ACT_KILL_KERNEL, B, LB);
	HASV(OE_ACT_KILL_KERNEL, S, LS);
}

Test(rule2, onset_with_kernel_oom_notifies_once)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	oe_reading r = {.current = LA - MiB};
	sample_r(A, &r);
	clr();
	r.current = LA + MiB;
	r.ev_max = 3;
	r.ev_oom = 1;
	r.local_oom = 1;
	sample_r(A, &r);
	cr_assert(view(A).in_hold);
	cr_assert_eq(count(OE_ACT_NOTIFY, A), 1, "one onset, one signal; got %s", dump());
	cr_assert_eq(count(OE_ACT_NOTIFY, C), 1, "one onset, one signal; got %s", dump());
}

Test(rule5, lowered_limit_can_start_hold)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	sample(A, 90 * MiB);
	clr();
	cr_assert_eq(wlimit(A, 80 * MiB), 0);
	cr_assert_eq(view(A).limit, 80 * MiB);
	HASV(OE_ACT_SET_MAX, A, 80 * MiB + CEIL);
	cr_assert(view(A).in_hold, "usage 90M over the new L of 80M; got %s", dump());
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule4, disable_in_group_mode_never_kills)
{
	setup_group();
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(100);
	now_ns = t0 + MS(10000);
	tick();
	NONE_OF(OE_ACT_KILL_GROUP);
	NONE_OF(OE_ACT_KILL_KERNEL);
	clr();
	cr_assert_eq(wdis(A, 0), 0);
	answer_over(A);
	HAS(OE_ACT_KILL_GROUP, A);
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

Test(rule11, old_counters_at_start_are_not_an_onset)
{
	add(NEWID, ROOT, 10 * MiB, OE_UNLIMITED);
	clr();
	oe_reading r = {.current = MiB, .ev_oom = 7, .local_oom = 7, .ev_oom_kill = 2, .local_oom_kill = 2};
	sample_r(NEWID, &r);
	NONE_OF(OE_ACT_NOTIFY);
	cr_assert_eq(view(NEWID).oom_kill, 2);
}

Test(rule12, under_oom_is_shown_to_new_and_old_descendants_until_end)
{
	int64_t t0 = hold_A(1000);
	cr_assert(view(B).under_oom);
	cr_assert(view(S).under_oom);
	cr_assert_not(view(P).under_oom);
	cr_assert_not(view(B).in_hold);
	now_ns = t0 + MS(200);
	sample(A, LA - MiB);
	cr_assert_not(view(B).under_oom);
	cr_assert_not(view(S).under_oom);
}

Test(release, held_cgroup_released_without_kill)
{
	hold_A(1000);
	clr();
	oe_release_all(E, &ACT);
	NONE_OF(OE_ACT_KILL_KERNEL);
	LASTV(OE_ACT_SET_MAX, A, LA);
	LASTV(OE_ACT_SET_HIGH, A, OE_UNLIMITED);
	HAS(OE_ACT_FORGET, A);
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

/* ---------------------------------------------------------------- timer-driven (the shell's loop) */

TestSuite(timer, .init = setup_kernel, .fini = teardown);

Test(timer, kill_comes_exactly_at_deadline_when_driven_by_next_wakeup)
{
	int64_t t0 = hold_A(1000);
	int64_t deadline = t0 + MS(1000);
	for (int i = 0; i < 1000; i++) {
		int64_t w = oe_next_wakeup(E);
		cr_assert_neq(w, OE_NO_DEADLINE, "a hold is running: a wakeup is due");
		cr_assert_gt(w, now_ns - 1, "wakeup in the past at step %d", i);
		cr_assert_leq(w, deadline);
		now_ns = w;
		clr();
		tick();
		if (find(OE_ACT_KILL_KERNEL, A) >= 0)
			break;
		cr_assert(now_ns < deadline, "deadline reached without a kill; got %s", dump());
	}
	HASV(OE_ACT_KILL_KERNEL, A, LA);
	cr_assert_eq(now_ns, deadline);
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(timer, disabled_spent_hold_does_not_spin)
{
	cr_assert_eq(wdis(A, 1), 0);
	int64_t t0 = hold_A(100);
	int steps = 0;
	while (now_ns < t0 + MS(2000) && steps < 1000) {
		int64_t w = oe_next_wakeup(E);
		cr_assert_neq(w, OE_NO_DEADLINE);
		if (steps > 0)
			cr_assert_gt(w, now_ns, "next wakeup must move forward (step %d)", steps);
		now_ns = w > now_ns ? w : now_ns + 1;
		clr();
		tick();
		NONE_OF(OE_ACT_KILL_KERNEL);
		steps++;
	}
	cr_assert_lt(steps, 100, "%d wakeups in 2 s: the shell would spin", steps);
	cr_assert(view(A).in_hold);
}
