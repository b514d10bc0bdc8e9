/* poll.c — poll() on passed-through kernel files. A FUSE poll request is
 * answered at once from a zero-timeout poll of the backing descriptor (a
 * handler that waited would pin a worker and leave the caller in D state).
 * When nothing is pending, the poll handle is kept and one background thread
 * waits on every such descriptor for POLLPRI/POLLERR (kernfs_notify on
 * memory.events, cgroup.events, PSI triggers), then notifies the kernel.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fs_private.h"

#define FS_POLL_FIRED (POLLPRI | POLLERR | POLLHUP | POLLNVAL)

struct fs_poller {
	GMutex lock;
	GHashTable *watch; /* fs_file* (one reference held) -> struct fuse_pollhandle* */
	int efd;           /* wakes the thread when the watch set changes */
	bool stop;
	GThread *thread;
};

static void kick(fs_poller *p)
{
	uint64_t one = 1;
	if (write(p->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("poll thread: cannot wake it through its eventfd: %s", g_strerror(errno));
}

static void notify(struct fuse_pollhandle *ph)
{
	int r = fuse_lowlevel_notify_poll(ph);
	/* ENOENT: the kernel no longer waits on it (the poller went away). */
	if (r < 0 && r != -ENOENT && r != -EBADF && r != -ENODEV)
		g_warning("poll thread: notification failed: %s", g_strerror(-r));
	fuse_pollhandle_destroy(ph);
}

static gpointer poll_thread(gpointer data)
{
	fs_poller *p = data;
	GArray *pfds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
	GPtrArray *files = g_ptr_array_new_with_free_func((GDestroyNotify)fs_file_unref);

	for (;;) {
		g_array_set_size(pfds, 0);
		g_ptr_array_set_size(files, 0);

		g_mutex_lock(&p->lock);
		if (p->stop) {
			g_mutex_unlock(&p->lock);
			break;
		}
		struct pollfd e = { .fd = p->efd, .events = POLLIN };
		g_array_append_val(pfds, e);
		GHashTableIter it;
		gpointer k;
		g_hash_table_iter_init(&it, p->watch);
		while (g_hash_table_iter_next(&it, &k, NULL)) {
			fs_file *f = k;
			/* Our own reference keeps the descriptor open (and its number ours) while we poll it. */
			g_ptr_array_add(files, fs_file_ref(f));
			struct pollfd pf = { .fd = f->fd, .events = POLLPRI };
			g_array_append_val(pfds, pf);
		}
		g_mutex_unlock(&p->lock);

		int n = poll((struct pollfd *)pfds->data, pfds->len, -1);
		if (n < 0) {
			if (errno != EINTR)
				g_warning("poll thread: poll failed: %s", g_strerror(errno));
			continue;
		}
		struct pollfd *v = (struct pollfd *)pfds->data;
		if (v[0].revents & POLLIN) {
			uint64_t cnt;
			if (read(p->efd, &cnt, sizeof cnt) < 0 && errno != EAGAIN)
				g_warning("poll thread: eventfd read failed: %s", g_strerror(errno));
		}
		for (guint i = 1; i < pfds->len; i++) {
			if (!(v[i].revents & FS_POLL_FIRED))
				continue;
			fs_file *f = g_ptr_array_index(files, i - 1);
			struct fuse_pollhandle *ph = NULL;
			gpointer val;
			g_mutex_lock(&p->lock);
			if (g_hash_table_lookup_extended(p->watch, f, NULL, &val)) {
				ph = val;
				g_hash_table_steal(p->watch, f);
			}
			g_mutex_unlock(&p->lock);
			if (ph) {
				notify(ph);
				fs_file_unref(f); /* the watch set's reference */
			}
		}
	}
	g_ptr_array_unref(files);
	g_array_unref(pfds);
	return NULL;
}

fs_poller *fs_poller_new(int *err)
{
	fs_poller *p = g_new0(fs_poller, 1);
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0) {
		*err = errno;
		g_free(p);
		return NULL;
	}
	g_mutex_init(&p->lock);
	p->watch = g_hash_table_new(g_direct_hash, g_direct_equal);
	GError *e = NULL;
	p->thread = g_thread_try_new("oomd-fs-poll", poll_thread, p, &e);
	if (!p->thread) {
		g_warning("cannot start the poll thread: %s", e->message);
		g_error_free(e);
		*err = EAGAIN;
		g_hash_table_destroy(p->watch);
		close(p->efd);
		g_mutex_clear(&p->lock);
		g_free(p);
		return NULL;
	}
	return p;
}

void fs_poller_free(fs_poller *p)
{
	if (!p)
		return;
	g_mutex_lock(&p->lock);
	p->stop = true;
	g_mutex_unlock(&p->lock);
	kick(p);
	g_thread_join(p->thread);

	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, p->watch);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		fuse_pollhandle_destroy(v);
		fs_file_unref(k);
	}
	g_hash_table_destroy(p->watch);
	close(p->efd);
	g_mutex_clear(&p->lock);
	g_free(p);
}

unsigned fs_poller_poll(fs_poller *p, fs_file *f, struct fuse_pollhandle *ph)
{
	struct pollfd pf = { .fd = f->fd, .events = POLLIN | POLLOUT | POLLPRI | POLLRDNORM | POLLWRNORM };
	unsigned revents;
	if (poll(&pf, 1, 0) < 0)
		revents = POLLERR;
	else
		revents = (unsigned)pf.revents;

	if (!ph)
		return revents;
	if (revents & FS_POLL_FIRED) {
		fuse_pollhandle_destroy(ph); /* ready now; the caller will poll again after reading */
		return revents;
	}

	struct fuse_pollhandle *old = NULL;
	bool added = false;
	g_mutex_lock(&p->lock);
	gpointer val;
	if (g_hash_table_lookup_extended(p->watch, f, NULL, &val)) {
		old = val;
		g_hash_table_insert(p->watch, f, ph);
	} else {
		g_hash_table_insert(p->watch, fs_file_ref(f), ph);
		added = true;
	}
	g_mutex_unlock(&p->lock);
	if (old)
		fuse_pollhandle_destroy(old);
	if (added)
		kick(p);
	return revents;
}

void fs_poller_forget(fs_poller *p, fs_file *f)
{
	gpointer val = NULL;
	bool had;
	g_mutex_lock(&p->lock);
	had = g_hash_table_lookup_extended(p->watch, f, NULL, &val);
	if (had)
		g_hash_table_steal(p->watch, f);
	g_mutex_unlock(&p->lock);
	if (!had)
		return;
	fuse_pollhandle_destroy(val);
	fs_file_unref(f);
	kick(p); /* drop its descriptor from the thread's set */
}
