/* ctl.h — private to the controller (daemon/controller.c and daemon/ctl_*.c): the
 * one struct its components share, and how they fit together.
 *
 * Components, one file each:
 *   ctl_lock     the engine's lock (niceness boost while held, real-time priority)
 *   ctl_table    the cgroup table: id -> od_cg (directory fd, references), and the
 *                room for the engine's actions
 *   ctl_act      carrying actions out: inline or handed to the actuator threads
 *   ctl_deadline the deadline thread: the timerfd, the heartbeat, the ticks
 *   ctl_adopt    adding a cgroup (and its unknown ancestors), removing a subtree
 *   ctl_hooks    the shells' hooks: registered, called, removed
 *   controller.c the facade the shells call (include/oomd/controller.h)
 *
 * The engine is pure and guarded by the lock; every call feeds it under the lock
 * into the preallocated action buffer, copies the actions out (with a reference on
 * each cgroup, so a concurrent removal cannot close its directory under us),
 * re-arms the timerfd, unlocks, and only then touches the kernel: a memory.max
 * write may block for as long as the kernel reclaims and kills.
 */
#ifndef OOMD_CTL_H
#define OOMD_CTL_H

#include <glib.h>
#include <pthread.h>
#include "oomd/controller.h"
#include "oomd/diag.h"
#include "oomd/order.h"
#include "ctl_hooks.h"

/* Who is calling, said by every caller and never read from the thread: what a
 * batch of actions does depends on it (ctl_act.h). Made once per thread by the
 * controller's own threads, per call at the facade's entry points. */
typedef enum {
	/* A FUSE worker (or main before the loop runs): runs its whole batch itself when
	 * its turn in the cgroup's order comes, blocking as the native write would. */
	CTL_WORKER,
	/* The glib main loop (the watcher): never waits for a kernel write. It runs the
	 * reads and notifications that lead a batch and hands the rest to the actuators. */
	CTL_LOOP,
	/* The deadline thread: runs only the samples that lead a batch (through kept
	 * descriptors) and hands the rest to the actuators. */
	CTL_DEADLINE,
	/* A thread carrying out a batch (an actuator, or a worker in its turn): what its
	 * actions make the engine emit comes after that batch in the order, so it is
	 * handed off as the loop's is, never waited for. */
	CTL_IN_BATCH,
} ctl_caller;

/* A knob file the caller already holds open for writing: a user's write of
 * memory.max or memory.high through the shadow, whose FUSE open opened the real file.
 * The engine's write of that knob of that cgroup goes through it: an openat and a
 * close fewer on the writer's path (x-write-strace, docs/DESIGN.md). */
typedef struct {
	uint64_t id;
	oe_action_kind kind; /* OE_ACT_SET_MAX or OE_ACT_SET_HIGH */
	int fd;
} ctl_via;

typedef struct {
	ctl_caller who;
	int depth; /* batches nested on this call chain (SAMPLE -> oe_sample -> SAMPLE ...) */
	const ctl_via *via; /* NULL, or a CTL_WORKER's (and its batch's) open knob file */
} ctl_ctx;

#define STACK_ACTS 64 /* batches up to this size are copied out onto the stack */
#define NACTUATORS 4

/* ctl_post.h: one posted log line */
#define CTL_POST_SLOTS 32
typedef struct {
	int state; /* atomic: free, being written, full */
	bool warn;
	guint64 seq;
	char line[768];
} ctl_post_slot;

/* Grouped by the component that owns each part. */
struct od_controller {
	/* ctl_lock: guards the engine, the table, acts and armed */
	pthread_mutex_t lock; /* taken through ctl_lock() only; priority inheritance */
	int lock_nice; /* the niceness of the controller's own threads */
	gint rt_prio;  /* SCHED_FIFO for the deadline thread and the killer (atomic) */
	od_diag *diag; /* NULL unless built with -Ddiagnostics=true (diag.h) */

	/* ctl_table: the engine and the table, under the lock */
	oe_engine *eng;
	GHashTable *cgs; /* &id -> od_cg* */
	oe_action *buf;  /* the resident action buffer (ctl_table.h: how it is sized) */
	size_t buf_cap;
	oe_action *wide; /* a wide call's own buffer, while acts points at it */
	oe_actions acts;

	/* ctl_deadline */
	int tfd;           /* read by the deadline thread alone */
	int64_t armed;     /* under the lock */
	int64_t tick_late; /* how late the last timer tick ran (ns; atomic), for the kill's log line */
	gint beat_ms;      /* the watchdog: wake at least this often (0: only for deadlines) */
	guint64 beats;     /* wake-ups of the deadline thread (atomic) */
	GThread *deadlines;
	gint deadlines_stop;

	/* ctl_post: log lines of the deadline thread and the kill actuator, for the loop */
	int post_efd;
	guint post_src;
	guint64 post_seq;  /* atomic: the next line's number */
	guint post_lost;   /* atomic: lines that found their slot taken */
	ctl_post_slot post[CTL_POST_SLOTS];

	/* ctl_act */
	od_order *order;
	GThread *actuator[NACTUATORS];

	/* ctl_hooks */
	ctl_hooks hooks;

	/* the facade: the tree is being adopted (od_controller_adopting): user writes wait */
	GMutex adopt_lock;
	GCond adopt_done;
	gint adopting; /* atomic; changed under adopt_lock */
	gint states_adopted; /* cgroups added with a persisted state not in a hold (atomic) */
};

#endif
