/* entry.c — name and attribute operations: lookup/forget, getattr/setattr,
 * mkdir/rmdir (real cgroups), unlink, rename, readlink, statfs. Everything is
 * relative to the parent's O_PATH descriptor. The kernel keeps the names of directories
 * (cgroups) and the attributes of everything for opts.cache_s (FS_CACHE_S, fs_private.h:
 * the bound, the invalidations that come sooner, and why never a file's name); a name that
 * does not exist is never kept (no negative entries), so a new cgroup shows at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "charge.h"
#include "fdguard.h"
#include "fs_private.h"
#include "v1layout.h"

/* Regular files show the size sysfs shows (4096) instead of cgroupfs's 0. Since
 * 6.5 FUSE serves splice/sendfile reads from the page cache even for direct_io
 * files (filemap_splice_read), and a size of 0 makes them read nothing: busybox
 * cat (sendfile) printed nothing on 6.12. The page-cache read asks us for the
 * page, our short reply trims the kernel's size to the real length, and every
 * open drops the cache again (no keep_cache). read(2) is direct and unaffected. */
#define FS_REG_SIZE 4096

static void kernel_facing_size(struct stat *st)
{
	if (S_ISREG(st->st_mode) && st->st_size < FS_REG_SIZE)
		st->st_size = FS_REG_SIZE;
}

/* The owner and mode of the real file whose behaviour it changes (synthetic.c):
 * default_permissions then has the kernel check callers as for that file. */
static int synth_stat(int dirfd, uint64_t id, const fs_synth *s, struct stat *st)
{
	int r = fs_synth_attr(dirfd, s, st);
	if (r)
		return r;
	st->st_ino = id;
	st->st_size = FS_REG_SIZE;
	return 0;
}

/* A synthetic name of dir, when dir is a memory cgroup that carries it. */
static const fs_synth *synth_of(const od_shadowfs *fs, const fs_node *dir, const char *name)
{
	bool v1 = fs->opts.v1_layout;
	const fs_synth *s = fs_layout_find(v1, name);
	if (!s || (s->flags & FS_SYN_VIRTUAL))
		return NULL;
	return fs_layout_present(v1, s, fs_memcg_kind_of(dir->fd, dir->cg_is_root), dir->fd) ? s : NULL;
}

static void set_timeouts(const od_shadowfs *fs, struct fuse_entry_param *e)
{
	e->entry_timeout = fs_entry_cache_of(fs->opts.cache_s, e->attr.st_mode);
	e->attr_timeout = fs->opts.cache_s;
}

int fs_do_lookup(od_shadowfs *fs, fs_node *dir, const char *name, uid_t uid,
		 struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e); /* time-outs 0 until the object's type is known */
	/* The kernel resolves these itself (we do not offer NFS export); ".." from
	 * the root would step outside the served tree. */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return EINVAL;

	const fs_synth *s = synth_of(fs, dir, name);
	if (s) {
		int err = synth_stat(dir->fd, 0, s, &e->attr);
		if (err)
			return err;
		fs_node *n = fs_inodes_intern_synth(fs->inodes, dir, s, uid, &err);
		if (!n)
			return err;
		e->ino = n->nodeid;
		e->attr.st_ino = n->nodeid;
		set_timeouts(fs, e); /* a regular file: its attributes only */
		return 0;
	}

	/* an object the kernel already knows needs no descriptor: its node has one */
	if (fstatat(dir->fd, name, &e->attr, AT_SYMLINK_NOFOLLOW) < 0)
		return errno;
	if (!fs_v1_shows_real(fs->opts.v1_layout, S_ISDIR(e->attr.st_mode)))
		return ENOENT; /* the v1 view shows cgroups and its own files only */
	fs_node *known = fs_inodes_ref_known(fs->inodes, &e->attr);
	if (known) {
		e->ino = known->nodeid;
		set_timeouts(fs, e);
		kernel_facing_size(&e->attr);
		return 0;
	}

	int fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (!fs_fd_within_budget(fd)) {
		close(fd); /* the kill path's reserve (fdguard.h): what the caller's own open answers */
		return EMFILE;
	}
	int serr = fs_stat_fd(fd, &e->attr);
	if (serr) {
		close(fd);
		return serr;
	}
	if (!fs_v1_shows_real(fs->opts.v1_layout, S_ISDIR(e->attr.st_mode))) {
		close(fd);
		return ENOENT; /* the v1 view shows cgroups and its own files only */
	}
	int err = 0;
	fs_node *n = fs_inodes_intern_real(fs->inodes, dir, fd, &e->attr, name, uid, &err);
	if (!n)
		return err;
	e->ino = n->nodeid;
	set_timeouts(fs, e);
	kernel_facing_size(&e->attr);
	return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	struct fuse_entry_param e;
	int err = fs_do_lookup(fs, dir, name, fuse_req_ctx(req)->uid, &e);
	if (err) {
		fs_reply_err(req, err); /* no negative entry: it may appear any moment */
		return;
	}
	if (fuse_reply_entry(req, &e) != 0)
		fs_inodes_forget(fs->inodes, e.ino, 1);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_inodes_forget(fs_of(req)->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	od_shadowfs *fs = fs_of(req);
	for (size_t i = 0; i < count; i++)
		fs_inodes_forget(fs->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static int node_stat(const fs_node *n, struct stat *st)
{
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL))
		return synth_stat(n->fd, n->nodeid, n->syn, st);
	int err = fs_stat_fd(n->fd, st);
	if (err)
		return err;
	kernel_facing_size(st);
	return 0;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	struct stat st;
	int err = node_stat(n, &st);
	if (err)
		fs_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, fs_of(req)->opts.cache_s);
}

