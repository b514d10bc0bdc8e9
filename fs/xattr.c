/* xattr.c — extended attributes pass through (systemd marks delegated cgroups
 * with user.* and trusted.* xattrs). O_PATH descriptors do not take xattr
 * calls, hence the /proc/self/fd path of the held descriptor. Synthetic files
 * have none.
 */
#include <errno.h>
#include <sys/xattr.h>

#include "fs_private.h"

static fs_node *real_node(fuse_req_t req, fuse_ino_t ino, int *err)
{
	fs_node *n = fs_inodes_get(fs_of(req)->inodes, ino);
	if (!n) {
		*err = ESTALE;
		return NULL;
	}
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL)) {
		*err = 0;
		return NULL;
	}
	return n;
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	int err;
	fs_node *n = real_node(req, ino, &err);
	if (!n) {
		fuse_reply_err(req, err ? err : EPERM);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	fuse_reply_err(req, setxattr(path, name, value, size, flags) < 0 ? errno : 0);
}

static void reply_sized(fuse_req_t req, size_t size, ssize_t (*get)(const char *, void *, size_t, void *),
			const char *path, void *arg)
{
	if (size == 0) {
		ssize_t r = get(path, NULL, 0, arg);
		if (r < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_xattr(req, (size_t)r);
		return;
	}
	char *buf = g_try_malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t r = get(path, buf, size, arg);
	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	g_free(buf);
}

static ssize_t get_one(const char *path, void *buf, size_t size, void *name)
{
	return getxattr(path, name, buf, size);
}

static ssize_t get_list(const char *path, void *buf, size_t size, void *unused)
{
	(void)unused;
	return listxattr(path, buf, size);
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	int err;
	fs_node *n = real_node(req, ino, &err);
	if (!n) {
		fuse_reply_err(req, err ? err : ENODATA);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	reply_sized(req, size, get_one, path, (void *)name);
}

void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	int err;
	fs_node *n = real_node(req, ino, &err);
	if (!n) {
		if (err)
			fuse_reply_err(req, err);
		else if (size == 0)
			fuse_reply_xattr(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	reply_sized(req, size, get_list, path, NULL);
}

void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int err;
	fs_node *n = real_node(req, ino, &err);
	if (!n) {
		fuse_reply_err(req, err ? err : ENODATA);
		return;
	}
	char path[64];
	fs_proc_path(path, n->fd);
	fuse_reply_err(req, removexattr(path, name) < 0 ? errno : 0);
}
