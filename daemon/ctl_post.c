/* ctl_post.c — implements ctl_post.h. A ring of CTL_POST_SLOTS lines: a poster takes the
 * next sequence number, and the slot it names if that slot is free (compare-and-swap);
 * the loop writes the full slots in sequence order and frees them. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_post.h"

#include <errno.h>
#include <glib-unix.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum { SLOT_FREE, SLOT_WRITING, SLOT_FULL };

static int by_seq(const void *a, const void *b)
{
	const ctl_post_slot *x = *(ctl_post_slot *const *)a, *y = *(ctl_post_slot *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void drain(od_controller *c)
{
	ctl_post_slot *full[CTL_POST_SLOTS];
	size_t n = 0;
	for (size_t i = 0; i < CTL_POST_SLOTS; i++)
		if (__atomic_load_n(&c->post[i].state, __ATOMIC_ACQUIRE) == SLOT_FULL)
			full[n++] = &c->post[i];
	qsort(full, n, sizeof *full, by_seq);
	for (size_t i = 0; i < n; i++) {
		if (full[i]->warn)
			g_warning("%s", full[i]->line);
		else
			g_message("%s", full[i]->line);
		__atomic_store_n(&full[i]->state, SLOT_FREE, __ATOMIC_RELEASE);
	}
	guint lost = (guint)__atomic_exchange_n(&c->post_lost, 0, __ATOMIC_RELAXED);
	if (lost)
		g_warning("%u log lines of the deadline thread or the kill actuator were not logged "
			  "(all %d slots taken)", lost, CTL_POST_SLOTS);
}

static gboolean on_posted(gint fd, GIOCondition cond, gpointer data)
{
	(void)cond;
	uint64_t n;
	if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
		g_warning("read of the posted-lines eventfd: %s", g_strerror(errno));
	drain(data);
	return G_SOURCE_CONTINUE;
}

int ctl_post_init(od_controller *c)
{
	c->post_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->post_efd < 0) {
		int e = errno;
		g_critical("eventfd for the posted log lines: %s", g_strerror(e));
		return e;
	}
	c->post_src = g_unix_fd_add(c->post_efd, G_IO_IN, on_posted, c);
	return 0;
}

void ctl_post_free(od_controller *c)
{
	if (c->post_src)
		g_source_remove(c->post_src);
	drain(c); /* the threads that post have stopped: nothing is lost at exit */
	close(c->post_efd);
}

void ctl_post_line(od_controller *c, bool warn, const char *fmt, ...)
{
	guint64 seq = __atomic_fetch_add(&c->post_seq, 1, __ATOMIC_RELAXED);
	ctl_post_slot *s = &c->post[seq % CTL_POST_SLOTS];
	int expect = SLOT_FREE;
	if (!__atomic_compare_exchange_n(&s->state, &expect, SLOT_WRITING, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&c->post_lost, 1, __ATOMIC_RELAXED);
	} else {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->line, sizeof s->line, fmt, ap);
		va_end(ap);
		s->seq = seq;
		s->warn = warn;
		__atomic_store_n(&s->state, SLOT_FULL, __ATOMIC_RELEASE);
	}
	uint64_t one = 1;
	if (write(c->post_efd, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, the loop has a wake-up pending anyway */
	}
}
