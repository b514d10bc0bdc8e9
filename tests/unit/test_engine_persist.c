/* test_engine_persist.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * persisted state: a restart resumes or finishes holds, adoption never
 * loosens the real tree, raises and freezes wait for their state to be stored.
 *
 * Written against docs/SEMANTICS.md, not core/: each test drives the engine with the
 * fake clock and fake shell of harness.h and checks the actions it asks for. A rule's
 * tests are the criterion suite rule<n> (or rule<n>_<variant>); unit-rules checks that
 * every rule has one. */
#include "harness.h"

TestSuite(persist, .init = setup_kernel, .fini = teardown);

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

/* Adoption never loosens the real tree as found (issue 10): whatever the state says,
 * real memory.max ends no higher than it was, plus the ceiling of a managed L that
 * the real tree allowed. */
static uint64_t last_max_or(uint64_t id, uint64_t dflt)
{
	uint64_t v = dflt;
	lastv(OE_ACT_SET_MAX, id, &v);
	return v;
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

static const oe_action *last_of(oe_action_kind kind, uint64_t id)
{
	const oe_action *a = NULL;
	for (size_t i = 0; i < ACT.n; i++)
		if (ACT.v[i].kind == kind && ACT.v[i].id == id)
			a = &ACT.v[i];
	return a;
}

/* --------- persisted state: restart, adoption, guarded actions */

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
	recover(NEWID, 5 * MiB);
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
