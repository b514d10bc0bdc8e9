/* ec_signal.c — see ec_signal.h.
 *
 * Kernel facts (fs/eventfd.c):
 * - eventfd_poll reports POLLOUT while ULLONG_MAX - 1 > count (6.1, 6.12): exactly
 *   when a write of 1 would not sleep. A counter at 2^64-2 already wakes its reader
 *   (POLLIN), so nothing is lost by skipping it.
 * - eventfd_write sleeps TASK_INTERRUPTIBLE while ULLONG_MAX - count <= 1 unless the
 *   open file description is O_NONBLOCK (then EAGAIN). 6.1 open-codes the loop and
 *   returns -ERESTARTSYS when signal_pending(); 6.12 and later use
 *   wait_event_interruptible_locked_irq, which returns -ERESTARTSYS the same way.
 *   With a handler installed without SA_RESTART, -ERESTARTSYS reaches us as EINTR.
 * - The flags are the caller's (pidfd_getfd shares the open file description): we
 *   must not set O_NONBLOCK, that would change the caller's descriptor too.
 * Between our poll and our write the caller can fill the counter from another
 * thread; a one-shot timer directed at this thread (SIGEV_THREAD_ID) then interrupts
 * the write. A timer that fires when the write did not sleep is harmless: the
 * handler does nothing, and eventfd_write looks at signal_pending() only while it
 * waits.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ec_signal.h"

/* Not used elsewhere in the daemon; glibc keeps the first two real-time signals. */
#define EC_SIGNAL_NO (SIGRTMIN + 7)

struct ec_signal {
	timer_t timer;
};

static void on_timer(int sig)
{
	(void)sig; /* its only purpose is to interrupt eventfd_write */
}

ec_signal *ec_signal_new(void)
{
	struct sigaction sa = { .sa_handler = on_timer, .sa_flags = 0 }; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	if (sigaction(EC_SIGNAL_NO, &sa, NULL) < 0)
		return NULL;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, EC_SIGNAL_NO);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	ec_signal *s = g_new0(ec_signal, 1);
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = EC_SIGNAL_NO };
	/* Debian 12's glibc 2.36 has no sigev_notify_thread_id: the union member it names */
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &s->timer) < 0) {
		int e = errno;
		g_free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void ec_signal_free(ec_signal *s)
{
	if (!s)
		return;
	timer_delete(s->timer);
	g_free(s);
}

static void arm(ec_signal *s, long ms)
{
	if (!s)
		return;
	struct itimerspec it = { .it_value = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L } };
	timer_settime(s->timer, 0, &it, NULL);
}

ec_signal_result ec_signal_post(ec_signal *s, int efd)
{
	struct pollfd pf = { .fd = efd, .events = POLLOUT };
	int r;
	do
		r = poll(&pf, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return EC_SIGNAL_FAILED;
	if (r == 0 || !(pf.revents & POLLOUT))
		return EC_SIGNAL_SATURATED;
	return ec_signal_write(s, efd);
}

ec_signal_result ec_signal_write(ec_signal *s, int efd)
{
	uint64_t one = 1;
	if (!s) {
		/* No timer to bound it: a blocking write could wait as long as the caller likes,
		 * so none is made (registrations are refused meanwhile: fs_evctl.no_timer). */
		errno = ENOTSUP;
		return EC_SIGNAL_FAILED;
	}
	arm(s, EC_SIGNAL_TIMEOUT_MS);
	ssize_t n = write(efd, &one, sizeof one);
	int e = errno;
	arm(s, 0);
	if (n == sizeof one)
		return EC_SIGNAL_SENT;
	if (e == EINTR)
		return EC_SIGNAL_WEDGED;
	if (e == EAGAIN)
		return EC_SIGNAL_SATURATED; /* O_NONBLOCK and filled meanwhile */
	errno = e;
	return EC_SIGNAL_FAILED;
}
