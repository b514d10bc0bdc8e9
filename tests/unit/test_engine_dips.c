/* test_engine_dips.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * one OOM condition, one hold, whatever usage does for a moment while a task still
 * pushes (rules 2, 3, 4 and 5), and the onset the hold counts from.
 *
 * Issue 19, failure 5, seen under real systemd (Debian 12, 6.12): a hold with
 * T = 1,500 ms ended 10 ms after its onset, T was spent, memory.max went back to L and
 * the kernel killed the still-pushing task at once (OOMD_END=kill-early); a hold with
 * oom_kill_disable 1 ended after 9.9 ms and started again on the same cgroup. Usage had
 * dipped 256 KiB or more under L for one reading (a per-CPU charge stock of 64 pages
 * given back, page cache reclaimed at memory.high, a bystander's exit) while the task
 * that made the OOM went on pushing. Written against docs/SEMANTICS.md with the fake
 * clock and fake shell of harness.h. */
#include "harness.h"

TestSuite(rule5_dip, .init = setup_kernel, .fini = teardown);
TestSuite(rule2_onset, .init = setup_kernel, .fini = teardown);

static oe_reading reading(uint64_t current, uint64_t ev_high)
{
	oe_reading r;
	memset(&r, 0, sizeof r);
	r.current = current;
	r.ev_high = ev_high;
	return r;
}

/* ---- a dip of usage under L while a task still pushes is not a recovery */

Test(rule5_dip, a_deep_dip_for_one_reading_spends_no_delay_and_kills_nothing_early)
{
	int64_t t0 = hold_A(1500);
	/* 10 ms later: 1 MiB under L, no high event since the onset (the task is asleep in
	 * the kernel's penalty, or refilling what was given back) */
	now_ns = t0 + MS(10);
	clr();
	oe_reading r = reading(LA - MiB, 0);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold, "a dip of 1 MiB for one reading ended the hold: %s", dump());
	cr_assert(view(A).under_oom);
	NONE_OF(OE_ACT_SET_MAX);
	NONE_OF(OE_ACT_KILL_KERNEL);
	NOT(OE_ACT_FORGET, A);
	cr_assert_eq(view(A).real_max, LA + CEIL, "the ceiling must stay while the hold lasts");
	/* the task pushes again: the same hold, its deadline unchanged (no high event in
	 * the reading: the fake shell's own readings, below, carry none) */
	now_ns = t0 + MS(20);
	clr();
	r = reading(LA + MiB, 0);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold);
	cr_assert_eq(view(A).deadline_ns, t0 + MS(1500));
	NONE_OF(OE_ACT_NOTIFY);
	NONE_OF(OE_ACT_SET_MAX);
	/* nothing before the deadline, the kill at it */
	now_ns = t0 + MS(1499);
	clr();
	tick();
	answer_over(A);
	NONE_OF(OE_ACT_KILL_KERNEL);
	now_ns = t0 + MS(1500);
	tick();
	answer_over(A);
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule5_dip, the_ceiling_stays_through_many_dips)
{
	int64_t t0 = hold_A(1500);
	uint64_t h = 0;
	for (int i = 1; i < 140; i++) {
		now_ns = t0 + MS(10) * i;
		/* every other reading 512 KiB under L, the others over it with a push */
		oe_reading r = i % 2 ? reading(LA - 512 * KiB, h) : reading(LA + 256 * KiB, ++h);
		clr();
		sample_r(A, &r);
		pump();
		cr_assert(view(A).in_hold, "reading %d (%s) ended the hold: %s", i,
			  i % 2 ? "a dip" : "over L", dump());
		NONE_OF(OE_ACT_SET_MAX);
		NONE_OF(OE_ACT_KILL_KERNEL);
		NONE_OF(OE_ACT_NOTIFY);
	}
}

Test(rule5_dip, disable_one_hold_one_onset_through_a_dip)
{
	cr_assert_eq(wdis(A, 1), 0);
	clr();
	sample(A, LA + MiB);
	cr_assert(view(A).in_hold);
	int notified = count(OE_ACT_NOTIFY, A);
	cr_assert_eq(notified, 1);
	int64_t t0 = now_ns;
	now_ns = t0 + MS(10);
	clr();
	oe_reading r = reading(LA - MiB, 0);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold, "oom_kill_disable 1: a 10 ms dip ended the hold: %s", dump());
	now_ns = t0 + MS(20);
	clr();
	r = reading(LA + MiB, 1);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold);
	NONE_OF(OE_ACT_NOTIFY); /* no second onset: the listeners heard this one once */
	cr_assert_eq(view(A).hold_onset_ns, t0, "the same hold, from the same onset");
}

