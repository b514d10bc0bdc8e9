/* pi_mutex.h — a priority-inheritance mutex, for a lock the SCHED_FIFO deadline thread
 * shares with threads at a normal policy (the engine's lock, ctl_lock.c): a real-time
 * waiter lends the holder its priority until the unlock. (The action queue's lock in
 * order.c is still a plain GMutex: made one of these together with other changes, it met
 * whole-suite failures not yet attributed and was taken back; docs/DESIGN.md.) Any thread, once, before the mutex is used; never blocks. Where the
 * protocol is refused the mutex is a plain one, and `what` is logged. */
#ifndef OOMD_PI_MUTEX_H
#define OOMD_PI_MUTEX_H

#include <pthread.h>
#include <glib.h>

static inline void od_pi_mutex_init(pthread_mutex_t *m, const char *what)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	if (pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) != 0)
		g_warning("%s: no priority inheritance: a real-time waiter may wait behind a preempted holder", what);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

#endif
