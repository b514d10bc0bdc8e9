/* sweep.c — dropping the kernel's unused entries, so that their nodes (and the
 * descriptors they hold) go. Measured (s-fdreserve, issue 21 item 3): after the
 * processes that pinned 4,096 names through the shadow were killed, the daemon still
 * held 4,092 descriptors 14.5 s later, until `echo 2 > /proc/sys/vm/drop_caches`. The
 * kernel keeps a FUSE dentry whose entry timeout (0 here) ran out in its cache: it is
 * deleted at its last dput only when the connection has delete_stale
 * (fuse_dentry_settime: DCACHE_OP_DELETE; virtiofs sets it, /dev/fuse mounts cannot),
 * and FORGET goes out only when the inode is evicted. The sweeper sends
 * FUSE_NOTIFY_INVAL_ENTRY for every file node (fuse_reverse_inval_entry: d_invalidate,
 * then its own dput frees an unused dentry, and the inode with it): names nobody holds
 * go at once, names in use are looked up again at their next path walk (an open file
 * keeps working). Directories are left alone: a process's cwd must not turn "deleted".
 *
 * A periodic sweep spares the names made again after a sweep (a directory remembers a bit
 * per name hash of the file names it had nodes for: fs_node.repeat) and looked up in the
 * last opts.name_keep_s seconds (30), the most recent opts.name_keep_max (4,096) of them,
 * and no more than hold a uid's share of the descriptor budget (fdguard.h). A
 * monitor reads the same files every 10-15 s, and a sweep between its rounds made each round
 * make every name afresh (an O_PATH open, an fstat, a node, the kernel's inode, and a FORGET
 * after the sweep: 6 system calls and 0.8 requests more a file, x-stat-walk on 7,
 * 2026-12-06; and 11-15 s walks of 2,000 files where 3 s is usual, twice in ten, x-sweep-ab).
 * A name used once (an operator's limit write in each of 10,000 cgroups) goes at the next
 * sweep as before, so it costs no memory after. The 64 bits are a directory's whole memory:
 * where many names were looked up (a listing of the directory sets a bit for each of its
 * 50-90 files) most later first-time names pass for repeats and are kept like a monitor's,
 * within the same 30 s and the same bound. A kick (a uid near its share) takes every
 * unused name, whoever's.
 *
 * One thread, never on a request's path (an invalidation from a worker could wait for
 * the directory lock that worker's own request holds). It sweeps when kicked (a uid's
 * nodes passed half its share, inodes.c) and, while file nodes hold more descriptors
 * than FS_SWEEP_IDLE, every opts.sweep_period_s seconds (5), the period doubling up to
 * FS_SWEEP_BACKOFF times that while a sweep frees nothing (the names are in use or kept)
 * and back to the start at a kick or when one frees something.
 * Directory nodes (a cgroup tree's worth) never make it busy: a daemon with few file
 * names held never wakes for it. At most one sweep per second.
 */
#include <errno.h>
#include <string.h>

#include "fs_private.h"

/* the period (opts.sweep_period_s) grows to this many times itself while sweeps free nothing */
#define FS_SWEEP_BACKOFF 4

struct fs_sweeper {
	od_shadowfs *fs;
	GMutex lock;
	GCond cond;
	bool kicked, stop;
	GThread *thread;
};

/* all: every unused name (a kick: a uid near its share); else the first-time ones, and
 * the repeated ones not looked up for opts.name_keep_s or beyond opts.name_keep_max. */
static unsigned sweep(od_shadowfs *fs, bool all)
{
	GArray *parents = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	fs_inodes_files(fs->inodes, all ? 0 : fs->opts.name_keep_s, fs->opts.name_keep_max, parents,
			names);
	unsigned n = 0;
	for (guint i = 0; i < names->len; i++) {
		const char *name = g_ptr_array_index(names, i);
		int r = fuse_lowlevel_notify_inval_entry(fs->se, g_array_index(parents, uint64_t, i),
							 name, strlen(name));
		n += r == 0;
		if (r == -ENODEV || r == -EBADF)
			break; /* the connection is going */
	}
	g_ptr_array_unref(names);
	g_array_unref(parents);
	return n;
}

