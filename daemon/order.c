/* order.c — implements order.h. One list in emission order, guarded by qlock; the
 * lists are short (a few batches), so the overlap test walks them. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/order.h"

#include <string.h>

/* Batches handed to the actuators come from a pool allocated up front, so that
 * the event -> decision -> kill path does not call malloc while memory is short.
 * A batch larger than POOL_ACTS (subtree writes, many cgroups at once) or an
 * empty pool falls back to the heap. */
#define POOL_BATCHES 32
#define POOL_ACTS 16
typedef struct {
	od_batch b;
	oe_action v[POOL_ACTS];
	void *refs[POOL_ACTS];
} od_pooled_batch;

struct od_order {
	GMutex qlock;
	GCond qcond;
	od_batch *head, *tail;
	int pending; /* batches linked (any kind) */
	int draining; /* threads in od_order_drain */
	int killers_idle; /* urgent_only takers waiting for a kill */
	bool stopping;
	od_pooled_batch *pool;
	od_batch *free_batches;
};

od_order *od_order_new(void)
{
	od_order *q = g_new0(od_order, 1);
	g_mutex_init(&q->qlock);
	g_cond_init(&q->qcond);
	q->pool = g_new(od_pooled_batch, POOL_BATCHES);
	memset(q->pool, 0, POOL_BATCHES * sizeof *q->pool); /* touched now, not on the kill path */
	for (int i = 0; i < POOL_BATCHES; i++) {
		od_batch *b = &q->pool[i].b;
		b->pooled = true;
		b->v = q->pool[i].v;
		b->refs = q->pool[i].refs;
		b->next = q->free_batches;
		q->free_batches = b;
	}
	return q;
}

void od_order_free(od_order *q)
{
	if (!q)
		return;
	g_free(q->pool);
	g_mutex_clear(&q->qlock);
	g_cond_clear(&q->qcond);
	g_free(q);
}

static bool is_kill(oe_action_kind k)
{
	return k == OE_ACT_KILL_KERNEL || k == OE_ACT_KILL_GROUP;
}

void od_order_reserve(od_order *q, od_batch *hdr, const oe_action *v, void **refs, size_t n)
{
	memset(hdr, 0, sizeof *hdr);
	hdr->kind = OD_BATCH_RESERVED;
	hdr->n = n;
	hdr->v = (oe_action *)v;
	hdr->refs = refs;
	for (size_t i = 0; i < n; i++)
		hdr->urgent |= is_kill(v[i].kind);
	g_mutex_lock(&q->qlock);
	if (q->tail)
		q->tail->next = hdr;
	else
		q->head = hdr;
	q->tail = hdr;
	q->pending++;
	g_mutex_unlock(&q->qlock);
}

/* Puts nb where old is. Under qlock. */
static void replace_locked(od_order *q, od_batch *old, od_batch *nb)
{
	od_batch **pp = &q->head;
	while (*pp != old)
		pp = &(*pp)->next;
	*pp = nb;
	nb->next = old->next;
	if (q->tail == old)
		q->tail = nb;
}

/* A batch for n actions copied from v and refs: the pool's, or the heap's. */
static od_batch *new_batch(od_order *q, const oe_action *v, void *const *refs, size_t n, bool urgent)
{
	od_batch *b = NULL;
	g_mutex_lock(&q->qlock);
	if (n <= POOL_ACTS && q->free_batches) {
		b = q->free_batches;
		q->free_batches = b->next;
	}
	g_mutex_unlock(&q->qlock);
	if (!b) {
		b = g_malloc(sizeof *b + n * sizeof(oe_action) + n * sizeof(void *));
		b->pooled = false;
		b->v = (oe_action *)(void *)(b + 1);
		b->refs = (void **)(void *)(b->v + n);
	}
	b->heap = !b->pooled;
	b->n = n;
	b->urgent = urgent;
	b->running = false;
	memcpy(b->v, v, n * sizeof(oe_action));
	memcpy(b->refs, refs, n * sizeof(void *));
	return b;
}

size_t od_order_kill_prefix(const od_batch *b)
{
	size_t keep = 0;
	for (size_t i = 0; i < b->n; i++)
		if (is_kill(b->v[i].kind))
			keep = i + 1;
	return keep ? keep : b->n;
}

void od_order_split(od_order *q, od_batch *b, size_t keep)
{
	if (keep >= b->n)
		return;
	od_batch *rest = new_batch(q, b->v + keep, b->refs + keep, b->n - keep, false);
	g_mutex_lock(&q->qlock);
	rest->kind = OD_BATCH_QUEUED;
	rest->next = b->next;
	b->next = rest;
	if (q->tail == b)
		q->tail = rest;
	q->pending++;
	b->n = keep; /* rest overlaps b (the same cgroup): it waits for b's od_order_done */
	g_mutex_unlock(&q->qlock);
}

