/* dir.c — directory listings. Each listing from offset 0 reads the real
 * directory afresh (no stale entries when cgroups come and go), fills d_type
 * (cgroup-tools' walkers rely on it) and appends the synthetic names of a
 * memory cgroup. Later offsets index into that snapshot, so one `ls` sees one
 * consistent listing. READDIRPLUS gives each name's attributes with it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fs_private.h"
#include "v1layout.h"

typedef struct {
	char *name;
	uint64_t ino;
	unsigned char type;
} fs_dirent;

typedef struct {
	GMutex lock;
	DIR *dp;
	GArray *ents; /* fs_dirent; NULL until the first listing */
	uint64_t nodeid;
	uint64_t fh;
	bool is_root;
	bool v1; /* the v1 layout: cgroups and the v1 table only */
} fs_dir;

static void dirent_clear(gpointer p)
{
	g_free(((fs_dirent *)p)->name);
}

static void dir_close(od_shadowfs *fs, gpointer h)
{
	fs_dir *d = h;
	fs_handle_untrack(fs, d->fh);
	closedir(d->dp);
	if (d->ents)
		g_array_unref(d->ents);
	g_mutex_clear(&d->lock);
	g_free(d);
}

/* A listing of node n's directory; NULL with *err. */
static fs_dir *dir_open(od_shadowfs *fs, const fs_node *n, int *err)
{
	int fd = openat(n->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	DIR *dp = fdopendir(fd);
	if (!dp) {
		*err = errno;
		close(fd);
		return NULL;
	}
	fs_dir *d = g_new0(fs_dir, 1);
	g_mutex_init(&d->lock);
	d->dp = dp;
	d->nodeid = n->nodeid;
	d->is_root = n->cg_is_root;
	d->v1 = fs->opts.v1_layout;
	return d;
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	int err = 0;
	fs_dir *d = dir_open(fs_of(req), n, &err);
	if (!d) {
		fs_reply_err(req, err);
		return;
	}
	d->fh = fi->fh = fs_handle_track(fs_of(req), d, dir_close, O_RDONLY, 0, true);
	fi->cache_readdir = 0;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) != 0)
		dir_close(fs_of(req), d);
}

/* A listing a previous server had open: read afresh from the real directory (its next
 * readdir, at any offset, lists it again). */
void *fs_dir_revive(od_shadowfs *fs, const fs_node *n, uint64_t fh, int *err)
{
	fs_dir *d = dir_open(fs, n, err);
	if (!d)
		return NULL;
	return fs_handle_adopt(fs, fh, d, &d->fh, dir_close);
}

static int refresh(fs_dir *d)
{
	GArray *ents = g_array_new(FALSE, FALSE, sizeof(fs_dirent));
	g_array_set_clear_func(ents, dirent_clear);
	fs_memcg_kind kind = fs_memcg_kind_of(dirfd(d->dp), d->is_root);

	rewinddir(d->dp);
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d->dp);
		if (!de) {
			if (errno) {
				int err = errno;
				g_array_unref(ents);
				return err;
			}
			break;
		}
		if (!fs_v1_shows_real(d->v1, de->d_type == DT_DIR))
			continue;
		const fs_synth *s = fs_layout_find(d->v1, de->d_name);
		if (s && fs_layout_present(d->v1, s, kind, dirfd(d->dp)))
			continue; /* ours shadows a real file of that name */
		fs_dirent e = { g_strdup(de->d_name), de->d_ino, de->d_type };
		g_array_append_val(ents, e);
	}
	for (unsigned i = 0; i < fs_layout_count(d->v1); i++) {
		const fs_synth *s = fs_layout_at(d->v1, i);
		if (!fs_layout_present(d->v1, s, kind, dirfd(d->dp)))
			continue;
		fs_dirent e = { g_strdup(s->name), fs_inodes_synth_id(d->nodeid, s), DT_REG };
		g_array_append_val(ents, e);
	}
	if (d->ents)
		g_array_unref(d->ents);
	d->ents = ents;
	return 0;
}

/* The entry of e for READDIRPLUS: looked up (one kernel reference, which the kernel
 * takes with the entry) unless it is "." or ".." (the kernel skips those) or gone since
 * the snapshot; ino 0 tells the kernel "no attributes" (fuse_direntplus_link). */
static void plus_entry(fuse_req_t req, fs_node *dir, const fs_dirent *de,
		       struct fuse_entry_param *e)
{
	bool dots = de->name[0] == '.' &&
		    (de->name[1] == '\0' || (de->name[1] == '.' && de->name[2] == '\0'));
	if (dots || !dir || fs_do_lookup(fs_of(req), dir, de->name, fuse_req_ctx(req)->uid, e)) {
		memset(e, 0, sizeof *e);
		e->attr.st_ino = de->ino;
		e->attr.st_mode = (mode_t)de->type << 12;
	}
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
		 bool plus)
{
	fs_dir *d = (fs_dir *)(uintptr_t)fi->fh;
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = plus ? fs_inodes_get(fs->inodes, ino) : NULL;
	g_mutex_lock(&d->lock);
	if (off == 0 || !d->ents) {
		int err = refresh(d);
		if (err) {
			g_mutex_unlock(&d->lock);
			fs_reply_err(req, err);
			return;
		}
	}
	char *buf = g_try_malloc(size ? size : 1);
	if (!buf) {
		g_mutex_unlock(&d->lock);
		fs_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	for (guint i = off < 0 ? 0 : (guint)off; i < d->ents->len; i++) {
		const fs_dirent *e = &g_array_index(d->ents, fs_dirent, i);
		size_t need;
		if (plus) {
			struct fuse_entry_param pe;
			plus_entry(req, dir, e, &pe);
			need = fuse_add_direntry_plus(req, buf + used, size - used, e->name, &pe,
						      (off_t)i + 1);
			if (need > size - used && pe.ino)
				fs_inodes_forget(fs->inodes, pe.ino, 1); /* not sent: not the kernel's */
		} else {
			struct stat st = { .st_ino = e->ino, .st_mode = (mode_t)e->type << 12 };
			need = fuse_add_direntry(req, buf + used, size - used, e->name, &st, (off_t)i + 1);
		}
		if (need > size - used)
			break;
		used += need;
	}
	g_mutex_unlock(&d->lock);
	fuse_reply_buf(req, buf, used);
	g_free(buf);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, false);
}

/* Names with their attributes in one reply: `ls -l` of N cgroups costs the kernel one
 * READDIRPLUS per buffer instead of a LOOKUP per name (issue 23). The kernel keeps what it
 * got for opts.cache_s. A lost reply leaves references the kernel never took: libfuse 3.14
 * does not say, and such a node stays until the connection ends (as for a lost LOOKUP
 * reply that fuse_reply_entry could not report). */
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, true);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_close(fs_of(req), (fs_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}
