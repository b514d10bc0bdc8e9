/* ctl_lock.c — implements ctl_lock.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_lock.h"
#include "pi_mutex.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

/* For the diagnostics build's late-tick line only (diag.h); nothing else reads it. */
static _Thread_local const char *thread_name;

void ctl_lock_name_thread(const char *name)
{
	thread_name = name;
}

/* Pages are locked as they are first touched (MCL_ONFAULT), and a first touch
 * under global pressure allocates and can stall in reclaim: the threads on the
 * deadline -> kill path touch their stack, and the controller its buffers, up
 * front. */
#define PREFAULT_STACK (64 * 1024)
void __attribute__((noinline)) ctl_prefault_stack(void)
{
	volatile char probe[PREFAULT_STACK];
	for (size_t i = 0; i < sizeof probe; i += 4096)
		probe[i] = 0;
}

/* The deadline thread and the kill actuator run at a real-time priority (when set):
 * a thread at niceness -20 was seen waiting 145 ms for a CPU on the 2-vCPU VM while
 * the other actuators spent theirs in the kernel's reclaim (memory.max writes).
 * The kill actuator may already be asleep on its queue when the priority is set:
 * od_controller_set_rt_priority wakes it, and it applies it after every wake-up. */
static _Thread_local int rt_applied; /* what this thread has asked for (0: none) */
static _Thread_local int rt_refused = -1; /* a priority refused (logged): not asked again */

void ctl_apply_rt(od_controller *c, const char *who)
{
	int prio = g_atomic_int_get(&c->rt_prio);
	if (prio == rt_applied || prio == rt_refused)
		return;
	struct sched_param sp = { .sched_priority = prio };
	int r = pthread_setschedparam(pthread_self(), prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (r) {
		g_warning("%s: SCHED_FIFO priority %d: %s: it keeps its niceness", who, prio,
			  g_strerror(r));
		rt_refused = prio;
		return;
	}
	rt_applied = prio;
}

/* Back to SCHED_OTHER: sched_setscheduler keeps the niceness (static_prio). */
void ctl_drop_rt(void)
{
	if (!rt_applied)
		return;
	struct sched_param sp = { .sched_priority = 0 };
	if (pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0)
		rt_applied = 0;
}

void ctl_lock_init(od_controller *c)
{
	/* Priority inheritance: the deadline thread (SCHED_FIFO) that waits for the lock lends
	 * its priority to the holder, a FUSE worker or the loop at a normal policy. 6.1's full
	 * suite (f-pressure-group, 2026-12-05): the tick that issued both kills came 189.5 ms
	 * after the first deadline while a SCHED_FIFO 99 probe on each vCPU was never more than
	 * 14.7 ms late: the VM ran, the holder did not. */
	od_pi_mutex_init(&c->lock, "engine lock");
	c->diag = od_diag_new();
	/* main() made the controller after setting the niceness its threads inherit. */
	errno = 0;
	c->lock_nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		c->lock_nice = 0;
}

void ctl_lock_clear(od_controller *c)
{
	od_diag_free(c->diag);
	pthread_mutex_destroy(&c->lock);
}

/* The niceness boost is a fix, not a diagnostic. Under the lock only pure engine
 * work is done, yet a FUSE worker, which runs at the niceness the daemon was
 * started with, can be preempted while holding it by the workloads it competes
 * with, and the deadline thread then waits: a tick was seen 380 ms late, all of it
 * waiting for the lock, among f-load's 64 clients (docs/DESIGN.md, "the late
 * tick"). So a thread below the controller's priority is raised to it while it
 * holds the lock (two setpriority calls per hold: the mutex's priority inheritance
 * lends only a real-time waiter's priority, not a niceness). A thread already at the controller's niceness
 * (the controller's own threads; every thread when --nice is the started-with
 * niceness, or could not be set) skips both. Each thread also touches its
 * stack once, so that a first fault under the lock (pages are locked as they are
 * touched) cannot stall in reclaim. site names the call for the diagnostics build
 * only (diag.h); the default build stores nothing. */
static _Thread_local int own_nice = INT_MIN; /* INT_MIN: not yet read */

void ctl_lock(od_controller *c, const char *site)
{
	if (own_nice == INT_MIN) {
		errno = 0;
		int n = getpriority(PRIO_PROCESS, 0); /* this thread's, on Linux */
		own_nice = errno ? c->lock_nice : n;
		ctl_prefault_stack();
	}
	if (own_nice > c->lock_nice)
		(void)setpriority(PRIO_PROCESS, 0, c->lock_nice); /* best effort: CAP_SYS_NICE */
	pthread_mutex_lock(&c->lock);
	od_diag_lock_taken(c->diag, site, thread_name ? thread_name : "a FUSE worker");
}

void ctl_unlock(od_controller *c)
{
	od_diag_lock_released(c->diag);
	pthread_mutex_unlock(&c->lock);
	if (own_nice > c->lock_nice)
		(void)setpriority(PRIO_PROCESS, 0, own_nice);
}
