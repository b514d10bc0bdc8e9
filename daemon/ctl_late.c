/* ctl_late.c — implements ctl_late.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_late.h"

#include <errno.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static gboolean on_late(gint fd, GIOCondition cond, gpointer data)
{
	(void)cond;
	od_controller *c = data;
	uint64_t n;
	if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
		g_warning("read of the late-tick eventfd: %s", g_strerror(errno));
	char line[sizeof c->late_line];
	g_mutex_lock(&c->late_lock);
	bool have = c->late_full;
	if (have)
		memcpy(line, c->late_line, sizeof line);
	c->late_full = false;
	g_mutex_unlock(&c->late_lock);
	guint more = (guint)__atomic_exchange_n(&c->late_unlogged, 0, __ATOMIC_RELAXED);
	if (have && more)
		g_message("%s (and %u more late ticks since, not logged one by one)", line, more);
	else if (have)
		g_message("%s", line);
	else if (more)
		g_message("%u late timer ticks, not logged one by one", more);
	return G_SOURCE_CONTINUE;
}

int ctl_late_init(od_controller *c)
{
	g_mutex_init(&c->late_lock);
	c->late_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->late_efd < 0) {
		int e = errno;
		g_critical("eventfd for the late-tick line: %s", g_strerror(e));
		g_mutex_clear(&c->late_lock);
		return e;
	}
	c->late_src = g_unix_fd_add(c->late_efd, G_IO_IN, on_late, c);
	return 0;
}

void ctl_late_free(od_controller *c)
{
	if (c->late_src)
		g_source_remove(c->late_src);
	close(c->late_efd);
	g_mutex_clear(&c->late_lock);
}

void ctl_late_post(od_controller *c, int64_t late_ns, const char *why)
{
	/* trylock: the loop holds it only to copy the line, but may be preempted meanwhile */
	if (!g_mutex_trylock(&c->late_lock)) {
		__atomic_add_fetch(&c->late_unlogged, 1, __ATOMIC_RELAXED);
	} else {
		if (c->late_full) {
			__atomic_add_fetch(&c->late_unlogged, 1, __ATOMIC_RELAXED);
		} else {
			snprintf(c->late_line, sizeof c->late_line, "timer %.1f ms late%s", late_ns / 1e6, why);
			c->late_full = true;
		}
		g_mutex_unlock(&c->late_lock);
	}
	uint64_t one = 1;
	if (write(c->late_efd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, the loop has a wake-up pending anyway */
	}
}
