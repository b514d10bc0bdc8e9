/* closer.c — see fdguard.h. Closes descriptors taken from callers that turned out
 * not to be what the caller said: closing a file on a FUSE mount the caller
 * serves sends FUSE_FLUSH and waits for the caller's answer (fuse_flush,
 * uninterruptible but for a fatal signal), which must never happen on a FUSE
 * worker or the notifier. Each close gets a thread of its own, which may block
 * without harm to anyone but its owner: the owner's count of pending closes
 * stays up, and its registrations are refused past FS_CLOSER_MAX_PER_OWNER until
 * its server answers or dies.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <glib.h>

#include "fdguard.h"

/* A close needs little stack; the default (8 MiB of address space) times 256 would not. */
#define CLOSER_STACK (64 * 1024)

struct fs_closer {
	gint refs;          /* the owner's and one per running close */
	GMutex lock;
	GHashTable *owners; /* owner (uint64_t*) -> pending closes (GUINT_TO_POINTER) */
	unsigned others;    /* pending closes of every owner but root */
};

typedef struct {
	fs_closer *c;
	int fd;
	uint64_t owner;
} job;

static void closer_unref(fs_closer *c)
{
	if (!g_atomic_int_dec_and_test(&c->refs))
		return;
	g_hash_table_unref(c->owners);
	g_mutex_clear(&c->lock);
	g_free(c);
}

static unsigned pending_locked(fs_closer *c, uint64_t owner)
{
	return GPOINTER_TO_UINT(g_hash_table_lookup(c->owners, &owner));
}

static void count_locked(fs_closer *c, uint64_t owner, int by)
{
	unsigned n = pending_locked(c, owner) + (unsigned)by;
	if (n)
		g_hash_table_insert(c->owners, g_memdup2(&owner, sizeof owner), GUINT_TO_POINTER(n));
	else
		g_hash_table_remove(c->owners, &owner);
	if (owner != 0)
		c->others += (unsigned)by;
}

static void *close_one(void *data)
{
	job *j = data;
	close(j->fd); /* may block: that is what this thread is for */
	g_mutex_lock(&j->c->lock);
	count_locked(j->c, j->owner, -1);
	g_mutex_unlock(&j->c->lock);
	closer_unref(j->c);
	g_free(j);
	return NULL;
}

fs_closer *fs_closer_new(int *err)
{
	(void)err;
	fs_closer *c = g_new0(fs_closer, 1);
	c->refs = 1;
	g_mutex_init(&c->lock);
	c->owners = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	return c;
}

void fs_closer_free(fs_closer *c)
{
	if (c)
		closer_unref(c);
}

void fs_closer_give(fs_closer *c, int fd, uint64_t owner)
{
	if (fd < 0)
		return;
	job *j = g_new0(job, 1);
	j->c = c;
	j->fd = fd;
	j->owner = owner;
	g_mutex_lock(&c->lock);
	count_locked(c, owner, +1);
	g_mutex_unlock(&c->lock);
	g_atomic_int_inc(&c->refs);
	pthread_attr_t a;
	pthread_t t;
	int r = pthread_attr_init(&a);
	if (!r) {
		(void)pthread_attr_setstacksize(&a, CLOSER_STACK);
		(void)pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&t, &a, close_one, j);
		pthread_attr_destroy(&a);
	}
	if (r) {
		/* Never close it here (this is a FUSE worker): keep it, counted against
		 * its owner for good, so that this owner is refused sooner. */
		g_warning("cannot start a thread to close descriptor %d of a caller: %s; kept open",
			  fd, g_strerror(r));
		closer_unref(c);
		g_free(j);
	}
}

bool fs_closer_backed_up(fs_closer *c, uint64_t owner)
{
	g_mutex_lock(&c->lock);
	bool full = pending_locked(c, owner) >= FS_CLOSER_MAX_PER_OWNER ||
		    (owner != 0 && c->others >= FS_CLOSER_MAX_PENDING);
	g_mutex_unlock(&c->lock);
	return full;
}