Test(rule5_dip, a_dip_that_stays_quiet_ends_the_hold)
{
	/* Usage given back for good (a task freed memory or exited, the others stay under
	 * L): the hold ends once no penalty sleep can hide a push. */
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(10);
	oe_reading r = reading(LA - 4 * MiB, 0);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold);
	now_ns = t0 + MS(1000);
	sample_r(A, &r);
	pump();
	cr_assert(view(A).in_hold, "quiet for 1 s under L: a penalty sleep can hide a push that long");
	now_ns = t0 + MS(2200);
	clr();
	sample_r(A, &r);
	pump();
	cr_assert_not(view(A).in_hold, "quiet under L for 2.19 s, the hold goes on: %s", dump());
	cr_assert_not(view(A).under_oom);
	NONE_OF(OE_ACT_KILL_KERNEL);
	LASTV(OE_ACT_SET_MAX, A, LA); /* T was spent, D = 0: back to the kernel */
}

Test(rule5_dip, a_deadline_that_passes_in_a_dip_kills_at_the_next_push)
{
	int64_t t0 = hold_A(100);
	now_ns = t0 + MS(50);
	oe_reading r = reading(LA - MiB, 0);
	sample_r(A, &r);
	pump();
	/* the deadline passes under L: nothing to kill at this instant */
	now_ns = t0 + MS(100);
	clr();
	world_cur[A] = LA - MiB;
	tick();
	NONE_OF(OE_ACT_KILL_KERNEL);
	cr_assert(view(A).in_hold);
	/* the task pushes again: the wait is over, the kill is due */
	now_ns = t0 + MS(150);
	clr();
	r = reading(LA + MiB, 1);
	sample_r(A, &r);
	pump();
	HASV(OE_ACT_KILL_KERNEL, A, LA);
}

Test(rule5_dip, a_raise_above_the_usage_still_ends_the_hold_at_once)
{
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(10);
	clr();
	world_cur[A] = LA + MiB;
	cr_assert_eq(wlimit(A, 2 * LA), 0);
	clr();
	sample(A, LA + MiB);
	cr_assert_not(view(A).in_hold, "L raised 99 MiB above the usage: %s", dump());
	NONE_OF(OE_ACT_KILL_KERNEL);
}

Test(rule5_dip, a_raise_by_less_than_a_dip_waits_for_quiet)
{
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(10);
	world_cur[A] = LA;
	cr_assert_eq(wlimit(A, LA + 64 * KiB), 0);
	cr_assert(view(A).in_hold, "64 KiB more than the usage: the task fills it at once");
}

Test(rule5_dip, every_task_gone_still_ends_the_hold_at_once)
{
	int64_t t0 = hold_A(60000);
	now_ns = t0 + MS(10);
	oe_reading r = reading(LA - MiB, 0);
	r.no_tasks = true;
	sample_r(A, &r);
	pump();
	cr_assert_not(view(A).in_hold);
}

/* ---- the onset a hold counts from (the audit's figures, issue 19) */

Test(rule2_onset, the_view_names_the_onset_the_deadline_counts_from)
{
	cr_assert_eq(wdelay(A, 1500), 0);
	cr_assert_eq(view(A).hold_onset_ns, 0, "no hold, no onset");
	now_ns += MS(7);
	int64_t t0 = now_ns;
	sample(A, LA + MiB);
	oe_view v = view(A);
	cr_assert(v.in_hold);
	cr_assert_eq(v.hold_onset_ns, t0);
	cr_assert_eq(v.deadline_ns - v.hold_onset_ns, MS(1500));
	/* a re-arm moves the deadline, not the onset */
	now_ns = t0 + MS(300);
	cr_assert_eq(wdelay(A, 5000), 0);
	cr_assert_eq(view(A).hold_onset_ns, t0);
	cr_assert_eq(view(A).deadline_ns, t0 + MS(300) + MS(5000));
	/* readings during the hold do not move it either */
	now_ns = t0 + MS(400);
	sample(A, LA + 2 * MiB);
	cr_assert_eq(view(A).hold_onset_ns, t0);
	/* gone with the hold */
	now_ns = t0 + MS(500);
	oe_reading r = reading(LA + MiB, 0);
	r.no_tasks = true;
	sample_r(A, &r);
	pump();
	cr_assert_not(view(A).in_hold);
	cr_assert_eq(view(A).hold_onset_ns, 0);
}

Test(rule2_onset, a_descendant_under_oom_shows_no_onset_of_its_own)
{
	cr_assert_eq(wdelay(A, 1500), 0);
	sample(A, LA + MiB);
	cr_assert(view(C).under_oom);
	cr_assert_eq(view(C).hold_onset_ns, 0, "C is under OOM through A; the hold is A's");
}
