/* ctl_deadline.c — implements ctl_deadline.h. Deadlines have a thread of their own
 * because the loop, under global pressure, was seen blocked in the kernel for
 * 600 ms outside any of its actions (docs/DESIGN.md, "the late tick"); the
 * deadline thread touches no new memory and takes no lock but the engine's.
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_deadline.h"
#include "ctl_act.h"
#include "ctl_post.h"
#include "ctl_lock.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

int ctl_deadlines_init(od_controller *c)
{
	/* Blocking: the deadline thread sleeps in read() until the earliest deadline. */
	c->tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
	if (c->tfd < 0) {
		int e = errno;
		g_critical("timerfd_create(CLOCK_BOOTTIME): %s", g_strerror(e));
		return e;
	}
	c->armed = OE_NO_DEADLINE;
	return 0;
}

void ctl_deadlines_free(od_controller *c)
{
	close(c->tfd);
}

void ctl_rearm_locked(od_controller *c)
{
	int64_t next = oe_next_wakeup(c->eng);
	if (next == c->armed)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	if (next != OE_NO_DEADLINE) {
		if (next <= 0)
			next = 1; /* zero would disarm; 1 ns is "now" */
		its.it_value.tv_sec = next / 1000000000LL;
		its.it_value.tv_nsec = next % 1000000000LL;
	}
	if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		g_critical("timerfd_settime: %s", g_strerror(errno));
	c->armed = next;
}

/* A tick later than this is logged (one line, after the tick's actions). */
#define LATE_TICK_NS (100 * 1000000LL)

/* woke: when read() on the timerfd returned (diagnostics build only, else 0). */
static void tick(od_controller *c, const ctl_ctx *self, int64_t woke)
{
	ctl_lock(c, "tick");
	od_diag_mark(OD_DIAG_TICK);
	int64_t now = od_now();
	int64_t armed = c->armed;
	int64_t late = armed > 0 && armed != OE_NO_DEADLINE ? now - armed : 0;
	od_diag_tick_locked(c->diag);
	c->armed = INT64_MIN; /* the timer has fired: always re-arm */
	__atomic_store_n(&c->tick_late, late, __ATOMIC_RELAXED);
	oe_tick(c->eng, now, &c->acts);
	ctl_finish_locked(c, self);
	/* After the tick's actions, and written by the loop (ctl_post.h: a log write can
	 * stall in reclaim, and the next tick would wait for it). */
	const char *why = od_diag_tick_done(c->diag, late > LATE_TICK_NS, armed, woke, now);
	if (late > LATE_TICK_NS)
		ctl_post_line(c, false, "timer %.1f ms late%s", late / 1e6, why);
}

static gpointer deadline_main(gpointer data)
{
	od_controller *c = data;
	const ctl_ctx self = { .who = CTL_DEADLINE };
	ctl_lock_name_thread("the deadline thread");
	ctl_prefault_stack();
	ctl_apply_rt(c, "the deadline thread");
	od_diag_deadline_thread(c->diag);
	while (!g_atomic_int_get(&c->deadlines_stop)) {
		uint64_t expirations;
		/* Each wake-up is a beat for the watchdog (fdstore.c), also without deadlines. */
		struct pollfd p = { .fd = c->tfd, .events = POLLIN };
		int beat = g_atomic_int_get(&c->beat_ms);
		int ready = beat > 0 ? poll(&p, 1, beat) : 1;
		__atomic_add_fetch(&c->beats, 1, __ATOMIC_RELAXED);
		if (ready == 0 || (ready < 0 && errno == EINTR))
			continue;
		if (read(c->tfd, &expirations, sizeof expirations) < 0) {
			if (errno != EINTR) {
				/* Cannot happen with a valid timerfd; never spin on it. */
				g_critical("read timerfd: %s", g_strerror(errno));
				g_usleep(1000);
			}
			continue;
		}
		if (!g_atomic_int_get(&c->deadlines_stop))
			tick(c, &self, od_diag_clock());
	}
	return NULL;
}

void ctl_deadlines_stop(od_controller *c)
{
	if (!c->deadlines)
		return;
	/* Woken by a timer that has already passed; it sees the flag first. */
	g_atomic_int_set(&c->deadlines_stop, 1);
	struct itimerspec its = { .it_value = { .tv_nsec = 1 } };
	ctl_lock(c, "stop");
	if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		g_critical("timerfd_settime: %s", g_strerror(errno));
	c->armed = 1;
	ctl_unlock(c);
	g_thread_join(c->deadlines);
	c->deadlines = NULL;
}

void od_controller_set_heartbeat(od_controller *c, int ms)
{
	g_atomic_int_set(&c->beat_ms, MAX(ms, 0));
}

uint64_t od_controller_beats(od_controller *c)
{
	return __atomic_load_n(&c->beats, __ATOMIC_RELAXED);
}

void od_controller_set_rt_priority(od_controller *c, int prio)
{
	g_atomic_int_set(&c->rt_prio, CLAMP(prio, 0, 99));
	od_order_kick(c->order); /* the kill actuator applies it when it next wakes */
}

void od_controller_start_deadlines(od_controller *c)
{
	if (!c->deadlines)
		c->deadlines = g_thread_new("oomd-deadlines", deadline_main, c);
}
