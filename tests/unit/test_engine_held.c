/* test_engine_held.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * rules 4, 8, 5 and 6: disable and its precedence over the delay, recovery
 * without a kill, and re-arm during a hold.
 *
 * Written against docs/SEMANTICS.md, not core/: each test drives the engine with the
 * fake clock and fake shell of harness.h and checks the actions it asks for. A rule's
 * tests are the criterion suite rule<n> (or rule<n>_<variant>); unit-rules checks that
 * every rule has one. */
#include "harness.h"

TestSuite(rule4, .init = setup_kernel, .fini = teardown);
TestSuite(rule8, .init = setup_kernel, .fini = teardown);
TestSuite(rule5, .init = setup_kernel, .fini = teardown);
TestSuite(rule6, .init = setup_kernel, .fini = teardown);

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

/* ---- rule 4: disable: held for as long as the condition lasts */

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

/* ----------------------- rule 8: precedence: D = 1 wins over T */

Test(rule8, disable_wins_over_delay)
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

Test(rule8, disable_in_group_mode_never_kills)
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

/* ----------------------------- rule 5: recovery without a kill */

Test(rule5, usage_back_under_L_ends_hold)
{
	int64_t t0 = hold_A(1000);
	now_ns = t0 + MS(300);
	clr();
	recover(A, LA - MiB);
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
	recover(A, LA - MiB);
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
	recover(A, LA - MiB);
	advance_ms(100);
	clr();
	sample(A, LA + MiB);
	cr_assert_not(view(A).in_hold, "T was consumed by the first onset");
	NONE_OF(OE_ACT_NOTIFY);
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

/* -------------------------------- rule 6: re-arm during a hold */

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