static int set_times(const fs_node *n, int ffd, const struct stat *attr, int valid)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;
	if (ffd >= 0)
		return futimens(ffd, ts) < 0 ? errno : 0;
	char path[64];
	fs_proc_path(path, n->fd);
	return utimensat(AT_FDCWD, path, ts, 0) < 0 ? errno : 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	fs_file *f = fi ? (fs_file *)(uintptr_t)fi->fh : NULL;
	int ffd = f ? f->fd : -1;
	char path[64];
	fs_proc_path(path, n->fd);
	int err = 0;

	/* A synthetic file follows its directory (chown -R of a v1-style delegation
	 * must not fail on it); truncation is how `echo >` opens any cgroup file. */
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL))
		goto reply;
	if (valid & FUSE_SET_ATTR_MODE) {
		if (chmod(path, attr->st_mode & 07777) < 0) {
			err = errno;
			goto reply;
		}
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		if (fchownat(n->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
			err = errno;
			goto reply;
		}
	}
	if ((valid & FUSE_SET_ATTR_SIZE) && !n->syn) {
		int r = ffd >= 0 ? ftruncate(ffd, attr->st_size) : truncate(path, attr->st_size);
		if (r < 0) {
			err = errno;
			goto reply;
		}
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		     FUSE_SET_ATTR_MTIME_NOW)) {
		err = set_times(n, ffd, attr, valid);
		if (err)
			goto reply;
	}
reply:
	if (err) {
		fs_reply_err(req, err);
		return;
	}
	struct stat st;
	err = node_stat(n, &st);
	if (err)
		fs_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, fs_of(req)->opts.cache_s);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	char buf[PATH_MAX + 1];
	ssize_t r = readlinkat(n->fd, "", buf, sizeof buf);
	if (r < 0) {
		fs_reply_err(req, errno);
		return;
	}
	if ((size_t)r >= sizeof buf) {
		fs_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[r] = '\0';
	fuse_reply_readlink(req, buf);
}

/* A cgroup made by a non-root caller belongs to the caller with all its files,
 * as cgroup_kn_set_ugid() does when the caller creates it directly; the daemon
 * creating it as root would otherwise lock the caller out of what it made. */
