/* inval.c — implements od_shadowfs_real_changed (shadowfs.h): what the kernel keeps of the
 * real tree (names and attributes, FS_CACHE_S) is dropped when the watcher's inotify sees
 * the real tree change, so a cgroup made or removed, or a mode or owner changed, there shows
 * through the shadow within milliseconds instead of at the time-out.
 *
 * The watcher calls in on the glib loop, which must never wait: a change is queued, and one
 * thread of ours sends the notifications. Never from a FUSE worker either (sweep.c's
 * reason: fuse_reverse_inval_entry takes the directory's lock, which a worker's own request
 * may hold). Only directories the kernel knows (a node in the table) are told anything; a
 * lost or refused notification leaves the time-out as the bound.
 *
 * What is sent (kernel side: fs/fuse/dir.c fuse_reverse_inval_entry, inode.c
 * fuse_reverse_inval_inode with a negative offset: attributes only):
 *   a subdirectory made, removed or renamed   the name's entry, and the directory's attributes
 *                                             (its link count)
 *   the attributes of an object in the         its attributes (a file's or a subdirectory's,
 *   directory                                  kept FS_CACHE_S like a directory's), and the
 *                                             attributes of the directory's synthetic files,
 *                                             which show a real file's owner and mode
 *                                             (synthetic.c)
 *   the attributes of the directory itself     its attributes (never its entry: a process's
 *                                             working directory or a mount on it stays), and
 *                                             its synthetic files' (cgroup.event_control
 *                                             shows the directory's owner)
 */
#include <string.h>

#include "fs_private.h"
#include "v1layout.h"

typedef struct {
	uint64_t dir;  /* kernfs id; 0: stop */
	bool attr;
	bool has_name;
	char name[];
} inval_item;

struct fs_inval {
	od_shadowfs *fs;
	GAsyncQueue *q;
	GThread *thread;
};

/* The attributes of directory dir's synthetic files: they show a real file's owner and mode,
 * or the directory's own (cgroup.event_control, synthetic.c) */
static void send_synth(od_shadowfs *fs, uint64_t dir)
{
	bool v1 = fs->opts.v1_layout;
	for (unsigned i = 0; i < fs_layout_count(v1); i++) {
		uint64_t id = fs_inodes_find(fs->inodes, fs_inodes_dev(fs->inodes), dir, fs_layout_at(v1, i));
		if (id)
			fuse_lowlevel_notify_inval_inode(fs->se, id, -1, 0);
	}
}

static void send_item(od_shadowfs *fs, const inval_item *it)
{
	uint64_t node = fs_inodes_find_dir(fs->inodes, it->dir);
	if (!node)
		return; /* the kernel has nothing of it */
	if (!it->has_name) {
		fuse_lowlevel_notify_inval_inode(fs->se, node, -1, 0);
		if (it->attr)
			send_synth(fs, it->dir);
		return;
	}
	if (!it->attr) {
		fuse_lowlevel_notify_inval_entry(fs->se, node, it->name, strlen(it->name));
		fuse_lowlevel_notify_inval_inode(fs->se, node, -1, 0);
		return;
	}
	uint64_t child = fs_inodes_find_child(fs->inodes, it->dir, it->name);
	if (child)
		fuse_lowlevel_notify_inval_inode(fs->se, child, -1, 0);
	send_synth(fs, it->dir);
}

static gpointer inval_thread(gpointer data)
{
	fs_inval *v = data;
	for (;;) {
		inval_item *it = g_async_queue_pop(v->q);
		bool stop = it->dir == 0;
		if (!stop)
			send_item(v->fs, it);
		g_free(it);
		if (stop)
			return NULL;
	}
}

fs_inval *fs_inval_new(od_shadowfs *fs)
{
	fs_inval *v = g_new0(fs_inval, 1);
	v->fs = fs;
	v->q = g_async_queue_new();
	GError *e = NULL;
	v->thread = g_thread_try_new("oomd-fs-inval", inval_thread, v, &e);
	if (!v->thread) {
		g_warning("cannot start the cache invalidator: %s; changes made in the real tree "
			  "show through the shadow after %.1f s", e->message, fs->opts.cache_s);
		g_error_free(e);
		g_async_queue_unref(v->q);
		g_free(v);
		return NULL;
	}
	return v;
}

static void push(fs_inval *v, uint64_t dir, const char *name, bool attr)
{
	size_t len = name ? strlen(name) + 1 : 0;
	inval_item *it = g_malloc(sizeof *it + len);
	it->dir = dir;
	it->attr = attr;
	it->has_name = name != NULL;
	if (name)
		memcpy(it->name, name, len);
	g_async_queue_push(v->q, it);
}

void fs_inval_free(fs_inval *v)
{
	if (!v)
		return;
	push(v, 0, NULL, false);
	g_thread_join(v->thread);
	g_async_queue_unref(v->q);
	g_free(v);
}

void od_shadowfs_real_changed(void *fs, uint64_t dir, const char *name, bool attr)
{
	od_shadowfs *s = fs;
	/* Nothing to tell about a directory the kernel has no node of (the daemon's own
	 * setxattr on each of N cgroups at a subtree write reports IN_ATTRIB on each): no
	 * allocation, no wake-up of the thread. A LOOKUP that read the directory just before
	 * the change and interns it just after is missed: the time-out bounds that one. */
	if (s && s->inval && dir && fs_inodes_find_dir(s->inodes, dir))
		push(s->inval, dir, name, attr);
}
