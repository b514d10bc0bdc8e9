/* harness.h — fake clock and action-buffer assertions for the engine unit tests.
 *
 * Tests are written against docs SEMANTICS.md (the contract) and include/oomd/engine.h,
 * never against core/. Every test runs in its own process (criterion forks), so
 * the static state below is per test (and each test_engine_*.c has its own copy).
 */
#ifndef OOMD_TEST_HARNESS_H
#define OOMD_TEST_HARNESS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "oomd/engine.h"

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define MS(x) ((int64_t)(x) * 1000000LL)

/* Tree used by most tests:
 *   ROOT(1) ── A(10, L=100M) ─┬─ B(11, L=50M) ── C(12, L=20M)
 *                             └─ S(13, L=30M)       (sibling of B)
 *           └─ P(20, L=max)                       (sibling of A, unlimited)
 */
enum { ROOT = 1, A = 10, B = 11, C = 12, S = 13, P = 20, NEWID = 30 };
#define LA (100 * MiB)
#define LB (50 * MiB)
#define LC (20 * MiB)
#define LS (30 * MiB)

#define CEIL (16 * MiB)
#define MARGIN (4 * MiB)
#define SAMPLE_NS MS(100)

static oe_engine *E;
static oe_config CFG;
static int64_t now_ns;
static oe_action act_storage[512];
static oe_actions ACT;

static inline void advance_ms(int64_t ms) { now_ns += MS(ms); }
static inline void advance_ns(int64_t ns) { now_ns += ns; }

static bool answered[sizeof act_storage / sizeof act_storage[0]];
static inline void clr(void)
{
	oe_actions_clear(&ACT);
	memset(answered, 0, sizeof answered);
}

static inline const char *kname(oe_action_kind k)
{
	static const char *n[] = {"SET_HIGH", "SET_MAX", "KILL_KERNEL", "KILL_GROUP", "FREEZE",
				  "THAW", "NOTIFY", "CHANGED", "SAMPLE", "PERSIST", "FORGET", "LOG"};
	return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}

/* The actions of the last call(s), for failure messages. */
static inline const char *dump(void)
{
	static char s[8192];
	size_t o = 0;
	s[0] = 0;
	for (size_t i = 0; i < ACT.n && o < sizeof s - 64; i++)
		o += (size_t)snprintf(s + o, sizeof s - o, "%s%s(%llu,%llu)", i ? " " : "",
				      kname(ACT.v[i].kind), (unsigned long long)ACT.v[i].id,
				      (unsigned long long)ACT.v[i].value);
	if (!ACT.n)
		snprintf(s, sizeof s, "(none)");
	return s;
}

/* Index of the first action of `kind` for `id` at or after `from`, or -1. */
static inline int find_from(size_t from, oe_action_kind kind, uint64_t id)
{
	for (size_t i = from; i < ACT.n; i++)
		if (ACT.v[i].kind == kind && ACT.v[i].id == id)
			return (int)i;
	return -1;
}
static inline int find(oe_action_kind kind, uint64_t id) { return find_from(0, kind, id); }
static inline int findv(oe_action_kind kind, uint64_t id, uint64_t value)
{
	for (size_t i = 0; i < ACT.n; i++)
		if (ACT.v[i].kind == kind && ACT.v[i].id == id && ACT.v[i].value == value)
			return (int)i;
	return -1;
}
static inline int count(oe_action_kind kind, uint64_t id)
{
	int c = 0;
	for (size_t i = 0; i < ACT.n; i++)
		c += ACT.v[i].kind == kind && ACT.v[i].id == id;
	return c;
}
static inline int count_kind(oe_action_kind kind)
{
	int c = 0;
	for (size_t i = 0; i < ACT.n; i++)
		c += ACT.v[i].kind == kind;
	return c;
}
/* Last value of `kind` for `id` in the buffer (the one that wins). */
static inline bool lastv(oe_action_kind kind, uint64_t id, uint64_t *v)
{
	bool f = false;
	for (size_t i = 0; i < ACT.n; i++)
		if (ACT.v[i].kind == kind && ACT.v[i].id == id) {
			*v = ACT.v[i].value;
			f = true;
		}
	return f;
}
static inline const oe_persisted *last_persist(uint64_t id)
{
	const oe_persisted *p = NULL;
	for (size_t i = 0; i < ACT.n; i++)
		if (ACT.v[i].kind == OE_ACT_PERSIST && ACT.v[i].id == id)
			p = &ACT.v[i].persisted;
	return p;
}

