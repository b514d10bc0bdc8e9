/* test_order.c — who takes a kill (order.h): the kill actuator while it waits, another
 * actuator only while it is busy. Real threads over od_order; no controller. */
#include <criterion/criterion.h>
#include <glib.h>
#include "oomd/order.h"

typedef struct {
	od_order *q;
	gint waiting;  /* on_wake ran: the taker is at (or past) its first look */
	od_batch *got; /* what it took */
} taker;

static void on_wake(void *ud)
{
	g_atomic_int_set(&((taker *)ud)->waiting, 1);
}

static gpointer kill_taker(gpointer data)
{
	taker *t = data;
	t->got = od_order_take(t->q, true, on_wake, t);
	return NULL;
}

/* Queues a one-action batch of kind k for cgroup id. */
static void queue(od_order *q, oe_action_kind k, uint64_t id)
{
	oe_action a = { .kind = k, .id = id };
	void *ref = NULL;
	od_batch hdr;
	od_order_reserve(q, &hdr, &a, &ref, 1);
	od_order_hand_off(q, &hdr);
}

/* on_wake runs under qlock just before the taker's wait, which releases it: any
 * later call that takes qlock comes after the taker waits. */
static GThread *start_kill_taker(taker *t)
{
	GThread *th = g_thread_new("killer", kill_taker, t);
	while (!g_atomic_int_get(&t->waiting))
		g_usleep(1000);
	return th;
}

Test(order, an_idle_kill_actuator_keeps_the_kill)
{
	taker k = { .q = od_order_new() };
	GThread *th = start_kill_taker(&k);
	queue(k.q, OE_ACT_KILL_KERNEL, 1);
	queue(k.q, OE_ACT_PERSIST, 2);
	/* Whether or not the kill actuator has run yet, another actuator gets the persist. */
	od_batch *b = od_order_take(k.q, false, NULL, NULL);
	cr_assert_eq(b->v[0].kind, OE_ACT_PERSIST, "a normal actuator took kind %d", b->v[0].kind);
	g_thread_join(th);
	cr_assert_not_null(k.got);
	cr_assert_eq(k.got->v[0].kind, OE_ACT_KILL_KERNEL);
	od_order_done(k.q, b);
	od_order_done(k.q, k.got);
	od_order_free(k.q);
}

Test(order, a_busy_kill_actuator_lends_the_next_kill)
{
	taker k = { .q = od_order_new() };
	queue(k.q, OE_ACT_KILL_KERNEL, 1);
	od_batch *first = od_order_take(k.q, true, NULL, NULL); /* the kill actuator, busy with it */
	cr_assert_eq(first->v[0].kind, OE_ACT_KILL_KERNEL);
	queue(k.q, OE_ACT_PERSIST, 2);
	queue(k.q, OE_ACT_KILL_GROUP, 3);
	od_batch *b = od_order_take(k.q, false, NULL, NULL);
	cr_assert_eq(b->v[0].kind, OE_ACT_KILL_GROUP, "the second kill waited for the first (took kind %d)",
		     b->v[0].kind);
	cr_assert(b->urgent);
	od_batch *c = od_order_take(k.q, false, NULL, NULL);
	cr_assert_eq(c->v[0].kind, OE_ACT_PERSIST);
	od_order_done(k.q, first);
	od_order_done(k.q, b);
	od_order_done(k.q, c);
	od_order_free(k.q);
}

Test(order, what_follows_a_kill_leaves_the_kill_actuator)
{
	od_order *q = od_order_new();
	oe_action v[] = { { .kind = OE_ACT_KILL_KERNEL, .id = 1 }, { .kind = OE_ACT_THAW, .id = 1 },
			  { .kind = OE_ACT_PERSIST, .id = 1 } };
	void *refs[3] = { NULL, NULL, NULL };
	od_batch hdr;
	od_order_reserve(q, &hdr, v, refs, 3);
	od_order_hand_off(q, &hdr);
	queue(q, OE_ACT_SET_HIGH, 1); /* a later write of the same cgroup */
	od_batch *b = od_order_take(q, true, NULL, NULL);
	cr_assert_eq(od_order_kill_prefix(b), 1);
	od_order_split(q, b, 1);
	cr_assert_eq(b->n, 1);
	od_order_done(q, b);
	od_batch *rest = od_order_take(q, false, NULL, NULL);
	cr_assert_eq(rest->n, 2);
	cr_assert_not(rest->urgent);
	cr_assert_eq(rest->v[0].kind, OE_ACT_THAW);
	cr_assert_eq(rest->v[1].kind, OE_ACT_PERSIST);
	od_order_done(q, rest);
	/* the later write came after the split-off rest, in the cgroup's order */
	od_batch *later = od_order_take(q, false, NULL, NULL);
	cr_assert_eq(later->v[0].kind, OE_ACT_SET_HIGH);
	cr_assert_eq(od_order_kill_prefix(later), 1, "no kill: the batch is kept whole");
	od_order_done(q, later);
	od_order_free(q);
}
