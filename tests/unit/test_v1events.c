/* Unit tests of v1's usage thresholds and pressure levels (include/oomd/v1events.h),
 * written against 6.1's mm/memcontrol.c (__mem_cgroup_threshold,
 * mem_cgroup_usage_register_event) and mm/vmpressure.c (vmpressure_register_event,
 * vmpressure_event, vmpressure_work_fn). Times are a fake clock in ns. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <glib.h>

#include "oomd/v1events.h"

#define MiB (UINT64_C(1) << 20)
#define MS(x) ((int64_t)(x) * 1000000LL)

static uint64_t *got;
static size_t ngot;

static void reset(void)
{
	g_free(got);
	got = NULL;
	ngot = 0;
}

static bool heard(uint64_t key)
{
	for (size_t i = 0; i < ngot; i++)
		if (got[i] == key)
			return true;
	return false;
}

Test(thresholds, crossing_up_and_down_signals_once_each)
{
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 16 * MiB, 4 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 0, "a new threshold is not signalled at registration");
	od_thr_check(t, 8 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 0);
	od_thr_check(t, 16 * MiB, &got, &ngot); /* threshold <= usage: crossed upwards */
	cr_assert_eq(ngot, 1);
	cr_assert(heard(1));
	od_thr_check(t, 20 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 1, "no second signal while above");
	od_thr_check(t, 16 * MiB - 4096, &got, &ngot); /* threshold > usage: crossed downwards */
	cr_assert_eq(ngot, 2);
	od_thr_check(t, 1 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 2);
	od_thr_free(t);
	reset();
}

/* A rise to the limit and the OOM kill that ends it, both between two samples: the
 * samples read 4 MiB and 2 MiB, memory.peak 4 MiB then 32 MiB. v1 heard 16M go up and down. */
Test(thresholds, an_excursion_between_samples_is_heard_from_memory_peak)
{
	od_thresholds *t = od_thr_new();
	od_thr_peak pk = { 0 };
	reset();
	od_thr_add(t, 1, 16 * MiB, 4 * MiB, &got, &ngot);
	od_thr_add(t, 2, 64 * MiB, 4 * MiB, &got, &ngot);
	cr_assert_eq(od_thr_peak_apex(&pk, 4 * MiB), 0, "the first reading only records");
	od_thr_check_apex(t, 0, 4 * MiB, 0, &got, &ngot);
	cr_assert_eq(ngot, 0);
	uint64_t apex = od_thr_peak_apex(&pk, 32 * MiB);
	cr_assert_eq(apex, 32 * MiB);
	od_thr_check_apex(t, apex, 2 * MiB, 0, &got, &ngot);
	cr_assert_eq(ngot, 2, "16M crossed up and back down: %zu signals", ngot);
	cr_assert(got[0] == 1 && got[1] == 1);
	cr_assert(!heard(2), "64M was never reached");
	/* the same peak again proves nothing new: nothing heard, the position unchanged */
	cr_assert_eq(od_thr_peak_apex(&pk, 32 * MiB), 0);
	od_thr_check_apex(t, 0, 2 * MiB, 0, &got, &ngot);
	cr_assert_eq(ngot, 2);
	/* a lower reading (6.12: a descriptor's reset) is not a rise either */
	cr_assert_eq(od_thr_peak_apex(&pk, 8 * MiB), 0);
	/* an apex the usage is still at: one upward signal, none downward */
	apex = od_thr_peak_apex(&pk, 40 * MiB);
	od_thr_check_apex(t, apex, 40 * MiB, 0, &got, &ngot);
	cr_assert_eq(ngot, 3);
	od_thr_free(t);
	reset();
}

/* A reading just after a rise across 8M, the stock given back by the sample's own read in
 * between: memory.peak proves 8M + 4 KiB, the usage reads 200 KiB under 8M. One signal up,
 * none down; the same reading with no rise behind it (stable) is heard as v1 would, and so is a
 * fall from a peak by more than the stock. */