#define HAS(kind, id) cr_assert(find(kind, id) >= 0, "expected %s for %llu; got %s", kname(kind), (unsigned long long)(id), dump())
#define HASV(kind, id, val)                                                                      \
	cr_assert(findv(kind, id, val) >= 0, "expected %s(%llu,%llu); got %s", kname(kind),      \
		  (unsigned long long)(id), (unsigned long long)(val), dump())
#define NOT(kind, id) cr_assert(find(kind, id) < 0, "unexpected %s for %llu; got %s", kname(kind), (unsigned long long)(id), dump())
#define NONE_OF(kind) cr_assert(count_kind(kind) == 0, "unexpected %s; got %s", kname(kind), dump())
#define EMPTY() cr_assert(ACT.n == 0, "expected no actions; got %s", dump())
#define LASTV(kind, id, val)                                                                     \
	do {                                                                                     \
		uint64_t lv_ = 0;                                                                \
		cr_assert(lastv(kind, id, &lv_), "expected %s for %llu; got %s", kname(kind),     \
			  (unsigned long long)(id), dump());                                     \
		cr_assert_eq(lv_, (uint64_t)(val), "%s(%llu): last value %llu, want %llu; got %s",  \
			     kname(kind), (unsigned long long)(id), (unsigned long long)lv_,     \
			     (unsigned long long)(val), dump());                                 \
	} while (0)

/* Assert that the actions contain, as a subsequence in this order, the given
 * (kind, id) pairs. End the list with -1. */
static inline void seq_(const char *file, int line, int first, ...)
{
	va_list ap;
	va_start(ap, first);
	size_t pos = 0;
	int kind = first;
	char want[512] = "";
	size_t wo = 0;
	bool ok = true;
	while (kind >= 0) {
		uint64_t id = va_arg(ap, uint64_t);
		wo += (size_t)snprintf(want + wo, sizeof want - wo, "%s(%llu) ", kname((oe_action_kind)kind),
				       (unsigned long long)id);
		if (ok) {
			int i = find_from(pos, (oe_action_kind)kind, id);
			if (i < 0)
				ok = false;
			else
				pos = (size_t)i + 1;
		}
		kind = va_arg(ap, int);
	}
	va_end(ap);
	cr_assert(ok, "%s:%d: expected in order: %s; got %s", file, line, want, dump());
}
#define SEQ(...) seq_(__FILE__, __LINE__, __VA_ARGS__, -1)
#define K(kind, id) (int)(kind), (uint64_t)(id)

static inline oe_view view(uint64_t id)
{
	oe_view v;
	memset(&v, 0, sizeof v);
	cr_assert(oe_view_get(E, id, &v), "no view for %llu", (unsigned long long)id);
	return v;
}

/* The fake world: the usage each cgroup has now (set by every sample() a test makes).
 * The fake shell answers the engine's OE_ACT_SAMPLE requests from it after every call. */
#define WORLD_IDS 64
static uint64_t world_cur[WORLD_IDS];
static bool world_set[WORLD_IDS];
static void pump(void);

/* Engine calls with the fake clock. They append to ACT (call clr() to start afresh). */
static inline void add(uint64_t id, uint64_t parent, uint64_t max, uint64_t high)
{
	cr_assert(oe_cgroup_add(E, now_ns, id, parent, max, high, NULL, &ACT), "add %llu failed",
		  (unsigned long long)id);
	pump();
}
static inline int wdelay(uint64_t id, uint64_t ms)
{
	int rc = oe_write_delay(E, now_ns, id, ms, &ACT);
	pump();
	return rc;
}
static inline int wdis(uint64_t id, uint64_t v)
{
	int rc = oe_write_disable(E, now_ns, id, v, &ACT);
	pump();
	return rc;
}
static inline int wlimit(uint64_t id, uint64_t b)
{
	int rc = oe_write_limit(E, now_ns, id, b, &ACT);
	pump();
	return rc;
}
static inline int whigh(uint64_t id, uint64_t b)
{
	int rc = oe_write_high(E, now_ns, id, b, &ACT);
	pump();
	return rc;
}
static inline void tick(void)
{
	oe_tick(E, now_ns, &ACT);
	pump();
}
static inline void sample_r(uint64_t id, const oe_reading *r)
{
	if (id < WORLD_IDS) {
		world_cur[id] = r->current;
		world_set[id] = true;
	}
	oe_sample(E, now_ns, id, r, &ACT);
}
static inline void sample(uint64_t id, uint64_t current)
{
	oe_reading r;
	memset(&r, 0, sizeof r);
	r.current = current;
	sample_r(id, &r);
	pump();
}

