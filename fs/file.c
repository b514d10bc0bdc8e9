/* file.c — open files: one backing descriptor per FUSE open (kernfs keeps
 * per-open state: memory.peak resets, PSI triggers), pread/pwrite with the
 * caller's offset so the kernel sees exactly the caller's bytes and its errno
 * comes back unchanged; synthetic files generate their content at offset 0
 * and serve later offsets from it, like a kernfs seq_file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs_private.h"

fs_file *fs_file_new(void)
{
	fs_file *f = g_new0(fs_file, 1);
	f->refs = 1;
	f->fd = -1;
	f->ctx.dirfd = -1;
	g_mutex_init(&f->lock);
	return f;
}

fs_file *fs_file_ref(fs_file *f)
{
	g_atomic_int_inc(&f->refs);
	return f;
}

void fs_file_unref(fs_file *f)
{
	if (!g_atomic_int_dec_and_test(&f->refs))
		return;
	/* The last close of the backing fd is what releases kernel per-open state. */
	if (f->fd >= 0)
		close(f->fd);
	if (f->ctx.dirfd >= 0)
		close(f->ctx.dirfd);
	if (f->content)
		g_string_free(f->content, TRUE);
	g_mutex_clear(&f->lock);
	g_free(f);
}

void fs_proc_path(char buf[64], int fd)
{
	snprintf(buf, 64, "/proc/self/fd/%d", fd);
}

void fs_ctx_init(fs_synth_ctx *c, od_shadowfs *fs, const fs_node *n, fuse_req_t req)
{
	c->fs = fs;
	c->ctl = fs->ctl;
	c->id = n->cg_id;
	c->parent = n->cg_parent;
	c->dirfd = n->syn && (n->syn->flags & FS_SYN_VIRTUAL) ? n->cg_dirfd : n->fd;
	/* The served root may be a subtree (--cgroup-root): only a directory without
	 * memory.max is the root cgroup whose memory.oom_control refuses writes. */
	c->is_root = n->cg_is_root && fs_memcg_kind_of(c->dirfd, true) == FS_MEMCG_ROOT;
	c->page_size = fs->page_size;
	c->req = req;
	c->fd = -1;
}

static bool is_synthetic(const fs_synth *s)
{
	return s && !(s->flags & FS_SYN_VIRTUAL);
}

static void file_close(od_shadowfs *fs, fs_file *f)
{
	fs_handle_untrack(fs, f);
	if (f->syn && (f->syn->flags & FS_SYN_NOTIFY))
		fs_ctlwatch_detach(fs->ctlw, f);
	if (f->fd >= 0)
		fs_poller_forget(fs->poller, f);
	fs_file_unref(f);
}

/* Builds the handle of an open of node n; *err on failure. */
static fs_file *file_open(od_shadowfs *fs, fuse_req_t req, const fs_node *n, int flags, int *err)
{
	fs_file *f = fs_file_new();
	int acc = flags & O_ACCMODE;

	if (n->syn) {
		f->syn = n->syn;
		fs_ctx_init(&f->ctx, fs, n, NULL);
		f->ctx.dirfd = fcntl(f->ctx.dirfd, F_DUPFD_CLOEXEC, 3);
		if (f->ctx.dirfd < 0) {
			*err = errno;
			g_warning("open %s of cgroup %" G_GUINT64_FORMAT ": dup: %s", n->syn->name,
				  n->cg_id, g_strerror(errno));
			fs_file_unref(f);
			return NULL;
		}
	}
	/* A synthetic file opens for either direction, even one it has no handler for:
	 * cgroupfs (v1 and v2 alike) gives every file both kernfs handlers, and the read
	 * or write answers EINVAL (6.1 and 6.12: cat cgroup.kill, echo > memory.current). */
	if (!is_synthetic(n->syn)) {
		char path[64];
		int oflags = flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL | O_NOCTTY);
		if (n->syn)
			oflags &= ~O_TRUNC; /* the user's value lives in the controller, not in the file */
		fs_proc_path(path, n->fd);
		if (n->as_caller && acc != O_RDONLY) {
			f->fd = fs_open_as_caller(req, path, oflags | O_CLOEXEC);
			if (f->fd < 0) {
				*err = -f->fd;
				f->fd = -1;
				fs_file_unref(f);
				return NULL;
			}
		} else {
			f->fd = open(path, oflags | O_CLOEXEC);
			if (f->fd < 0) {
				*err = errno;
				fs_file_unref(f);
				return NULL;
			}
		}
	}
	if (n->syn && (n->syn->flags & FS_SYN_NOTIFY))
		fs_ctlwatch_attach(fs->ctlw, f);
	return f;
}

static void file_close_cb(od_shadowfs *fs, gpointer h)
{
	file_close(fs, h);
}

static void set_open_flags(od_shadowfs *fs, struct fuse_file_info *fi, fs_file *f)
{
	fi->fh = fs_handle_track(fs, f, file_close_cb);
	fi->direct_io = 1;  /* cgroupfs reports size 0: the page cache would read nothing */
	fi->keep_cache = 0;
	fi->nonseekable = 0;
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *n = fs_inodes_get(fs->inodes, ino);
	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	int err = 0;
	fs_file *f = file_open(fs, req, n, fi->flags, &err);
	if (!f) {
		fuse_reply_err(req, err);
		return;
	}
	set_open_flags(fs, fi, f);
	if (fuse_reply_open(req, fi) != 0)
		file_close(fs, f); /* interrupted: the kernel will send no release */
}