Test(thresholds, the_stock_a_sample_drains_is_not_a_fall)
{
	const uint64_t slack = OD_THR_STOCK_PAGES * 4096;
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 8 * MiB, 1 * MiB, &got, &ngot);
	od_thr_check_apex(t, 8 * MiB + 4096, 8 * MiB - 200 * 1024, slack, &got, &ngot);
	cr_assert_eq(ngot, 1, "one crossing up, no false one down: %zu signals", ngot);
	od_thr_check_apex(t, 0, 8 * MiB + 100 * 1024, slack, &got, &ngot);
	cr_assert_eq(ngot, 1, "still above: nothing more");
	od_thr_check_apex(t, 0, 8 * MiB - 4096, slack, &got, &ngot);
	cr_assert_eq(ngot, 2, "a page under it with no rise behind the reading: crossed down");
	od_thr_check_apex(t, 8 * MiB + 4096, 8 * MiB - 4096, slack, &got, &ngot);
	cr_assert_eq(ngot, 3, "up to the peak: crossed up; a page under it again is within the stock");
	od_thr_check_apex(t, 8 * MiB + slack + 8192, 8 * MiB - 4096, slack, &got, &ngot);
	cr_assert_eq(ngot, 4, "from a peak more than the stock above: a fall, crossed down");
	od_thr_free(t);
	reset();
}

Test(thresholds, one_jump_crosses_every_threshold_between)
{
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 10, 10 * MiB, 0, &got, &ngot);
	od_thr_add(t, 30, 30 * MiB, 0, &got, &ngot);
	od_thr_add(t, 20, 20 * MiB, 0, &got, &ngot);
	od_thr_add(t, 21, 20 * MiB, 0, &got, &ngot); /* equal thresholds: both signalled */
	od_thr_check(t, 25 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 3);
	cr_assert(heard(10) && heard(20) && heard(21) && !heard(30));
	reset();
	od_thr_check(t, 5 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 3, "down past 20, 20 and 10");
	cr_assert(heard(10) && heard(20) && heard(21));
	reset();
	od_thr_check(t, 40 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 4);
	od_thr_free(t);
	reset();
}

Test(thresholds, registration_checks_the_existing_ones_first)
{
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 8 * MiB, 0, &got, &ngot);
	/* usage went to 12 MiB since the last check: the second registration signals key 1 */
	od_thr_add(t, 2, 4 * MiB, 12 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 1);
	cr_assert(heard(1));
	reset();
	/* key 2 joined with current counted at 12 MiB: staying there signals nothing */
	od_thr_check(t, 12 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 0);
	od_thr_check(t, 2 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 2);
	od_thr_free(t);
	reset();
}

Test(thresholds, removal_keeps_the_others_in_place)
{
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 4 * MiB, 10 * MiB, &got, &ngot);
	od_thr_add(t, 2, 8 * MiB, 10 * MiB, &got, &ngot);
	od_thr_add(t, 3, 16 * MiB, 10 * MiB, &got, &ngot);
	cr_assert(od_thr_remove(t, 1));
	cr_assert_not(od_thr_remove(t, 1));
	cr_assert_eq(od_thr_count(t), 2);
	od_thr_check(t, 10 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 0, "unchanged usage after a removal signals nothing");
	od_thr_check(t, 6 * MiB, &got, &ngot);
	cr_assert_eq(ngot, 1);
	cr_assert(heard(2));
	od_thr_free(t);
	reset();
}

Test(thresholds, zero_and_unlimited)
{
	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 0, 0, &got, &ngot); /* 0 <= any usage: at or above from the start */
	od_thr_add(t, 2, UINT64_MAX, 0, &got, &ngot);
	od_thr_check(t, 1ull << 50, &got, &ngot);
	cr_assert_eq(ngot, 0, "0 is never crossed, unlimited never reached");
	od_thr_free(t);
	reset();
}

Test(thresholds, sampler_sleeps_with_nothing_registered)
{
	cr_assert_eq(od_thr_next_sample(0, MS(5), MS(1000), false), -1);
	cr_assert_eq(od_thr_next_sample(0, MS(5), MS(1000), true), -1, "an event without thresholds: nothing");
	cr_assert_eq(od_thr_next_sample(1, MS(1000), MS(1000), false), MS(1000 + OD_THR_PERIOD_MS));
	cr_assert_eq(od_thr_next_sample(1, MS(0), MS(1000), false), MS(1000), "late: at once");
	cr_assert_eq(od_thr_next_sample(1, MS(1000), MS(1001), true), MS(1000 + OD_THR_EVENT_GAP_MS),
		     "a limit event: the gap after the last, not the period");
	cr_assert_eq(od_thr_next_sample(1, MS(1000), MS(1050), true), MS(1050), "gap passed: at once");
}

