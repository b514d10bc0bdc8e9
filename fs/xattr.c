/* xattr.c — extended attributes pass through (systemd marks delegated cgroups
 * with user.* and trusted.* xattrs), as the caller could use them on the real
 * tree: the daemon works as root, so it applies the kernel's xattr_permission()
 * and simple_xattr_list() rules for the caller itself (access.c), and never
 * passes the daemon's own names (<namespace>.oomdelayfs.*, its state) in either
 * direction. O_PATH descriptors do not take xattr calls, hence the
 * /proc/self/fd path of the held descriptor. Synthetic files have none.
 * Every error reply goes through fs_reply_err: none is ENOSYS (fs_reply_errno).
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "charge.h"
#include "fs_private.h"

/* The real node of ino and its attributes (st NULL: not wanted), or NULL with *err
 * (0: a synthetic file). */
static fs_node *real_node(fuse_req_t req, fuse_ino_t ino, struct stat *st, int *err)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	*err = 0;
	if (!n) {
		*err = ESTALE;
		return NULL;
	}
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL))
		return NULL;
	*err = st ? fs_stat_fd(n->fd, st) : 0;
	if (*err)
		return NULL;
	return n;
}

/* 0 with the node's path and descriptor (and the caller, if asked for), or the
 * errno to answer (missing: for a synthetic file). */
static int checked(fuse_req_t req, fuse_ino_t ino, const char *name, int mask, int missing,
		   char path[64], int *fd, fs_caller **who)
{
	struct stat st;
	int err;
	/* the kernel asks for security.capability before every write (no SB_NOSEC without
	 * FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 cannot offer): that read is anyone's
	 * and needs neither /proc of the caller (x-write-strace: 13 system calls a write)
	 * nor the file's attributes (an fstat a write; a removed file still answers the
	 * getxattr's own errno) */
	bool judged = who || fs_xattr_needs_caller(name, mask);
	fs_node *n = real_node(req, ino, judged ? &st : NULL, &err);
	if (!n)
		return err ? err : missing;
	g_autoptr(fs_caller) c = judged ? fs_caller_new(req) : NULL;
	err = fs_xattr_permission(c, judged ? &st : NULL, name, mask);
	if (err)
		return err;
	fs_proc_path(path, n->fd);
	if (fd)
		*fd = n->fd;
	if (who)
		*who = g_steal_pointer(&c);
	return 0;
}

/* The value's memory (kernfs keeps it in kernel memory, accounted on 6.12) is
 * charged to the caller's cgroup, not to ours (charge.h; issue 21, item 2).
 * "Not now" is EBUSY: the VFS would turn EAGAIN into EOPNOTSUPP (charge.h). */
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	char path[64];
	g_autoptr(fs_caller) c = NULL;
	int fd = -1;
	int err = checked(req, ino, name, W_OK, EPERM, path, &fd, &c);
	if (!err) {
		fs_charged_syscall sx = { SYS_setxattr, { FS_FD_PATH(fd), FS_STR(name), FS_BUF(value, size),
							  FS_INT(size), FS_INT(flags) } };
		err = fs_charged_call(fs_of(req), c, &sx, EBUSY);
	}
	fs_reply_err(req, err);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char path[64];
	int err = checked(req, ino, name, W_OK, ENODATA, path, NULL, NULL);
	if (!err && removexattr(path, name) < 0)
		err = errno;
	fs_reply_err(req, err);
}

/* Replies with buf[0..len) when size allows it, its length when size is 0. */
static void reply_sized(fuse_req_t req, size_t size, const char *buf, size_t len)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fs_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

/* The whole value (or list) of path: a size probe can go stale before the read
 * (another writer), so grow and retry on ERANGE. NULL with *err. */
static char *get_all(const char *path, const char *name, ssize_t *len, int *err)
{
	size_t cap = 256;
	for (int tries = 0; tries < 8; tries++) {
		char *buf = g_malloc(cap);
		ssize_t r = name ? getxattr(path, name, buf, cap) : listxattr(path, buf, cap);
		if (r >= 0) {
			*len = r;
			return buf;
		}
		*err = errno;
		g_free(buf);
		if (*err != ERANGE)
			return NULL;
		r = name ? getxattr(path, name, NULL, 0) : listxattr(path, NULL, 0);
		if (r < 0) {
			*err = errno;
			return NULL;
		}
		cap = (size_t)r + 256;
	}
	return NULL; /* *err is ERANGE: it kept growing */
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char path[64];
	int err = checked(req, ino, name, R_OK, ENODATA, path, NULL, NULL);
	if (err) {
		fs_reply_err(req, err);
		return;
	}
	ssize_t len = 0;
	g_autofree char *buf = get_all(path, name, &len, &err);
	if (!buf)
		fs_reply_err(req, err);
	else
		reply_sized(req, size, buf, (size_t)len);
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct stat st;
	int err;
	fs_node *n = real_node(req, ino, &st, &err);
	if (!n) {
		if (err)
			fs_reply_err(req, err);
		else
			reply_sized(req, size, NULL, 0);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	ssize_t len = 0;
	g_autofree char *all = get_all(path, NULL, &len, &err);
	if (!all) {
		fs_reply_err(req, err);
		return;
	}
	/* only the names the caller would see listed on the real tree */
	g_autoptr(fs_caller) c = fs_caller_new(req);
	g_autofree char *out = g_malloc(len > 0 ? (size_t)len : 1);
	size_t used = 0;
	for (ssize_t i = 0; i < len;) {
		const char *nm = all + i;
		size_t l = strnlen(nm, (size_t)(len - i));
		if (fs_xattr_listed(c, nm) && (size_t)i + l < (size_t)len) {
			memcpy(out + used, nm, l + 1);
			used += l + 1;
		}
		i += (ssize_t)l + 1;
	}
	reply_sized(req, size, out, used);
}