void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	/* The v1 view hides the real files: creating one of their names must not
	 * reach them. What cgroupfs answers to O_CREAT of a new name. */
	if (fs->opts.v1_layout) {
		fuse_reply_err(req, EACCES);
		return;
	}
	/* cgroupfs refuses to create files (EACCES from the kernel itself); other trees may not. */
	int fd = openat(dir->fd, name, (fi->flags | O_CREAT | O_CLOEXEC) & ~O_NOFOLLOW, mode & 07777);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	close(fd);
	struct fuse_entry_param e;
	int err = fs_do_lookup(fs, dir, name, &e);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	fs_node *n = fs_inodes_get(fs->inodes, e.ino);
	fs_file *f = n ? file_open(fs, req, n, fi->flags & ~(O_CREAT | O_EXCL | O_TRUNC), &err) : NULL;
	if (!f) {
		fs_inodes_forget(fs->inodes, e.ino, 1);
		fuse_reply_err(req, n ? err : ESTALE);
		return;
	}
	set_open_flags(fs, fi, f);
	if (fuse_reply_create(req, &e, fi) != 0) {
		file_close(fs, f);
		fs_inodes_forget(fs->inodes, e.ino, 1);
	}
}

static void read_real(fuse_req_t req, fs_file *f, size_t size, off_t off)
{
	char *buf = g_try_malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = pread(f->fd, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	g_free(buf);
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	od_shadowfs *fs = fs_of(req);
	fs_file *f = (fs_file *)(uintptr_t)fi->fh;

	if (!f->syn || !f->syn->read) {
		if (f->fd < 0)
			fuse_reply_err(req, f->syn ? EINVAL : EBADF);
		else
			read_real(req, f, size, off);
		return;
	}
	g_mutex_lock(&f->lock);
	if (off == 0 || !f->have) {
		fs_synth_ctx c = f->ctx;
		c.req = req;
		c.fd = f->fd;
		/* Mark seen before reading, so a change during the read is reported again. */
		if (f->syn->flags & FS_SYN_NOTIFY)
			fs_ctlwatch_seen(fs->ctlw, f);
		GString *content = g_string_sized_new(64);
		int r = f->syn->read(&c, content);
		if (r == FS_SYN_PASS && f->fd >= 0) {
			g_mutex_unlock(&f->lock);
			g_string_free(content, TRUE);
			read_real(req, f, size, off);
			return;
		}
		if (r != 0) {
			g_mutex_unlock(&f->lock);
			g_string_free(content, TRUE);
			fuse_reply_err(req, r == FS_SYN_PASS ? EIO : r);
			return;
		}
		if (f->content)
			g_string_free(f->content, TRUE);
		f->content = content;
		f->have = true;
	}
	/* Copy out, then reply unlocked: once the reply is out the caller may
	 * close, and a release on another worker frees f. */
	char small[256];
	char *out = small;
	size_t n = 0;
	if (off >= 0 && (uint64_t)off < f->content->len) {
		n = f->content->len - (size_t)off;
		if (n > size)
			n = size;
		if (n > sizeof small)
			out = g_malloc(n);
		memcpy(out, f->content->str + off, n);
	}
	g_mutex_unlock(&f->lock);
	fuse_reply_buf(req, out, n);
	if (out != small)
		g_free(out);
}

static void write_real(fuse_req_t req, fs_file *f, const char *buf, size_t size, off_t off)
{
	ssize_t n = pwrite(f->fd, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	(void)ino;
	od_shadowfs *fs = fs_of(req);
	fs_file *f = (fs_file *)(uintptr_t)fi->fh;

	if (!f->syn || !f->syn->write) {
		if (f->fd < 0)
			fuse_reply_err(req, f->syn ? EINVAL : EBADF);
		else
			write_real(req, f, buf, size, off);
		return;
	}
	/* cgroup files take one page per write (kernfs atomic_write_len) */
	if (size > fs->page_size) {
		fuse_reply_err(req, E2BIG);
		return;
	}
	fs_synth_ctx c = f->ctx;
	c.req = req;
	c.fd = f->fd;
	int r = f->syn->write(&c, buf, size);
	if (r == FS_SYN_PASS && f->fd >= 0)
		write_real(req, f, buf, size, off);
	else if (r != 0)
		fuse_reply_err(req, r == FS_SYN_PASS ? EIO : r);
	else
		fuse_reply_write(req, size);
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	file_close(fs_of(req), (fs_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}

void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	(void)ino;
	od_shadowfs *fs = fs_of(req);
	fs_file *f = (fs_file *)(uintptr_t)fi->fh;
	unsigned mask;

	if (f->syn && (f->syn->flags & FS_SYN_NOTIFY)) {
		mask = fs_ctlwatch_poll(fs->ctlw, f, ph);
	} else if (f->fd >= 0) {
		mask = fs_poller_poll(fs->poller, f, ph);
	} else {
		if (ph)
			fuse_pollhandle_destroy(ph); /* never changes, like a plain kernfs file */
		mask = FS_POLL_DEFAULT;
	}
	fuse_reply_poll(req, mask);
}