/* f-levels-restart on 6.12: a 48 MiB hog under a 32 MiB limit was OOM-killed before the
 * sample that memory.events brought forward read the usage (2 MiB by then); the 16M
 * threshold heard nothing where v1 signalled the crossing up and the one down. The limit
 * events since the last sample say the usage stood at memory.max: checked against that
 * floor first, then the usage read, both crossings are signalled, in v1's order. */
Test(thresholds, a_limit_event_between_samples_is_a_crossing_up_and_down)
{
	const uint64_t old[OD_VMP_NEVENTS] = { 3, 0, 1, 1 };
	const uint64_t oom[OD_VMP_NEVENTS] = { 9, 0, 2, 2 };     /* max, high, oom, oom_kill */
	const uint64_t maxonly[OD_VMP_NEVENTS] = { 4, 0, 1, 1 }; /* reclaim at the limit sufficed */
	const uint64_t killonly[OD_VMP_NEVENTS] = { 3, 0, 1, 2 }; /* a victim here of another limit's OOM */
	const uint64_t high[OD_VMP_NEVENTS] = { 3, 5, 1, 1 };
	cr_assert_eq(od_thr_event_floor(old, oom, 32 * MiB, UINT64_MAX), 32 * MiB);
	cr_assert_eq(od_thr_event_floor(old, maxonly, 32 * MiB, UINT64_MAX), 32 * MiB);
	cr_assert_eq(od_thr_event_floor(old, old, 32 * MiB, 8 * MiB), 0, "no event: nothing known");
	cr_assert_eq(od_thr_event_floor(old, killonly, 32 * MiB, UINT64_MAX), 0,
		     "oom_kill counts in the victim's cgroup: it says nothing of this one's usage");
	cr_assert_eq(od_thr_event_floor(old, high, 32 * MiB, 8 * MiB), 8 * MiB, "over memory.high");
	cr_assert_eq(od_thr_event_floor(old, high, 32 * MiB, UINT64_MAX), 0);
	cr_assert_eq(od_thr_event_floor(old, oom, UINT64_MAX, UINT64_MAX), 0);
	cr_assert_eq(od_thr_event_floor(old, oom, 96 * MiB, 32 * MiB), 32 * MiB,
		     "a managed cgroup killed at L = 32M, its ceiling (96M) back in memory.max: L, never the ceiling");
	cr_assert_eq(od_thr_event_floor(old, high, 32 * MiB, 8 * MiB), 8 * MiB);

	od_thresholds *t = od_thr_new();
	reset();
	od_thr_add(t, 1, 16 * MiB, 1 * MiB, &got, &ngot);
	od_thr_add(t, 2, 40 * MiB, 1 * MiB, &got, &ngot);
	uint64_t floor = od_thr_event_floor(old, oom, 32 * MiB, UINT64_MAX), usage = 2 * MiB;
	od_thr_check(t, floor, &got, &ngot);
	od_thr_check(t, usage, &got, &ngot);
	cr_assert_eq(ngot, 2, "16M up and down, 40M (above the limit) never");
	cr_assert(got[0] == 1 && got[1] == 1);
	reset();
	od_thr_check(t, usage, &got, &ngot);
	cr_assert_eq(ngot, 0, "the next sample: nothing new");
	od_thr_free(t);
	reset();
}

static int parse(const char *s, od_vmp_level *l, od_vmp_mode *m)
{
	return od_vmp_parse(s, strlen(s), l, m);
}

