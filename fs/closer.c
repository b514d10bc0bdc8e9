/* closer.c — see fdguard.h. One thread closes descriptors taken from callers that
 * turned out not to be what the caller said: closing a file on a FUSE mount the
 * caller serves sends FUSE_FLUSH and waits for the caller's answer (fuse_flush,
 * uninterruptible but for a fatal signal), which must never happen on a FUSE
 * worker or the notifier. Here it harms no one: the thread blocks, the count of
 * pending descriptors grows, and registrations are refused past
 * FS_CLOSER_MAX_PENDING until the caller's server answers or dies.
 */
#include <errno.h>
#include <unistd.h>

#include <glib.h>

#include "fdguard.h"

struct fs_closer {
	gint refs;    /* the owner and the thread */
	gint pending; /* queued or being closed */
	GAsyncQueue *q; /* fd + 1 (a queue cannot hold NULL), or STOP */
};

#define STOP GINT_TO_POINTER(-1)

static void closer_unref(fs_closer *c)
{
	if (!g_atomic_int_dec_and_test(&c->refs))
		return;
	g_async_queue_unref(c->q);
	g_free(c);
}

static gpointer closer_thread(gpointer data)
{
	fs_closer *c = data;
	for (;;) {
		gpointer item = g_async_queue_pop(c->q);
		if (item == STOP)
			break;
		close(GPOINTER_TO_INT(item) - 1); /* may block: that is what this thread is for */
		g_atomic_int_add(&c->pending, -1);
	}
	/* Whatever is left was queued after the stop: close it too. */
	gpointer item;
	while ((item = g_async_queue_try_pop(c->q)))
		if (item != STOP)
			close(GPOINTER_TO_INT(item) - 1);
	closer_unref(c);
	return NULL;
}

fs_closer *fs_closer_new(int *err)
{
	fs_closer *c = g_new0(fs_closer, 1);
	c->refs = 2;
	c->q = g_async_queue_new();
	GError *ge = NULL;
	GThread *t = g_thread_try_new("oomd-fs-closer", closer_thread, c, &ge);
	if (!t) {
		g_warning("cannot start the descriptor closer thread: %s", ge->message);
		g_error_free(ge);
		*err = EAGAIN;
		g_async_queue_unref(c->q);
		g_free(c);
		return NULL;
	}
	g_thread_unref(t); /* detached: a close stuck on a caller's server must not hang shutdown */
	return c;
}

void fs_closer_free(fs_closer *c)
{
	if (!c)
		return;
	g_async_queue_push(c->q, STOP);
	closer_unref(c);
}

void fs_closer_give(fs_closer *c, int fd)
{
	if (fd < 0)
		return;
	g_atomic_int_inc(&c->pending);
	g_async_queue_push(c->q, GINT_TO_POINTER(fd + 1));
}

bool fs_closer_backed_up(fs_closer *c)
{
	return g_atomic_int_get(&c->pending) >= FS_CLOSER_MAX_PENDING;
}