static void give_to_caller(int fd, const char *name, uid_t uid, gid_t gid)
{
	if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) < 0)
		g_warning("mkdir %s: cannot give the new cgroup to uid %u: %s", name, (unsigned)uid,
			  g_strerror(errno));
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		g_warning("mkdir %s: cannot list the new cgroup: %s", name, g_strerror(errno));
		return;
	}
	DIR *dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_type == DT_DIR)
			continue; /* ".", "..": a new cgroup has no children yet */
		if (fchownat(dirfd(dp), de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			g_warning("mkdir %s: cannot give %s to uid %u: %s", name, de->d_name,
				  (unsigned)uid, g_strerror(errno));
	}
	closedir(dp);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if (synth_of(fs_of(req), dir, name)) {
		fs_reply_err(req, EEXIST);
		return;
	}
	mode &= 07777; /* the kernel already applied the caller's umask */
	if (fs->opts.v1_layout)
		fs_v1_before_mkdir(req, dir->fd);
	/* The new cgroup's kernel memory (its memcg, percpu statistics, kernfs nodes)
	 * is charged to the caller's cgroup, not to ours (charge.h; issue 21, item 2). */
	fs_charged_syscall mk = { SYS_mkdirat, { FS_FD(dir->fd), FS_STR(name), FS_INT(mode) } };
	g_autoptr(fs_caller) who = fs_caller_new(req);
	int merr = fs_charged_call(fs, who, &mk, EAGAIN);
	if (merr) {
		fs_reply_err(req, merr);
		return;
	}
	struct fuse_entry_param e;
	int err = fs_do_lookup(fs, dir, name, fuse_req_ctx(req)->uid, &e);
	if (err) {
		/* removed again already, or out of descriptors */
		g_warning("mkdir %s: made it but cannot open it: %s", name, g_strerror(err));
		fs_reply_err(req, err);
		return;
	}
	fs_node *n = fs_inodes_get(fs->inodes, e.ino);
	if (n && S_ISDIR(e.attr.st_mode)) {
		char path[64];
		fs_proc_path(path, n->fd);
		if ((mode & fs->umask) && chmod(path, mode) < 0) /* undo the daemon's own umask */
			g_warning("mkdir %s: cannot set mode %o: %s", name, mode, g_strerror(errno));
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		if (ctx->uid != 0)
			give_to_caller(n->fd, name, ctx->uid, ctx->gid);
		/* Rule 7 (inheritance) must hold before mkdir returns. */
		if (fs->ctl) {
			uint64_t id = 0;
			int r = od_controller_add(fs->ctl, dir->cg_id, n->fd, &id);
			if (r)
				g_warning("mkdir %s (cgroup %" G_GUINT64_FORMAT "): controller refused it: %s;"
					  " the watcher will retry", name, (uint64_t)e.attr.st_ino,
					  g_strerror(r));
		}
		struct stat st;
		if (fs_stat_fd(n->fd, &st) == 0)
			e.attr = st;
	}
	if (fuse_reply_entry(req, &e) != 0)
		fs_inodes_forget(fs->inodes, e.ino, 1);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_node *dir = fs_inodes_get(fs_of(req)->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	/* The watcher sees the removal in the real tree and tells the controller. */
	fs_reply_err(req, unlinkat(dir->fd, name, AT_REMOVEDIR) < 0 ? errno : 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fs_node *dir = fs_inodes_get(fs_of(req)->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if (synth_of(fs_of(req), dir, name)) {
		fs_reply_err(req, EPERM); /* as for any cgroup file */
		return;
	}
	fs_reply_err(req, unlinkat(dir->fd, name, 0) < 0 ? errno : 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *a = fs_inodes_get(fs->inodes, parent);
	fs_node *b = fs_inodes_get(fs->inodes, newparent);
	if (!a || !b) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if (synth_of(fs, a, name) || synth_of(fs, b, newname)) {
		fs_reply_err(req, EPERM);
		return;
	}
	/* cgroup v2 renames a cgroup within its parent; the kernel decides what is allowed */
	int r = renameat2(a->fd, name, b->fd, newname, flags);
	fs_reply_err(req, r < 0 ? errno : 0);
}

/* Reply with the entry of a name just made in dir; forget it if the reply is lost. */
static void reply_new_entry(fuse_req_t req, od_shadowfs *fs, fs_node *dir, const char *name)
{
	struct fuse_entry_param e;
	int err = fs_do_lookup(fs, dir, name, fuse_req_ctx(req)->uid, &e);
	if (err) {
		fs_reply_err(req, err);
		return;
	}
	if (fuse_reply_entry(req, &e) != 0)
		fs_inodes_forget(fs->inodes, e.ino, 1);
}

/* cgroupfs refuses these (EPERM from the kernel itself); other trees may not. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if (synth_of(fs_of(req), dir, name)) {
		fs_reply_err(req, EEXIST);
		return;
	}
	if (mknodat(dir->fd, name, mode, rdev) < 0) {
		fs_reply_err(req, errno);
		return;
	}
	reply_new_entry(req, fs, dir, name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if (synth_of(fs_of(req), dir, name)) {
		fs_reply_err(req, EEXIST);
		return;
	}
	if (symlinkat(link, dir->fd, name) < 0) {
		fs_reply_err(req, errno);
		return;
	}
	reply_new_entry(req, fs, dir, name);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *n = fs_inodes_get(fs->inodes, ino);
	fs_node *dir = fs_inodes_get(fs->inodes, newparent);
	if (!n || !dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	if ((n->syn && !(n->syn->flags & FS_SYN_VIRTUAL)) || synth_of(fs, dir, newname)) {
		fs_reply_err(req, EPERM);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	if (linkat(AT_FDCWD, path, dir->fd, newname, AT_SYMLINK_FOLLOW) < 0) {
		fs_reply_err(req, errno);
		return;
	}
	reply_new_entry(req, fs, dir, newname);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	struct statvfs sv;
	if (fstatvfs(n->fd, &sv) < 0)
		fs_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC arrives with open: saves the setattr round trip of every `echo >` */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* the kernel must never buffer writes: each one is a kernel knob write */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.symlink = op_symlink,
	.link = op_link,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = fs_op_open,
	.read = fs_op_read,
	.write = fs_op_write,
	/* no .flush: the first ENOSYS stops the kernel sending one per close(2); no
	 * write is ever buffered here, so there would be nothing to flush */
	.release = fs_op_release,
	.fsync = fs_op_fsync,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.statfs = op_statfs,
	.setxattr = fs_op_setxattr,
	.getxattr = fs_op_getxattr,
	.listxattr = fs_op_listxattr,
	.removexattr = fs_op_removexattr,
	.create = fs_op_create,
	.poll = fs_op_poll,
};