Test(vmpressure, parse_as_vmpressure_register_event)
{
	od_vmp_level l;
	od_vmp_mode m;
	cr_assert_eq(parse("low", &l, &m), 0);
	cr_assert_eq(l, OD_VMP_LOW);
	cr_assert_eq(m, OD_VMP_DEFAULT);
	cr_assert_eq(parse("medium,hierarchy", &l, &m), 0);
	cr_assert(l == OD_VMP_MEDIUM && m == OD_VMP_HIERARCHY);
	cr_assert_eq(parse("critical,local", &l, &m), 0);
	cr_assert(l == OD_VMP_CRITICAL && m == OD_VMP_LOCAL);
	cr_assert_eq(parse("critical,default", &l, &m), 0);
	/* a third token is never looked at */
	cr_assert_eq(parse("low,local,junk", &l, &m), 0);
	cr_assert_eq(m, OD_VMP_LOCAL);
	cr_assert_eq(parse("critical,hierarchy,", &l, &m), 0);
	/* 19 bytes are looked at: the 20th cannot spoil a valid prefix */
	cr_assert_eq(parse("critical,hierarchy,xxxxxxxxxx", &l, &m), 0);
	cr_assert_eq(parse("critical,hierarchyx", &l, &m), EINVAL);
	cr_assert_eq(parse("", &l, &m), EINVAL);
	cr_assert_eq(parse("Low", &l, &m), EINVAL);
	cr_assert_eq(parse("low,", &l, &m), EINVAL, "an empty mode is no mode");
	cr_assert_eq(parse("low ", &l, &m), EINVAL);
	cr_assert_eq(parse(" low", &l, &m), EINVAL);
	cr_assert_eq(parse("high", &l, &m), EINVAL);
	cr_assert_eq(parse("low,tree", &l, &m), EINVAL);
	cr_assert_eq(od_vmp_parse("low\0junk", 8, &l, &m), 0, "stops at a NUL");
}

/* vmpressure_work_fn over a chain origin -> root: which listeners hear. */
typedef struct {
	od_vmp_level want;
	od_vmp_mode mode;
	unsigned up;
	bool heard;
} lst;

static void walk(lst *ls, size_t n, unsigned depth, od_vmp_level lev)
{
	bool signalled = false;
	for (unsigned up = 0; up < depth; up++) {
		bool any = false;
		for (size_t i = 0; i < n; i++)
			if (ls[i].up == up && od_vmp_hears(ls[i].want, ls[i].mode, up, lev, signalled))
				ls[i].heard = any = true;
		signalled |= any;
	}
}

Test(vmpressure, levels_reach_listeners_of_that_level_and_lower)
{
	lst ls[] = { { OD_VMP_LOW, OD_VMP_DEFAULT, 0, false },
		     { OD_VMP_MEDIUM, OD_VMP_DEFAULT, 0, false },
		     { OD_VMP_CRITICAL, OD_VMP_DEFAULT, 0, false } };
	walk(ls, 3, 1, OD_VMP_MEDIUM);
	cr_assert(ls[0].heard && ls[1].heard && !ls[2].heard);
}

Test(vmpressure, modes_along_the_hierarchy)
{
	/* the origin has a default listener; parent: default, hierarchy, local */
	lst ls[] = { { OD_VMP_LOW, OD_VMP_DEFAULT, 0, false },
		     { OD_VMP_LOW, OD_VMP_DEFAULT, 1, false },
		     { OD_VMP_LOW, OD_VMP_HIERARCHY, 1, false },
		     { OD_VMP_LOW, OD_VMP_LOCAL, 1, false } };
	walk(ls, 4, 2, OD_VMP_LOW);
	cr_assert(ls[0].heard);
	cr_assert_not(ls[1].heard, "default: heard below, does not pass through");
	cr_assert(ls[2].heard, "hierarchy: always");
	cr_assert_not(ls[3].heard, "local: only its own cgroup's events");

	/* nobody at the origin: the parent's default listener hears it */
	lst p[] = { { OD_VMP_LOW, OD_VMP_DEFAULT, 1, false }, { OD_VMP_LOW, OD_VMP_LOCAL, 1, false } };
	walk(p, 2, 2, OD_VMP_CRITICAL);
	cr_assert(p[0].heard);
	cr_assert_not(p[1].heard);

	/* a critical listener at the origin does not hear a low event, so the parent's default does */
	lst q[] = { { OD_VMP_CRITICAL, OD_VMP_DEFAULT, 0, false }, { OD_VMP_LOW, OD_VMP_DEFAULT, 1, false } };
	walk(q, 2, 2, OD_VMP_LOW);
	cr_assert(!q[0].heard && q[1].heard);

	/* a hierarchy listener below counts as "signalled" for the default ones above */
	lst h[] = { { OD_VMP_LOW, OD_VMP_HIERARCHY, 0, false }, { OD_VMP_LOW, OD_VMP_DEFAULT, 2, false } };
	walk(h, 2, 3, OD_VMP_LOW);
	cr_assert(h[0].heard && !h[1].heard);
}