void od_order_hand_off(od_order *q, od_batch *hdr)
{
	od_batch *b = new_batch(q, hdr->v, hdr->refs, hdr->n, hdr->urgent);
	g_mutex_lock(&q->qlock);
	b->kind = OD_BATCH_QUEUED;
	replace_locked(q, hdr, b);
	g_cond_broadcast(&q->qcond);
	g_mutex_unlock(&q->qlock);
}

/* Does batch a name a cgroup that batch b names? */
static bool overlaps(const od_batch *a, const od_batch *b)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (a->v[i].id == b->v[j].id)
				return true;
	return false;
}

static bool blocked_locked(const od_order *q, const od_batch *b)
{
	for (const od_batch *e = q->head; e != b; e = e->next)
		if (overlaps(e, b))
			return true;
	return false;
}

void od_order_wait_turn(od_order *q, od_batch *hdr)
{
	g_mutex_lock(&q->qlock);
	hdr->kind = OD_BATCH_OWNED;
	while (blocked_locked(q, hdr))
		g_cond_wait(&q->qcond, &q->qlock);
	hdr->running = true;
	g_mutex_unlock(&q->qlock);
}

void od_order_done(od_order *q, od_batch *b)
{
	g_mutex_lock(&q->qlock);
	od_batch **pp = &q->head, *prev = NULL;
	while (*pp != b) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	*pp = b->next;
	if (q->tail == b)
		q->tail = prev;
	q->pending--;
	if (b->pooled) {
		b->next = q->free_batches;
		q->free_batches = b;
	}
	/* Only a batch behind this one (waiting for its turn, or to be taken), a stop or a
	 * drain can be waiting for this: with the queue empty the idle actuators stay asleep
	 * (each limit write woke all four for nothing, x-write-strace 2026-12-06). */
	if (q->head || q->stopping || q->draining)
		g_cond_broadcast(&q->qcond);
	g_mutex_unlock(&q->qlock);
	if (b->heap)
		g_free(b);
}

/* The first waiting QUEUED batch that no batch before it overlaps, a kill first.
 * The other actuators leave kills to an idle kill actuator, and take one only while
 * it is busy with another: f-pressure on 6.1 in CI (2 VMs on 2 host cores) saw a
 * kill begin 289 ms after its deadline, while the next cgroup's, 120 ms later, began
 * on time; a normal actuator at niceness -20 had been seen waiting 145 ms for a CPU
 * under global pressure, where the kill actuator's SCHED_FIFO does not wait. */
static bool takes(const od_order *q, const od_batch *b, bool urgent_only)
{
	return urgent_only ? b->urgent : !b->urgent || q->killers_idle == 0;
}

static od_batch *pick_locked(od_order *q, bool urgent_only)
{
	for (int pass = 0; pass < (urgent_only ? 1 : 2); pass++)
		for (od_batch *b = q->head; b; b = b->next)
			if (b->kind == OD_BATCH_QUEUED && !b->running && (pass == 1 || b->urgent) &&
			    takes(q, b, urgent_only) && !blocked_locked(q, b))
				return b;
	return NULL;
}

od_batch *od_order_take(od_order *q, bool urgent_only, void (*on_wake)(void *), void *ud)
{
	g_mutex_lock(&q->qlock);
	/* Once before the first wait too: a kick that came after the caller last looked
	 * (od_controller_set_rt_priority while the kill actuator was starting) but before
	 * it waits would otherwise be lost. Under qlock, so a later kick finds it waiting. */
	if (on_wake)
		on_wake(ud);
	od_batch *b;
	while (!(b = pick_locked(q, urgent_only)) && !(q->stopping && !q->head)) {
		q->killers_idle += urgent_only;
		g_cond_wait(&q->qcond, &q->qlock);
		q->killers_idle -= urgent_only;
		if (on_wake)
			on_wake(ud);
	}
	if (b)
		b->running = true;
	g_mutex_unlock(&q->qlock);
	return b;
}

void od_order_stop(od_order *q)
{
	g_mutex_lock(&q->qlock);
	q->stopping = true;
	g_cond_broadcast(&q->qcond);
	g_mutex_unlock(&q->qlock);
}

void od_order_kick(od_order *q)
{
	g_mutex_lock(&q->qlock);
	g_cond_broadcast(&q->qcond);
	g_mutex_unlock(&q->qlock);
}

void od_order_drain(od_order *q)
{
	g_mutex_lock(&q->qlock);
	q->draining++;
	while (q->pending > 0)
		g_cond_wait(&q->qcond, &q->qlock);
	q->draining--;
	g_mutex_unlock(&q->qlock);
}
