/* file.c — open files: one backing descriptor per FUSE open (kernfs keeps
 * per-open state: memory.peak resets, PSI triggers), pread/pwrite with the
 * caller's offset so the kernel sees exactly the caller's bytes and its errno
 * comes back unchanged; synthetic files generate their content at offset 0
 * and serve later offsets from it, like a kernfs seq_file.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fdguard.h"
#include "fs_private.h"

fs_file *fs_file_new(void)
{
	fs_file *f = g_new0(fs_file, 1);
	f->refs = 1;
	f->fd = -1;
	f->ctx.dirfd = -1;
	f->ctx.fd2 = -1;
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
	if (f->ctx.fd2 >= 0)
		close(f->ctx.fd2);
	if (f->content)
		g_string_free(f->content, TRUE);
	g_mutex_clear(&f->lock);
	g_free(f);
}

void fs_proc_path(char buf[64], int fd)
{
	/* every open, lookup and attribute request formats one: snprintf cost 790 instructions
	 * of the 2,500 an open takes (callgrind, 2026-12-06) */
	static const char prefix[] = "/proc/self/fd/";
	char digits[12];
	unsigned v = fd < 0 ? 0u - (unsigned)fd : (unsigned)fd, n = 0;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	memcpy(buf, prefix, sizeof(prefix) - 1);
	char *p = buf + sizeof(prefix) - 1;
	if (fd < 0)
		*p++ = '-'; /* a path that names nothing, as before: never descriptor 0 */
	while (n)
		*p++ = digits[--n];
	*p = '\0';
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
	c->fd2 = -1;
}

static bool is_synthetic(const fs_synth *s)
{
	return s && !(s->flags & FS_SYN_VIRTUAL);
}

static void file_close(od_shadowfs *fs, fs_file *f)
{
	fs_handle_untrack(fs, f->fh);
	/* nobody waits on it any more; unless the files are closed for a successor, whose
	 * callers still wait */
	if (f->kh && fs->carry && !g_atomic_int_get(&fs->keep_mount))
		fs_carry_poll_del(fs->carry, f->kh);
	if (f->syn && (f->syn->flags & FS_SYN_NOTIFY))
		fs_ctlwatch_detach(fs->ctlw, f);
	if (f->fd >= 0)
		fs_poller_forget(fs->poller, f);
	fs_file_unref(f);
}

/* A descriptor a FUSE open made (errno set when *fd < 0): kept if its number is
 * below the reserve the kill path needs (fdguard.h), else closed (a real cgroupfs
 * file: its close never blocks) with EMFILE, what the caller's own open would
 * answer at its limit. */
static bool keep_within_budget(int *fd, int *err)
{
	if (*fd < 0) {
		*err = errno;
		return false;
	}
	if (fs_fd_within_budget(*fd))
		return true;
	close(*fd);
	*fd = -1;
	*err = EMFILE;
	return false;
}

static bool judged_by_opener(const fs_node *n)
{
	return n->as_caller || (n->syn && (n->syn->flags & FS_SYN_AS_CALLER));
}

/* Builds the handle of an open of node n; *err on failure. *plain: nothing of the
 * opener is needed to judge its writes later (ids.h), so that a successor may open it
 * again as the daemon. */
