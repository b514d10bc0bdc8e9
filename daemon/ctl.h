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
#include "oomd/controller.h"
#include "oomd/diag.h"
#include "oomd/order.h"

#define MAX_HOOKS 8
#define STACK_ACTS 64 /* batches up to this size are copied out onto the stack */
#define NACTUATORS 4

struct od_controller {
	GMutex lock; /* engine, cgs, acts, timer; taken through ctl_lock() only */
	int lock_nice; /* the niceness of the controller's own threads */
	gint rt_prio;  /* SCHED_FIFO for the deadline thread and the killer (atomic) */
	od_diag *diag; /* NULL unless built with -Ddiagnostics=true (diag.h) */
	oe_engine *eng;
	int tfd;
	int64_t armed;
	int64_t tick_late; /* how late the last timer tick ran (ns; atomic), for the kill's log line */
	gint beat_ms;      /* the watchdog: wake at least this often (0: only for deadlines) */
	guint64 beats;     /* wake-ups of the deadline thread (atomic) */
	/* The deadline thread: it alone reads the timerfd. Fields below it are its own. */
	GThread *deadlines;
	gint deadlines_stop;
	GHashTable *cgs; /* &id -> od_cg* */
	oe_action *buf;  /* the resident action buffer (ctl_table.h: how it is sized) */
	size_t buf_cap;
	oe_action *wide; /* a wide call's own buffer, while acts points at it */
	oe_actions acts;

	od_hooks hooks[MAX_HOOKS];
	gint nhooks;

	GThread *actuator[NACTUATORS];
	od_order *order;

	/* The tree is being adopted (od_controller_adopting): user writes wait. */
	GMutex adopt_lock;
	GCond adopt_done;
	gint adopting; /* atomic; changed under adopt_lock */
};

#endif
