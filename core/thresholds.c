/* thresholds.c — memcg v1's usage thresholds (v1events.h), as 6.1's
 * mm/memcontrol.c keeps them: a sorted array and the index of the highest entry at
 * or below the usage (current). A check walks down from current while entries are
 * above the usage (crossed downwards), then up from current + 1 while entries are at
 * or below it (crossed upwards): __mem_cgroup_threshold. Equal thresholds keep their
 * order of registration (v1 sorts with sort(), not stable; the order only decides
 * which eventfd is written first, and all of them are).
 */
#include <glib.h>

#include "oomd/v1events.h"

typedef struct {
	uint64_t threshold;
	uint64_t key;
} entry;

struct od_thresholds {
	GArray *e;     /* entry, sorted by threshold */
	gssize current; /* last index with threshold <= usage at the last check, -1 none */
};

od_thresholds *od_thr_new(void)
{
	od_thresholds *t = g_new0(od_thresholds, 1);
	t->e = g_array_new(FALSE, FALSE, sizeof(entry));
	t->current = -1;
	return t;
}

void od_thr_free(od_thresholds *t)
{
	if (!t)
		return;
	g_array_unref(t->e);
	g_free(t);
}

size_t od_thr_count(const od_thresholds *t)
{
	return t->e->len;
}

static void push(uint64_t **out, size_t *n, uint64_t key)
{
	*out = g_renew(uint64_t, *out, *n + 1);
	(*out)[(*n)++] = key;
}

void od_thr_check(od_thresholds *t, uint64_t usage, uint64_t **crossed, size_t *n)
{
	gssize i = t->current;
	entry *e = (entry *)t->e->data;
	for (; i >= 0 && e[i].threshold > usage; i--)
		push(crossed, n, e[i].key);
	for (i++; i < (gssize)t->e->len && e[i].threshold <= usage; i++)
		push(crossed, n, e[i].key);
	t->current = i - 1;
}

uint64_t od_thr_peak_apex(od_thr_peak *p, uint64_t peak)
{
	bool rose = p->known && peak > p->peak;
	if (!p->known || peak > p->peak)
		p->peak = peak;
	p->known = true;
	return rose ? peak : 0;
}

void od_thr_check_apex(od_thresholds *t, uint64_t apex, uint64_t usage, uint64_t slack,
		       uint64_t **crossed, size_t *n)
{
	if (apex > usage) {
		od_thr_check(t, apex, crossed, n);
		if (apex - usage <= slack)
			return; /* the stock the reading itself drained, not a fall (v1events.h) */
	}
	od_thr_check(t, usage, crossed, n);
}

void od_thr_add(od_thresholds *t, uint64_t key, uint64_t threshold, uint64_t usage,
		uint64_t **crossed, size_t *n)
{
	if (t->e->len)
		od_thr_check(t, usage, crossed, n);
	guint at = 0;
	while (at < t->e->len && g_array_index(t->e, entry, at).threshold <= threshold)
		at++;
	entry ne = { .threshold = threshold, .key = key };
	g_array_insert_val(t->e, at, ne);
	/* the new current, counted afresh as v1 does after its sort */
	t->current = -1;
	for (guint i = 0; i < t->e->len && g_array_index(t->e, entry, i).threshold <= usage; i++)
		t->current = (gssize)i;
}

bool od_thr_remove(od_thresholds *t, uint64_t key)
{
	for (guint i = 0; i < t->e->len; i++) {
		if (g_array_index(t->e, entry, i).key != key)
			continue;
		g_array_remove_index(t->e, i);
		/* v1 recounts current against the usage of the moment; keeping the position
		 * relative to the removed entry is the same thing for an unchanged usage */
		if ((gssize)i <= t->current)
			t->current--;
		return true;
	}
	return false;
}

void od_thr_foreach(const od_thresholds *t, void (*fn)(uint64_t key, void *ud), void *ud)
{
	for (guint i = 0; i < t->e->len; i++)
		fn(g_array_index(t->e, entry, i).key, ud);
}

int64_t od_thr_next_sample(size_t registered, int64_t last, int64_t now, bool limit_event)
{
	if (!registered)
		return -1;
	int64_t next = last + (int64_t)(limit_event ? OD_THR_EVENT_GAP_MS : OD_THR_PERIOD_MS) * 1000000LL;
	return next < now ? now : next;
}

uint64_t od_thr_event_floor(const uint64_t old[OD_VMP_NEVENTS], const uint64_t now[OD_VMP_NEVENTS],
			    uint64_t max, uint64_t high)
{
	bool at_max = now[0] > old[0] || now[2] > old[2];
	bool over_high = now[1] > old[1] && high != UINT64_MAX;
	uint64_t floor = MIN(max, high); /* the lower: either may have been raised since */
	return (at_max || over_high) && floor != UINT64_MAX ? floor : 0;
}