static fs_file *file_open(od_shadowfs *fs, fuse_req_t req, const fs_node *n, int flags, int *err,
			  bool *plain)
{
	/* The kernel checked the caller against the attributes it was shown; the
	 * daemon writes as root, so it checks again, now, against the real file. */
	int acc = flags & O_ACCMODE;
	int write_err = 0;
	/* who is calling matters for writing only: a read opens as the daemon; an owner's
	 * write open needs no more of the opener than its cgroup namespace */
	g_autoptr(fs_caller) who = NULL;
	int r = acc != O_RDONLY ? fs_access_open(req, n, flags, judged_by_opener(n), &who, &write_err)
				: fs_access_read(req, n);
	if (r) {
		*err = r;
		return NULL;
	}
	*plain = acc == O_RDONLY || (who && who->known && who->cgns < 0 && !judged_by_opener(n));
	fs_file *f = fs_file_new();

	if (n->syn) {
		f->syn = n->syn;
		fs_ctx_init(&f->ctx, fs, n, NULL);
		f->ctx.write_err = write_err;
		f->ctx.dirfd = fcntl(f->ctx.dirfd, F_DUPFD_CLOEXEC, 3);
		if (!keep_within_budget(&f->ctx.dirfd, err)) {
			if (*err != EMFILE) /* the reserve: a caller's doing, not worth a line */
				g_warning("open %s of cgroup %" G_GUINT64_FORMAT ": dup: %s",
					  n->syn->name, n->cg_id, g_strerror(*err));
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
		if (acc == O_RDONLY) {
			f->fd = open(path, oflags | O_CLOEXEC);
		} else {
			/* a write is judged by the opener's cgroup namespace (nsdelegate), and
			 * an as_caller file's by its credentials too (fs_private.h) */
			f->fd = fs_caller_open(who, path, oflags | O_CLOEXEC,
					       n->as_caller ? FS_OPEN_AS_CALLER : FS_OPEN_AS_DAEMON);
			if (f->fd < 0) {
				errno = -f->fd;
				f->fd = -1;
			}
		}
		if (!keep_within_budget(&f->fd, err)) {
			fs_file_unref(f);
			return NULL;
		}
	}
	/* the kernel judges writes by the opener: such files open their real ones now */
	if (is_synthetic(n->syn) && (n->syn->flags & FS_SYN_AS_CALLER) && acc != O_RDONLY) {
		*err = fs_synth_open_as_opener(n->syn, &f->ctx, who, flags, &f->fd, &f->ctx.fd2);
		if (!*err && ((f->fd >= 0 && !fs_fd_within_budget(f->fd)) ||
			      (f->ctx.fd2 >= 0 && !fs_fd_within_budget(f->ctx.fd2))))
			*err = EMFILE; /* file_close closes both */
		if (*err) {
			fs_file_unref(f);
			return NULL;
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

static void set_open_flags(od_shadowfs *fs, struct fuse_file_info *fi, fs_file *f, bool plain)
{
	f->fh = fi->fh = fs_handle_track(fs, f, file_close_cb, fi->flags, f->ctx.write_err, plain);
	fi->direct_io = 1;  /* cgroupfs reports size 0: the page cache would read nothing */
	fi->keep_cache = 0;
	fi->nonseekable = 0;
}

/* An open of a previous server, opened again. Reads were always the daemon's own
 * (file_open), so a read-only open comes back exactly. A write open comes back as it
 * was when its writes needed nothing of the opener (a plain fh); otherwise the kernel
 * judged them by the opener's credentials or cgroup namespace (cgroup.procs, v1 tasks,
 * *.pressure, a caller in another cgroup namespace), which lived in the dead server's
 * descriptor and which nothing in the real tree can restore: it comes back read-only
 * and every write answers EACCES, what an open for writing by nobody gets. */
fs_file *fs_file_revive(od_shadowfs *fs, const fs_node *n, uint64_t fh, const fs_fh_info *i,
			int *err)
{
	int acc = i->acc;
	int write_err = i->write_err;
	if (acc != O_RDONLY && !write_err && (!i->plain || judged_by_opener(n)))
		write_err = EACCES;
	fs_file *f = fs_file_new();
	if (n->syn) {
		f->syn = n->syn;
		fs_ctx_init(&f->ctx, fs, n, NULL);
		f->ctx.dirfd = fcntl(f->ctx.dirfd, F_DUPFD_CLOEXEC, 3);
		if (!keep_within_budget(&f->ctx.dirfd, err)) {
			fs_file_unref(f);
			return NULL;
		}
	}
	f->ctx.write_err = write_err;
	if (!is_synthetic(n->syn)) {
		char path[64];
		fs_proc_path(path, n->fd);
		f->fd = open(path, (write_err ? O_RDONLY : acc) | O_CLOEXEC);
		if (!keep_within_budget(&f->fd, err)) {
			fs_file_unref(f);
			return NULL;
		}
	}
	if (n->syn && (n->syn->flags & FS_SYN_NOTIFY))
		fs_ctlwatch_attach(fs->ctlw, f);
	return fs_handle_adopt(fs, fh, f, &f->fh, file_close_cb);
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *n = fs_inodes_get(fs->inodes, ino);
	if (!n) {
		fs_reply_err(req, ESTALE);
		return;
	}
	int err = 0;
	bool plain;
	fs_file *f = file_open(fs, req, n, fi->flags, &err, &plain);
	if (!f) {
		fs_reply_err(req, err);
		return;
	}
	set_open_flags(fs, fi, f, plain);
	if (fuse_reply_open(req, fi) != 0)
		file_close(fs, f); /* interrupted: the kernel will send no release */
}

/* Opens the existing entry e for a create: the reply marks the open as a
 * creation (FMODE_CREATED), and the kernel then checks no permission on the
 * file, so the daemon's own check in file_open is the only one. */
static void create_reply(fuse_req_t req, od_shadowfs *fs, struct fuse_entry_param *e,
			 struct fuse_file_info *fi)
{
	int err = 0;
	bool plain;
	fs_node *n = fs_inodes_get(fs->inodes, e->ino);
	fs_file *f = n ? file_open(fs, req, n, fi->flags & ~(O_CREAT | O_EXCL), &err, &plain) : NULL;
	if (!f) {
		fs_inodes_forget(fs->inodes, e->ino, 1);
		fs_reply_err(req, n ? err : ESTALE);
		return;
	}
	set_open_flags(fs, fi, f, plain);
	if (fuse_reply_create(req, e, fi) != 0) {
		file_close(fs, f);
		fs_inodes_forget(fs->inodes, e->ino, 1);
	}
}

/* The kernel sends CREATE for a name its lookup did not find; the name may have
 * appeared since (a controller enabled, a cgroup made). What open(2) with O_CREAT
 * does on cgroupfs (kernfs has no create): an existing name is EEXIST with O_EXCL
 * and opened as usual without it; a new name is EACCES (lookup_open() finds no
 * ->create). Other real trees (the test fixture) create the file. */
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	od_shadowfs *fs = fs_of(req);
	fs_node *dir = fs_inodes_get(fs->inodes, parent);
	if (!dir) {
		fs_reply_err(req, ESTALE);
		return;
	}
	struct fuse_entry_param e;
	for (int tries = 0; tries < 2; tries++) {
		int err = fs_do_lookup(fs, dir, name, fuse_req_ctx(req)->uid, &e);
		if (err == 0) {
			if (fi->flags & O_EXCL) {
				fs_inodes_forget(fs->inodes, e.ino, 1);
				fs_reply_err(req, EEXIST);
			} else {
				create_reply(req, fs, &e, fi);
			}
			return;
		}
		if (err != ENOENT) {
			fs_reply_err(req, err);
			return;
		}
		/* the v1 view shows no real file: a new name must not reach the real tree */
		if (fs->opts.v1_layout) {
			fs_reply_err(req, EACCES);
			return;
		}
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		int fd = openat(dir->fd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
				mode & 07777 & ~ctx->umask);
		if (fd >= 0) {
			/* made by the caller, as the kernel would have made it */
			if (fchown(fd, ctx->uid, ctx->gid) < 0)
				g_warning("create %s: cannot give it to uid %u: %s", name,
					  (unsigned)ctx->uid, g_strerror(errno));
			close(fd);
			err = fs_do_lookup(fs, dir, name, fuse_req_ctx(req)->uid, &e);
			if (err)
				fs_reply_err(req, err);
			else
				create_reply(req, fs, &e, fi);
			return;
		}
		if (errno != EEXIST || (fi->flags & O_EXCL)) {
			fs_reply_err(req, errno);
			return;
		}
		/* appeared between the lookup and the create: open it as the caller asked */
	}
	fs_reply_err(req, EEXIST);
}

/* A real cgroup file's content is a page or less (memory.current, memory.stat on 6.1-7),
 * and readers ask for far more (cat: 128 KiB): a read is tried into a page on the stack
 * (within the 64 KiB each worker prefaults, session.c) and only a full page is read again
 * into the caller's size. A shorter answer is what the caller's size would have got too:
 * a seq_file read (seq_read_iter) stops short of the request only at EOF or where its
 * buffer, a page or more, cannot take the next record, and that happens at the same
 * place for any request of a page or more; kernfs's other files answer one page at most
 * (kernfs_file_read_iter); a regular file is short only at EOF. An allocation of the
 * caller's size per READ was a third of read_real's instructions (callgrind, 2026-12-06). */
#define FS_READ_SMALL 4096

static void read_real(fuse_req_t req, fs_file *f, size_t size, off_t off)
{
	char small[FS_READ_SMALL];
	size_t first = MIN(size, sizeof(small));
	ssize_t n = pread(f->fd, small, first, off);
	if (n < 0) {
		fs_reply_err(req, errno);
		return;
	}
	if ((size_t)n < first || size <= sizeof(small)) {
		fuse_reply_buf(req, small, (size_t)n);
		return;
	}
	char *buf = g_try_malloc(size);
	if (!buf) {
		fs_reply_err(req, ENOMEM);
		return;
	}
	n = pread(f->fd, buf, size, off); /* again from off: one read, one snapshot */
	if (n < 0)
		fs_reply_err(req, errno);
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
			fs_reply_err(req, f->syn ? EINVAL : EBADF);
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
			fs_reply_err(req, r == FS_SYN_PASS ? EIO : r);
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
		fs_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	(void)ino;
	od_shadowfs *fs = fs_of(req);
	fs_file *f = (fs_file *)(uintptr_t)fi->fh;

	if (size > 0 && f->ctx.write_err) {
		fs_reply_err(req, f->ctx.write_err); /* cgroup_file_write(): before any handler */
		return;
	}
	if (!f->syn || !f->syn->write) {
		if (f->fd < 0)
			fs_reply_err(req, f->syn ? EINVAL : EBADF);
		else
			write_real(req, f, buf, size, off);
		return;
	}
	/* cgroup files take one page per write (kernfs atomic_write_len) */
	if (size > fs->page_size) {
		fs_reply_err(req, E2BIG);
		return;
	}
	fs_synth_ctx c = f->ctx;
	c.req = req;
	c.fd = f->fd;
	int r = f->syn->write(&c, buf, size);
	if (r == FS_SYN_PASS && f->fd >= 0)
		write_real(req, f, buf, size, off);
	else if (r != 0)
		fs_reply_err(req, r == FS_SYN_PASS ? EIO : r);
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
