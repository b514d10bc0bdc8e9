/* kill_once.c — the kernel-mode kill with one OOM kill in the write (kernel_io.h,
 * od_kio_kill_once: why). The writer starts a guard thread, then writes memory.max. The
 * guard reads memory.events every KILL_ONCE_POLL_US and, at the first "oom" event
 * (memory_max_write raises it just before it calls the OOM killer) or "oom_kill", sends
 * the writer SIGRTMIN + 5. The handler does nothing: the signal only has to be pending,
 * which ends the write's loop at its next pass (signal_pending(current); nothing inside
 * the OOM killer looks at it). Passes after a kill find its victim still exiting and
 * kill nobody until exit_mmap marks it MMF_OOM_SKIP, so that is the guard's deadline:
 * 0.4 to 70 ms after the first kill in r-one-kill on 7 under TCG.
 * It reads instead of sleeping in poll(): kernfs notifications of memory.events come at
 * most every 10 ms (cgroup_file_notify, CGROUP_FILE_NOTIFY_MIN_INTV), and during a hold
 * the high and max events keep that timer busy; the write lasts tens of ms, so a few
 * hundred reads. With rt_prio the guard runs SCHED_FIFO above it whatever the writer's policy
 * (an actuator that took the kill has none): on 7 under load an inherited SCHED_OTHER
 * guard was not run for 70 ms and the loop killed a second task.
 * The write still returns its length (the new max was set before the loop); a signal
 * that comes after it returned is taken by the empty handler. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/kernel_io.h"
#include "kio_private.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#define KILL_ONCE_SIGNAL (SIGRTMIN + 5) /* fs/session.c has + 6, fs/ec_signal.c + 7 */
#define KILL_ONCE_POLL_US 100

static void on_guard_signal(int sig)
{
	(void)sig;
}

void od_kio_kill_once_init(void)
{
	struct sigaction sa = { .sa_handler = on_guard_signal, .sa_flags = 0 };
	sigemptyset(&sa.sa_mask);
	if (sigaction(KILL_ONCE_SIGNAL, &sa, NULL) < 0)
		g_warning("kill guard: sigaction: %s: a kernel-mode kill may kill more than one task",
			  g_strerror(errno));
}

typedef struct {
	int dirfd, events;
	uint64_t oom0, kill0; /* the counts before the write */
	pthread_t writer;
	int done; /* the write returned (atomic) */
} guard;

static void *guard_main(void *data)
{
	guard *g = data;
	const struct timespec pause = { 0, KILL_ONCE_POLL_US * 1000 };
	while (!__atomic_load_n(&g->done, __ATOMIC_ACQUIRE)) {
		uint64_t oom, kill;
		if (od_kio_guard_read(g->dirfd, g->events, &oom, &kill) < 0)
			return NULL; /* the cgroup went: nothing left to stop */
		if (oom > g->oom0 || kill > g->kill0) {
			pthread_kill(g->writer, KILL_ONCE_SIGNAL);
			return NULL;
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* The guard thread: SCHED_FIFO one above rt_prio if asked and allowed, else the writer's
 * policy. Above, not at: a SCHED_FIFO writer in the kernel's loop yields its CPU at
 * cond_resched() only to a higher priority, and a VM of the test bed runs on one CPU
 * (r-one-kill on 6.1: a guard at the writer's priority saw nothing before the second kill,
 * 5 ms after the first). */
static int start_guard(pthread_t *t, guard *g, int rt_prio)
{
	if (rt_prio > 0) {
		pthread_attr_t a;
		struct sched_param sp = { .sched_priority = rt_prio < 99 ? rt_prio + 1 : 99 };
		pthread_attr_init(&a);
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &sp);
		int e = pthread_create(t, &a, guard_main, g);
		pthread_attr_destroy(&a);
		if (e != EPERM)
			return e;
	}
	return pthread_create(t, NULL, guard_main, g);
}

int od_kio_kill_once(int dirfd, const od_kio_hold_files *kept, uint64_t v, int rt_prio, unsigned *kills)
{
	guard g = { .dirfd = dirfd, .writer = pthread_self() };
	g.events = od_kio_guard_fd(dirfd, kept, &g.oom0, &g.kill0);
	pthread_t t;
	int e = g.events < 0 ? -g.events : start_guard(&t, &g, rt_prio);
	if (e) {
		g_warning("kill guard: %s: memory.max written without it; the kernel may kill more "
			  "than one task", g_strerror(e));
		if (g.events >= 0)
			od_kio_guard_put(kept, g.events);
		if (kills)
			*kills = 0;
		return od_kio_write_max(dirfd, kept, v);
	}
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, KILL_ONCE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, &old);
	int r = od_kio_write_max(dirfd, kept, v);
	__atomic_store_n(&g.done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	uint64_t oom, kill;
	if (kills)
		*kills = od_kio_guard_read(dirfd, g.events, &oom, &kill) == 0 && kill >= g.kill0 ?
				 (unsigned)(kill - g.kill0) : 0;
	od_kio_guard_put(kept, g.events);
	return r;
}
