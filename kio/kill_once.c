/* kill_once.c — the kernel-mode kill with one OOM kill in the write (kernel_io.h,
 * od_kio_kill_once: why). The writer starts a guard thread, then writes memory.max. The
 * guard sleeps in poll() on its own descriptor of memory.events and, at the first "oom"
 * event (memory_max_write raises it just before it calls the OOM killer) or "oom_kill",
 * sends the writer SIGRTMIN + 5. The handler does nothing: the signal only has to be
 * pending, which ends the write's loop at its next pass, after this one kill
 * (signal_pending(current); nothing inside the OOM killer looks at it). Waiting for the
 * kill itself is too late: on 7 under TCG the loop's next pass picked a second victim
 * 0.4 to 1.6 ms after the first (r-one-kill), before the guard had read the count; the
 * selection and the OOM report between the event and the kill are the guard's head start.
 * The write still returns its length (the new max was set before the loop); a signal
 * that comes after it returned is taken by the empty handler. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/kernel_io.h"
#include "kio_private.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <glib.h>

#define KILL_ONCE_SIGNAL (SIGRTMIN + 5) /* fs/session.c has + 6, fs/ec_signal.c + 7 */

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
	int dirfd, events, stop;
	uint64_t oom0, kill0; /* the counts before the write */
	pthread_t writer;
} guard;

static void *guard_main(void *data)
{
	guard *g = data;
	struct pollfd pf[2] = { { .fd = g->events, .events = POLLPRI }, { .fd = g->stop, .events = POLLIN } };
	for (;;) {
		uint64_t oom, kill;
		/* read before each poll: the read is what arms the next POLLPRI */
		if (od_kio_guard_read(g->dirfd, g->events, &oom, &kill) < 0)
			return NULL; /* the cgroup went: nothing left to stop */
		if (oom > g->oom0 || kill > g->kill0) {
			pthread_kill(g->writer, KILL_ONCE_SIGNAL);
			return NULL;
		}
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (pf[1].revents)
			return NULL;
	}
}

int od_kio_kill_once(int dirfd, const od_kio_hold_files *kept, uint64_t v, unsigned *kills)
{
	guard g = { .dirfd = dirfd, .writer = pthread_self(), .stop = -1 };
	g.events = od_kio_guard_fd(dirfd, kept, &g.oom0, &g.kill0);
	if (g.events >= 0)
		g.stop = eventfd(0, EFD_CLOEXEC);
	int e = g.events < 0 ? -g.events : g.stop < 0 ? errno : 0;
	pthread_t t;
	if (!e)
		e = pthread_create(&t, NULL, guard_main, &g); /* inherits SCHED_FIFO */
	if (e) {
		g_warning("kill guard: %s: memory.max written without it; the kernel may kill more "
			  "than one task", g_strerror(e));
		if (g.stop >= 0)
			close(g.stop);
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
	uint64_t one = 1;
	while (write(g.stop, &one, sizeof one) < 0 && errno == EINTR)
		;
	pthread_join(t, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	uint64_t oom, kill;
	if (kills)
		*kills = od_kio_guard_read(dirfd, g.events, &oom, &kill) == 0 && kill >= g.kill0 ?
				 (unsigned)(kill - g.kill0) : 0;
	close(g.stop);
	od_kio_guard_put(kept, g.events);
	return r;
}
