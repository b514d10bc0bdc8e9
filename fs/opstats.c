/* opstats.c — implements fsstats.h: the session serves fs_counted_ops(): the
 * survival table (takeover.c: fs_ops behind the stale-handle guards) with each
 * handler behind a wrapper that counts the request (relaxed atomic increment)
 * and calls it. */
#include "fs_private.h"
#include "oomd/fsstats.h"

enum {
	OP_lookup, OP_forget, OP_forget_multi, OP_getattr, OP_setattr, OP_readlink, OP_mknod,
	OP_symlink, OP_link, OP_mkdir, OP_unlink, OP_rmdir, OP_rename, OP_open, OP_read,
	OP_write, OP_release, OP_fsync, OP_opendir, OP_readdir, OP_readdirplus, OP_releasedir, OP_statfs,
	OP_setxattr, OP_getxattr, OP_listxattr, OP_removexattr, OP_create, OP_poll, OP_N
};

static const char *const op_names[OP_N] = {
#define N(x) [OP_##x] = #x
	N(lookup), N(forget), N(forget_multi), N(getattr), N(setattr), N(readlink), N(mknod),
	N(symlink), N(link), N(mkdir), N(unlink), N(rmdir), N(rename), N(open), N(read),
	N(write), N(release), N(fsync), N(opendir), N(readdir), N(readdirplus), N(releasedir), N(statfs),
	N(setxattr), N(getxattr), N(listxattr), N(removexattr), N(create), N(poll),
#undef N
};

/* One session per process: the counters are the process's. */
static uint64_t counts[OP_N];
/* what each wrapper calls: fs_survival_ops(), copied once before any request */
static struct fuse_lowlevel_ops base;

#define W(name, params, args) \
	static void w_##name params \
	{ \
		__atomic_fetch_add(&counts[OP_##name], 1, __ATOMIC_RELAXED); \
		base.name args; \
	}
typedef struct fuse_file_info ffi;
W(lookup, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(forget, (fuse_req_t r, fuse_ino_t i, uint64_t n), (r, i, n))
W(forget_multi, (fuse_req_t r, size_t c, struct fuse_forget_data *f), (r, c, f))
W(getattr, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
W(setattr, (fuse_req_t r, fuse_ino_t i, struct stat *a, int s, ffi *fi), (r, i, a, s, fi))
W(readlink, (fuse_req_t r, fuse_ino_t i), (r, i))
W(mknod, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d), (r, p, n, m, d))
W(symlink, (fuse_req_t r, const char *l, fuse_ino_t p, const char *n), (r, l, p, n))
W(link, (fuse_req_t r, fuse_ino_t i, fuse_ino_t p, const char *n), (r, i, p, n))
W(mkdir, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m), (r, p, n, m))
W(unlink, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(rmdir, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(rename, (fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned f),
  (r, p, n, np, nn, f))
W(open, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
W(read, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi), (r, i, s, o, fi))
W(write, (fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, ffi *fi),
  (r, i, b, s, o, fi))
W(release, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
W(fsync, (fuse_req_t r, fuse_ino_t i, int d, ffi *fi), (r, i, d, fi))
W(opendir, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
W(readdir, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi), (r, i, s, o, fi))
W(readdirplus, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi), (r, i, s, o, fi))
W(releasedir, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
W(statfs, (fuse_req_t r, fuse_ino_t i), (r, i))
W(setxattr, (fuse_req_t r, fuse_ino_t i, const char *n, const char *v, size_t s, int f),
  (r, i, n, v, s, f))
W(getxattr, (fuse_req_t r, fuse_ino_t i, const char *n, size_t s), (r, i, n, s))
W(listxattr, (fuse_req_t r, fuse_ino_t i, size_t s), (r, i, s))
W(removexattr, (fuse_req_t r, fuse_ino_t i, const char *n), (r, i, n))
W(create, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, ffi *fi), (r, p, n, m, fi))
W(poll, (fuse_req_t r, fuse_ino_t i, ffi *fi, struct fuse_pollhandle *ph), (r, i, fi, ph))
#undef W

const struct fuse_lowlevel_ops *fs_counted_ops(void)
{
	static struct fuse_lowlevel_ops ops;
	static gsize done;
	if (g_once_init_enter(&done)) {
		base = *fs_survival_ops();
		ops = base;
		/* Only what the table serves: a NULL stays NULL (the kernel then gets ENOSYS). */
#define S(name) if (base.name) ops.name = w_##name
		S(lookup); S(forget); S(forget_multi); S(getattr); S(setattr); S(readlink);
		S(mknod); S(symlink); S(link); S(mkdir); S(unlink); S(rmdir); S(rename); S(open);
		S(read); S(write); S(release); S(fsync); S(opendir); S(readdir); S(readdirplus);
		S(releasedir);
		S(statfs); S(setxattr); S(getxattr); S(listxattr); S(removexattr); S(create);
		S(poll);
#undef S
		g_once_init_leave(&done, 1);
	}
	return &ops;
}

size_t od_fs_opcounts(od_fs_opcount *out, size_t max)
{
	size_t n = 0;
	for (int i = 0; i < OP_N && n < max; i++) {
		out[n].op = op_names[i];
		out[n].n = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
		n++;
	}
	return n;
}

size_t od_shadowfs_listeners(od_shadowfs *fs, uint64_t id)
{
	return fs && fs->evctl ? fs_evctl_count(fs->evctl, id) : 0;
}
