/* The engine's per-call action counts that size the controller's resident action
 * buffer (daemon/ctl_table.c): a call that may not allocate (a tick, a sample, a
 * knob write on one cgroup) emits at most 2 actions per cgroup plus a few; only a
 * delay write (a subtree) and the hand-back emit more, at most 8 per cgroup of what
 * they reach (the wide buffer). Worst cases over a two-level tree: every cgroup
 * managed, every one held at once, frozen, its deadline passed. */
#include <criterion/criterion.h>
#include "oomd/engine.h"

#define MiB ((uint64_t)1 << 20)
#define MS(x) ((int64_t)(x) * 1000000LL)
#define K 100                /* children of P, each with one child */
#define SUB (1 + 2 * K)      /* P's subtree */
#define ALL (1 + SUB)        /* with the root */
#define L (16 * MiB)
#define RESIDENT(n) (2 * (n) + 64)
#define WIDE(n) (8 * (n) + 64)

enum { ROOT = 1, P = 2 };
static oe_engine *e;
static oe_action store[WIDE(ALL) * 4];
static oe_actions out;
static int64_t now = MS(1000);

static size_t took(void)
{
	cr_assert_not(out.overflow, "the test's own buffer overflowed");
	size_t n = out.n;
	oe_actions_clear(&out);
	return n;
}

static uint64_t child(int i) { return 100 + (uint64_t)i; }
static uint64_t grandchild(int i) { return 1000 + (uint64_t)i; }

static void setup(void)
{
	oe_config cfg;
	oe_config_defaults(&cfg);
	e = oe_new(&cfg);
	oe_actions_init(&out, store, sizeof store / sizeof store[0]);
	oe_root(e, ROOT);
	cr_assert(oe_cgroup_add(e, now, P, ROOT, OE_UNLIMITED, OE_UNLIMITED, NULL, &out));
	for (int i = 0; i < K; i++) {
		cr_assert(oe_cgroup_add(e, now, child(i), P, L, OE_UNLIMITED, NULL, &out));
		cr_assert(oe_cgroup_add(e, now, grandchild(i), child(i), L, OE_UNLIMITED, NULL, &out));
	}
	cr_assert_eq(oe_write_limit(e, now, P, L, &out), 0);
	(void)took();
}

static void teardown(void)
{
	oe_free(e);
}

TestSuite(bounds, .init = setup, .fini = teardown);

/* usage over L and over the freeze margin: an onset, and a freeze with it */
static oe_reading over(void)
{
	return (oe_reading){ .current = L + 512 * MiB, .ev_high = 1, .ev_max = 1 };
}

static void hold_everything(void)
{
	cr_assert_eq(oe_write_delay(e, now, P, 500, &out), 0);
	(void)took();
	oe_reading r = over();
	oe_sample(e, now, P, &r, &out);
	cr_assert_leq(took(), RESIDENT(SUB), "the onset on P");
	for (int i = 0; i < K; i++) {
		oe_sample(e, now, child(i), &r, &out);
		cr_assert_leq(took(), RESIDENT(2), "an onset on a child");
		oe_sample(e, now, grandchild(i), &r, &out);
		cr_assert_leq(took(), RESIDENT(1), "an onset on a leaf");
	}
}

Test(bounds, delay_write_on_a_subtree_fits_the_wide_buffer)
{
	cr_assert_eq(oe_write_delay(e, now, P, 5000, &out), 0);
	size_t n = took();
	cr_assert_geq(n, (size_t)SUB, "every cgroup of the subtree got its knobs (%zu actions)", n);
	cr_assert_leq(n, WIDE(SUB));
	cr_assert_eq(oe_write_delay(e, now, P, 0, &out), 0);
	cr_assert_leq(took(), WIDE(SUB));
}

Test(bounds, onsets_ticks_and_kills_fit_the_resident_buffer)
{
	hold_everything();
	oe_view v;
	cr_assert(oe_view_get(e, grandchild(K - 1), &v) && v.in_hold);
	now += MS(600); /* every deadline passed */
	oe_tick(e, now, &out);
	size_t n = took();
	cr_assert_geq(n, (size_t)SUB, "a SAMPLE for every held cgroup (%zu actions)", n);
	cr_assert_leq(n, RESIDENT(ALL));
	/* the kills' samples: each decides on its own reading */
	oe_reading r = over();
	r.ev_oom = 1;
	oe_sample(e, now, P, &r, &out);
	cr_assert_leq(took(), RESIDENT(SUB));
	for (int i = 0; i < K; i++) {
		oe_sample(e, now, child(i), &r, &out);
		cr_assert_leq(took(), RESIDENT(2));
	}
	/* back under L everywhere: the holds end, the subtree's under_oom moves */
	oe_reading calm = { .current = 0, .ev_high = 2, .ev_max = 2, .ev_oom = 1 };
	now += MS(5000);
	oe_sample(e, now, P, &calm, &out);
	cr_assert_leq(took(), RESIDENT(SUB));
}

Test(bounds, knob_writes_on_one_cgroup_fit_the_resident_buffer)
{
	hold_everything();
	cr_assert_eq(oe_write_limit(e, now, P, 2 * L, &out), 0);
	cr_assert_leq(took(), RESIDENT(1));
	cr_assert_eq(oe_write_disable(e, now, P, 1, &out), 0);
	cr_assert_leq(took(), RESIDENT(1));
	cr_assert_eq(oe_write_high(e, now, P, L / 2, &out), 0);
	cr_assert_leq(took(), RESIDENT(1));
	oe_real_max_seen(e, now, child(0), 3 * L, &out);
	cr_assert_leq(took(), RESIDENT(1));
}

Test(bounds, hand_back_of_held_frozen_cgroups_fits_the_wide_buffer)
{
	hold_everything();
	oe_release_all(e, &out);
	size_t n = took();
	cr_assert_geq(n, (size_t)SUB, "every managed cgroup handed back (%zu actions)", n);
	cr_assert_leq(n, WIDE(ALL));
}
