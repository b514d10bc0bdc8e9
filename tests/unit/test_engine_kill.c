/* test_engine_kill.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * rules 1, 2 and 3: native cgroups, the onset of a hold and the kill after
 * the delay (both kill modes), and the deadline driven by the shell's timer.
 *
 * Written against docs/SEMANTICS.md, not core/: each test drives the engine with the
 * fake clock and fake shell of harness.h and checks the actions it asks for. A rule's
 * tests are the criterion suite rule<n> (or rule<n>_<variant>); unit-rules checks that
 * every rule has one. */
#include "harness.h"

TestSuite(rule1, .init = setup_kernel, .fini = teardown);
TestSuite(rule2, .init = setup_kernel, .fini = teardown);
TestSuite(rule3, .init = setup_kernel, .fini = teardown);
TestSuite(rule3_group, .init = setup_group, .fini = teardown);
TestSuite(timer, .init = setup_kernel, .fini = teardown);


/* ------------------------ rule 1: no delay, no disable: native */

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

/* -------------- rule 2: delay: the onset of a hold, T consumed */

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

/* The audit's "usage at the onset" is the view's, taken right after it: the reading the
 * onset was seen in, not one made after a task left (o-audit, 7). */
Test(rule2, the_view_says_the_usage_the_onset_was_seen_at)
{
	cr_assert_eq(view(A).usage, 0, "no reading yet");
	hold_A(1000);
	cr_assert_eq(view(A).usage, LA + 1 * MiB);
	advance_ms(100);
	sample(A, LA - 8 * MiB);
	cr_assert_eq(view(A).usage, LA - 8 * MiB, "the view follows the readings");
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

/* ------------- rule 3: after the delay, the kill (kernel mode) */

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

/* -------------------------- rule 3 in group mode (cgroup.kill) */

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

/* ----------- timer-driven (the shell's loop on oe_next_wakeup) */

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
