/* handles.c — the kernel's file handles (fh) of open files and directories. An fh is
 * no address: it is a serial with what the open decided (ids.h), looked up in one
 * table. A previous server's fh (another generation) is opened again from the real
 * tree on its first use after a takeover — the node from its id (inodes.c), the open
 * from the node and the fh's access mode and write errno (file.c, dir.c) — and then
 * kept under the same fh, so that its release finds it. Nothing in an fh is trusted
 * beyond what an open of ours wrote there: the kernel only sends fh values a server
 * of this connection returned.
 */
#include <errno.h>

#include "fs_private.h"

typedef struct {
	uint64_t fh;
	gpointer h;
	fs_handle_close_fn close_fn;
} fs_handle;

static GHashTable *table(od_shadowfs *fs)
{
	/* created with the session (g_int64_hash on fs_handle.fh) */
	return fs->handles;
}

uint64_t fs_handle_track(od_shadowfs *fs, gpointer h, fs_handle_close_fn close_fn, int acc,
			 int write_err, bool plain)
{
	fs_handle *e = g_new(fs_handle, 1);
	e->h = h;
	e->close_fn = close_fn;
	g_mutex_lock(&fs->handles_lock);
	fs_fh_info i = { .gen = fs->generation, .acc = acc & O_ACCMODE, .write_err = write_err,
			 .plain = plain, .serial = ++fs->next_serial };
	if (i.serial > FS_FH_SERIAL_MAX) /* 2^43 opens: start over, skipping live ones below */
		i.serial = fs->next_serial = 1;
	e->fh = fs_fh_encode(&i);
	while (g_hash_table_contains(table(fs), &e->fh)) {
		i.serial = ++fs->next_serial;
		e->fh = fs_fh_encode(&i);
	}
	g_hash_table_insert(table(fs), &e->fh, e);
	g_mutex_unlock(&fs->handles_lock);
	return e->fh;
}

gpointer fs_handle_adopt(od_shadowfs *fs, uint64_t fh, gpointer h, uint64_t *h_fh,
			 fs_handle_close_fn close_fn)
{
	*h_fh = fh; /* before it is visible: the winner's close untracks by it */
	g_mutex_lock(&fs->handles_lock);
	fs_handle *old = g_hash_table_lookup(table(fs), &fh);
	if (old) {
		gpointer got = old->h;
		g_mutex_unlock(&fs->handles_lock);
		/* another worker revived it first: h was never tracked, and its close must
		 * not untrack the winner */
		*h_fh = 0;
		close_fn(fs, h);
		return got;
	}
	fs_handle *e = g_new(fs_handle, 1);
	e->fh = fh;
	e->h = h;
	e->close_fn = close_fn;
	g_hash_table_insert(table(fs), &e->fh, e);
	g_mutex_unlock(&fs->handles_lock);
	return h;
}

void fs_handle_untrack(od_shadowfs *fs, uint64_t fh)
{
	g_mutex_lock(&fs->handles_lock);
	fs_handle *e = g_hash_table_lookup(table(fs), &fh);
	if (e)
		g_hash_table_remove(table(fs), &fh);
	g_mutex_unlock(&fs->handles_lock);
	g_free(e);
}

gpointer fs_handle_get(od_shadowfs *fs, uint64_t fh)
{
	g_mutex_lock(&fs->handles_lock);
	fs_handle *e = g_hash_table_lookup(table(fs), &fh);
	gpointer h = e ? e->h : NULL;
	g_mutex_unlock(&fs->handles_lock);
	return h;
}

void fs_handles_close_all(od_shadowfs *fs)
{
	for (;;) {
		g_mutex_lock(&fs->handles_lock);
		GHashTableIter it;
		gpointer v = NULL;
		g_hash_table_iter_init(&it, table(fs));
		bool any = g_hash_table_iter_next(&it, NULL, &v);
		g_mutex_unlock(&fs->handles_lock);
		if (!any)
			break;
		fs_handle *e = v;
		/* the close function untracks (and frees e) */
		e->close_fn(fs, e->h);
	}
}

int fs_handle_resolve(od_shadowfs *fs, fuse_ino_t ino, struct fuse_file_info *fi, bool dir)
{
	gpointer h = fs_handle_get(fs, fi->fh);
	if (h) {
		fi->fh = (uint64_t)(uintptr_t)h;
		return 0;
	}
	fs_fh_info i;
	if (!fs_fh_decode(fi->fh, &i) || i.gen == fs->generation)
		return EBADF; /* released already, or never ours: nothing to stand for */
	fs_node *n = fs_inodes_get(fs->inodes, ino);
	if (!n) /* the cgroup went while the file was open (kernfs answers ENODEV then); or
		 * the tree cannot be asked by id (not kernfs) */
		return fs_inodes_open_cgroup(fs->inodes, FUSE_ROOT_ID) == -2 ? ESTALE : ENODEV;
	int err = 0;
	if (dir) {
		h = n->is_dir || ino == FUSE_ROOT_ID ? fs_dir_revive(fs, n, fi->fh, &err) : NULL;
		if (!h)
			return err ? err : ENOTDIR;
	} else {
		h = fs_file_revive(fs, n, fi->fh, &i, &err);
		if (!h)
			return err;
	}
	fi->fh = (uint64_t)(uintptr_t)h; /* tracked under the old fh by the revive */
	return 0;
}