/* Usage back under L for good (rule 5): a reading at `usage`, and another one more than
 * the kernel's longest penalty sleep (2 s) later with nothing pushing in between. A
 * single reading under L is no recovery while a task may still push (test_engine_dips.c). */
#define CALM_MS 2200
static inline void recover(uint64_t id, uint64_t usage)
{
	sample(id, usage);
	advance_ms(CALM_MS);
	sample(id, usage);
}

/* Play the shell's side of OE_ACT_SAMPLE: answer every SAMPLE for `id` in ACT that was
 * not answered yet with a reading of `current` (the engine may decide a kill only on a
 * fresh reading). Returns how many were answered. */
static inline int answer(uint64_t id, uint64_t current)
{
	int k = 0;
	for (size_t i = 0; i < ACT.n && i < sizeof answered; i++) {
		if (answered[i] || ACT.v[i].kind != OE_ACT_SAMPLE || ACT.v[i].id != id)
			continue;
		answered[i] = true;
		sample(id, current);
		k++;
	}
	return k;
}
/* ... with usage still 1 MiB over the cgroup's current L: the OOM condition holds. */
static inline int answer_over(uint64_t id);
static inline void seen_max(uint64_t id, uint64_t v)
{
	oe_real_max_seen(E, now_ns, id, v, &ACT);
	pump();
}

/* Answer every unanswered SAMPLE for a cgroup whose usage the world knows. */
static void pump(void)
{
	for (int round = 0; round < 64; round++) {
		bool did = false;
		for (size_t i = 0; i < ACT.n && i < sizeof answered; i++) {
			uint64_t id = ACT.v[i].id;
			if (answered[i] || ACT.v[i].kind != OE_ACT_SAMPLE || id >= WORLD_IDS || !world_set[id])
				continue;
			answered[i] = true;
			oe_reading r;
			memset(&r, 0, sizeof r);
			r.current = world_cur[id];
			oe_sample(E, now_ns, id, &r, &ACT);
			did = true;
		}
		if (!did)
			return;
	}
}

static inline void engine_new(oe_kill_mode mode)
{
	oe_config_defaults(&CFG);
	CFG.ceiling_bytes = CEIL;
	CFG.freeze_margin_bytes = MARGIN;
	CFG.sample_interval_ns = SAMPLE_NS;
	CFG.kill_mode = mode;
	E = oe_new(&CFG);
	cr_assert_not_null(E);
	oe_actions_init(&ACT, act_storage, sizeof act_storage / sizeof act_storage[0]);
	now_ns = 1000 * MS(1000); /* 1000 s after boot: no zero-time edge cases */
	oe_root(E, ROOT);
}

static inline int answer_over(uint64_t id)
{
	oe_view v;
	if (!oe_view_get(E, id, &v))
		return 0;
	return answer(id, v.limit + MiB);
}

/* Build the standard tree; all unmanaged (T = 0, D = 0), user high = max. */
static inline void tree_new(oe_kill_mode mode)
{
	engine_new(mode);
	add(A, ROOT, LA, OE_UNLIMITED);
	add(B, A, LB, OE_UNLIMITED);
	add(C, B, LC, OE_UNLIMITED);
	add(S, A, LS, OE_UNLIMITED);
	add(P, ROOT, OE_UNLIMITED, OE_UNLIMITED);
	clr();
}

static inline void setup_kernel(void) { tree_new(OE_KILL_KERNEL); }
static inline void setup_group(void) { tree_new(OE_KILL_GROUP); }
static inline void teardown(void)
{
	if (E)
		oe_free(E);
	E = NULL;
}

/* Put A (T = ms) into a hold: returns the onset time. Actions of the onset stay in ACT. */
static inline int64_t hold_A(uint64_t ms)
{
	cr_assert_eq(wdelay(A, ms), 0);
	clr();
	sample(A, LA + 1 * MiB);
	cr_assert(view(A).in_hold, "A not in hold after onset; got %s", dump());
	return now_ns;
}

#endif
