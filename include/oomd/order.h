/* order.h — one order per cgroup for every kernel write. A queue of batches of
 * engine actions, in the order the engine emitted them: a batch may start only
 * when no batch queued before it (waiting or running) names any of its cgroups.
 *
 * A batch gets its place in the order while the caller still holds the engine's
 * lock (od_order_reserve: no allocation, a header on the caller's stack), so no
 * later emission can overtake it. After the unlock it is either handed to the
 * actuator threads (od_order_hand_off: the loop and the deadline thread, which
 * must not block) or carried out by the thread that reserved it, when its turn
 * comes (od_order_wait_turn: a FUSE worker, whose caller's write blocks as it
 * would natively and gets the write's errno). Both wait only on qlock and on
 * earlier batches of the same cgroups; a thread carrying out a batch must hand
 * off whatever its actions emit (nested emissions come after it in the order).
 * Batches hold opaque per-action pointers (the controller's cgroup references).
 */
#ifndef OOMD_ORDER_H
#define OOMD_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include "oomd/engine.h"

typedef enum {
	OD_BATCH_RESERVED, /* placeholder: nobody runs it yet, it blocks later batches */
	OD_BATCH_OWNED,    /* run by the thread that reserved it */
	OD_BATCH_QUEUED,   /* run by an actuator */
} od_batch_kind;

typedef struct od_batch {
	struct od_batch *next;
	size_t n;
	od_batch_kind kind;
	bool pooled, heap;
	bool running; /* taken; stays queued until done */
	bool urgent;  /* carries a kill: the reserved actuator takes only these */
	void **refs;
	oe_action *v;
} od_batch;

typedef struct od_order od_order;

od_order *od_order_new(void);
void od_order_free(od_order *q); /* after every actuator has returned */

/* Under the engine's lock: links hdr (caller's storage, kept until done or handed
 * off) at the end of the order, naming v[0..n) (also the caller's, same lifetime). */
void od_order_reserve(od_order *q, od_batch *hdr, const oe_action *v, void **refs, size_t n);
/* The actuators carry hdr's actions out: copies them (and refs, whose ownership
 * passes to the batch) into a batch of the pool, or the heap, in hdr's place. */
void od_order_hand_off(od_order *q, od_batch *hdr);
/* Blocks until no batch before hdr names one of its cgroups, then marks it running;
 * hdr becomes OWNED. The caller runs it, then calls od_order_done. */
void od_order_wait_turn(od_order *q, od_batch *hdr);
/* Unlinks a batch that has been carried out (an actuator's or an owned one). */
void od_order_done(od_order *q, od_batch *b);

/* Actuator side: blocks for the next runnable QUEUED batch (kills only when
 * urgent_only; without it, a kill only while no urgent_only taker waits); on_wake(ud)
 * runs on entry and after each wake-up, under qlock. NULL once stopped and nothing is
 * left. */
od_batch *od_order_take(od_order *q, bool urgent_only, void (*on_wake)(void *), void *ud);
/* Actuator side, on a batch it took: how many of its actions run on the kill actuator
 * (through its last kill; all of them when it has none). Pure. */
size_t od_order_kill_prefix(const od_batch *b);
/* Actuator side, after it ran b's first keep actions and before od_order_done: the rest
 * become a batch of their own, queued right after b (so after it in the order), for any
 * actuator, so that the kill actuator is free for the next kill while the kill's thaw and
 * persist run elsewhere. Allocates (the pool, else the heap): after the kill, not before. */
void od_order_split(od_order *q, od_batch *b, size_t keep);
void od_order_stop(od_order *q);
/* Wakes every waiting actuator (e.g. to apply a new priority). */
void od_order_kick(od_order *q);
/* Blocks until nothing is queued or running. */
void od_order_drain(od_order *q);

#endif
