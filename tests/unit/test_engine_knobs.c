/* test_engine_knobs.c — unit tests of the pure rules engine (include/oomd/engine.h):
 * the knobs the daemon keeps for a cgroup, bad input, foreign writes to the
 * real memory.max, the hand-back and the tree.
 *
 * Written against docs/SEMANTICS.md, not core/: each test drives the engine with the
 * fake clock and fake shell of harness.h and checks the actions it asks for. A rule's
 * tests are the criterion suite rule<n> (or rule<n>_<variant>); unit-rules checks that
 * every rule has one. */
#include "harness.h"

TestSuite(managed, .init = setup_kernel, .fini = teardown);
TestSuite(invalid, .init = setup_kernel, .fini = teardown);
TestSuite(realmax, .init = setup_kernel, .fini = teardown);
TestSuite(release, .init = setup_kernel, .fini = teardown);
TestSuite(tree, .init = setup_kernel, .fini = teardown);

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

/* ---- managed knobs: what the real memory.high and memory.max become */

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

/* ------- invalid input: the errno v1 gave, and nothing changed */

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

/* ---- direct writes to the real memory.max (and the echoes of our own) */

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

Test(realmax, own_write_landing_after_a_foreign_one_is_not_L)
{
	cr_assert_eq(wdelay(A, 1000), 0);
	cr_assert_eq(wlimit(A, 80 * MiB), 0); /* max = 80M + CEIL, carried out later */
	clr();
	seen_max(A, 70 * MiB); /* a user's write, read before ours landed */
	cr_assert_eq(view(A).limit, 70 * MiB);
	clr();
	seen_max(A, 80 * MiB + CEIL); /* ours, landed after it */
	cr_assert_eq(view(A).limit, 70 * MiB, "our own late write became L");
	LASTV(OE_ACT_SET_MAX, A, 70 * MiB + CEIL); /* the kernel has ours: the repair */
	/* and a real change after it still counts */
	seen_max(A, 90 * MiB);
	cr_assert_eq(view(A).limit, 90 * MiB);
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

/* ---------- hand-back: every managed cgroup back to the kernel */

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

/* -------------------------------------------- tree bookkeeping */

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

/* The engine counts its holds to skip the walk for the next wake-up when there is none:
 * a held cgroup removed with its parent leaves the count, another's hold still wakes, and
 * once that one ends nothing is due. */
Test(tree, removing_a_held_subtree_keeps_the_other_holds_wake_up)
{
	cr_assert_eq(wdelay(C, 1000), 0);
	cr_assert_eq(wdelay(S, 3000), 0);
	int64_t t0 = now_ns;
	sample(C, LC + MiB);
	sample(S, LS + MiB);
	cr_assert_eq(oe_next_wakeup(E), t0 + SAMPLE_NS, "the samples of both holds are due first");
	clr();
	oe_cgroup_remove(E, B, &ACT); /* C with it */
	oe_view v;
	cr_assert_not(oe_view_get(E, C, &v));
	cr_assert(view(S).in_hold);
	cr_assert_neq(oe_next_wakeup(E), OE_NO_DEADLINE, "S is still held");
	clr();
	recover(S, LS - MiB); /* back under its limit: the hold ends (rule 5) */
	cr_assert_not(view(S).in_hold, "%s", dump());
	cr_assert_eq(oe_next_wakeup(E), OE_NO_DEADLINE);
}

Test(tree, remove_then_readd_starts_fresh)
{
	cr_assert_eq(wdelay(C, 1000), 0);
	oe_cgroup_remove(E, C, &ACT);
	cr_assert_eq(wdelay(B, 0), 0);
	add(C, B, LC, OE_UNLIMITED);
	cr_assert_eq(view(C).delay_ms, 0);
}