Test(vmpressure, psi_triggers_of_the_mapping)
{
	char b[64];
	od_vmp_psi_trigger(OD_VMP_LOW, b, sizeof b);
	cr_assert_str_eq(b, "some 10000 1000000");
	od_vmp_psi_trigger(OD_VMP_MEDIUM, b, sizeof b);
	cr_assert_str_eq(b, "some 100000 1000000");
	od_vmp_psi_trigger(OD_VMP_CRITICAL, b, sizeof b);
	cr_assert_str_eq(b, "full 500000 1000000");
	cr_assert_eq(od_vmp_psi_trigger(OD_VMP_NLEVELS, b, sizeof b), 0);
}

Test(vmpressure, recent_book_is_below_and_within_the_window)
{
	od_vmp_recent *r = od_vmp_recent_new();
	od_vmp_recent_note(r, "a/b", OD_VMP_MEDIUM, MS(1000));
	cr_assert(od_vmp_recent_below(r, "a", OD_VMP_LOW, MS(1500)));
	cr_assert(od_vmp_recent_below(r, "a", OD_VMP_MEDIUM, MS(1500)));
	cr_assert(od_vmp_recent_below(r, "", OD_VMP_MEDIUM, MS(1500)), "the root is above all");
	cr_assert_not(od_vmp_recent_below(r, "a", OD_VMP_CRITICAL, MS(1500)), "a lower level heard");
	cr_assert_not(od_vmp_recent_below(r, "a/b", OD_VMP_LOW, MS(1500)), "strict descendants only");
	cr_assert_not(od_vmp_recent_below(r, "a/bc", OD_VMP_LOW, MS(1500)));
	cr_assert_not(od_vmp_recent_below(r, "x", OD_VMP_LOW, MS(1500)));
	cr_assert_not(od_vmp_recent_below(r, "a", OD_VMP_LOW, MS(1000) + OD_VMP_WINDOW_NS + 1),
		      "older than one window");
	/* stale entries go when another is noted */
	od_vmp_recent_note(r, "c", OD_VMP_LOW, MS(5000));
	cr_assert_not(od_vmp_recent_below(r, "a", OD_VMP_LOW, MS(5000)));
	cr_assert(od_vmp_recent_below(r, "", OD_VMP_LOW, MS(5000)));
	od_vmp_recent_free(r);
}

Test(vmpressure, limit_events_as_levels)
{
	uint64_t a[OD_VMP_NEVENTS] = { 5, 7, 1, 1 };
	uint64_t b[OD_VMP_NEVENTS] = { 5, 7, 1, 1 };
	cr_assert_eq(od_vmp_level_of_events(a, b), -1, "nothing moved");
	b[0] = 6;
	cr_assert_eq(od_vmp_level_of_events(a, b), OD_VMP_LOW, "the limit was hit: reclaim ran");
	b[0] = 5;
	b[1] = 8;
	cr_assert_eq(od_vmp_level_of_events(a, b), OD_VMP_LOW, "memory.high throttled");
	b[2] = 2;
	cr_assert_eq(od_vmp_level_of_events(a, b), OD_VMP_CRITICAL, "an OOM: reclaim freed nothing");
	b[2] = 1;
	b[3] = 2;
	cr_assert_eq(od_vmp_level_of_events(a, b), OD_VMP_CRITICAL);
	cr_assert(od_path_below("/a", "/a/b"));
	cr_assert_not(od_path_below("/a", "/ab"));
	cr_assert_not(od_path_below("/a", "/a"));
}