/* Never holds its own lock while it asks the inode table (whose lock is held when
 * inodes.c kicks). */
static gpointer sweep_thread(gpointer data)
{
	fs_sweeper *w = data;
	gint64 next_ok = 0; /* no sweep before this (one a second) */
	const gint64 first = (gint64)MAX(w->fs->opts.sweep_period_s, 1u) * G_USEC_PER_SEC;
	gint64 period = first;
	for (;;) {
		size_t files = 0;
		fs_inodes_fds(w->fs->inodes, 0, NULL, &files);
		bool busy = files > FS_SWEEP_IDLE;
		g_mutex_lock(&w->lock);
		gint64 now = g_get_monotonic_time();
		if (!w->stop && (!w->kicked || now < next_ok)) {
			if (busy || w->kicked)
				g_cond_wait_until(&w->cond, &w->lock,
						  MAX(next_ok, now + (w->kicked ? 0 : period)));
			else
				g_cond_wait(&w->cond, &w->lock); /* idle: only a kick wakes us */
		}
		bool stop = w->stop, kicked = w->kicked;
		now = g_get_monotonic_time();
		bool due = now >= next_ok && (kicked || busy);
		if (due)
			w->kicked = false;
		g_mutex_unlock(&w->lock);
		if (stop)
			break;
		if (!due)
			continue;
		/* judged against what there was at the sweep, not before the wait: names made
		 * meanwhile would pass for names the sweep freed */
		fs_inodes_fds(w->fs->inodes, 0, NULL, &files);
		sweep(w->fs, kicked);
		next_ok = g_get_monotonic_time() + G_USEC_PER_SEC;
		/* what the kernel let go arrives as FORGETs shortly after: judged at the next turn */
		size_t after = 0;
		g_usleep(100000);
		fs_inodes_fds(w->fs->inodes, 0, NULL, &after);
		if (kicked || after < files)
			period = first;
		else
			period = MIN(period * 2, FS_SWEEP_BACKOFF * first);
	}
	return NULL;
}

fs_sweeper *fs_sweeper_new(od_shadowfs *fs)
{
	fs_sweeper *w = g_new0(fs_sweeper, 1);
	w->fs = fs;
	g_mutex_init(&w->lock);
	g_cond_init(&w->cond);
	GError *e = NULL;
	w->thread = g_thread_try_new("oomd-fs-sweep", sweep_thread, w, &e);
	if (!w->thread) {
		g_warning("cannot start the entry sweeper: %s; names stay cached until reclaim",
			  e->message);
		g_error_free(e);
		g_cond_clear(&w->cond);
		g_mutex_clear(&w->lock);
		g_free(w);
		return NULL;
	}
	fs_inodes_set_sweeper(fs->inodes, w);
	return w;
}

void fs_sweeper_kick(fs_sweeper *w)
{
	if (!w)
		return;
	g_mutex_lock(&w->lock);
	w->kicked = true;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
}

void fs_sweeper_wake(fs_sweeper *w)
{
	if (!w)
		return;
	g_mutex_lock(&w->lock);
	g_cond_signal(&w->cond); /* an idle wait becomes the busy one: a sweep a period later */
	g_mutex_unlock(&w->lock);
}

void fs_sweeper_free(fs_sweeper *w)
{
	if (!w)
		return;
	fs_inodes_set_sweeper(w->fs->inodes, NULL);
	g_mutex_lock(&w->lock);
	w->stop = true;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
	g_thread_join(w->thread); /* at most a sweep and a second */
	g_cond_clear(&w->cond);
	g_mutex_clear(&w->lock);
	g_free(w);
}
