/* charge.c — charge.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "charge.h"
#include "zygote_link.h"

/* The root of the cgroup2 mount that holds the served tree (its root may be a
 * subtree): up from it while ".." stays on the same file system. fd or -errno. */
static int cgroup_mount_root(od_shadowfs *fs)
{
	fs_node *r = fs_inodes_get(fs->inodes, FUSE_ROOT_ID);
	if (!r)
		return -ESTALE;
	int fd = openat(r->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? -errno : -EIO;
	for (int depth = 0; depth < 256; depth++) {
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) < 0 || ust.st_dev != st.st_dev || ust.st_ino == st.st_ino) {
			if (up >= 0)
				close(up);
			return fd;
		}
		close(fd);
		fd = up;
		st = ust;
	}
	return fd;
}

/* The caller's cgroup directory (O_RDONLY, as CLONE_INTO_CGROUP takes it), or -errno. */
static int caller_cgroup(od_shadowfs *fs, const fs_caller *c)
{
	if (!c->known || c->procfd < 0)
		return -EACCES;
	g_autofree char *text = fs_caller_read(c, "cgroup");
	const char *p = text ? strstr(text, "0::/") : NULL;
	if (!p || (p != text && p[-1] != '\n'))
		return -EACCES; /* no cgroup2 line: not the hierarchy we serve */
	p += 4;
	g_autofree char *rel = g_strndup(p, strcspn(p, "\n"));
	/* A ".." component: outside our cgroup namespace's view (cgroup_path_ns). */
	g_autofree char *slashed = g_strconcat("/", rel, "/", NULL);
	if (strstr(slashed, "/../") || g_str_has_suffix(rel, " (deleted)"))
		return -EACCES;
	int root = cgroup_mount_root(fs);
	if (root < 0)
		return root;
	int fd = openat(root, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = errno;
	close(root);
	return fd < 0 ? -err : fd;
}

/* One line per 10 s at most: a tenant can freeze its cgroup under every call. */
static void warn_timed_out(int timeout_ms)
{
	static GMutex lock;
	static gint64 last;
	if (fs_warn_due(&lock, &last))
		g_warning("a caller's setxattr/mkdir did not finish in its cgroup within %d ms (a frozen "
			  "cgroup?): its child was killed, the caller is told to try again (EBUSY, EAGAIN)",
			  timeout_ms);
}

/* Is the served tree on cgroup2? Only the fs tests serve another file system
 * (a directory tree standing in for it): there is no cgroup to charge there. */
static bool on_cgroup2(od_shadowfs *fs)
{
	fs_node *r = fs_inodes_get(fs->inodes, FUSE_ROOT_ID);
	struct statfs sf;
	return !r || fstatfs(r->fd, &sf) != 0 || sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Charged calls in flight of non-root callers: per uid and together (charge.h). */
static GMutex gate_lock;
static GHashTable *gate_by_uid; /* uid -> count */
static unsigned gate_nonroot;

static bool gate_enter(uid_t uid, unsigned max_nonroot)
{
	g_mutex_lock(&gate_lock);
	if (!gate_by_uid)
		gate_by_uid = g_hash_table_new(g_direct_hash, g_direct_equal);
	unsigned n = GPOINTER_TO_UINT(g_hash_table_lookup(gate_by_uid, GUINT_TO_POINTER(uid)));
	bool ok = n < FS_CHARGE_PER_UID && gate_nonroot < max_nonroot;
	if (ok) {
		g_hash_table_insert(gate_by_uid, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n + 1));
		gate_nonroot++;
	}
	g_mutex_unlock(&gate_lock);
	return ok;
}

static void gate_leave(uid_t uid)
{
	g_mutex_lock(&gate_lock);
	unsigned n = GPOINTER_TO_UINT(g_hash_table_lookup(gate_by_uid, GUINT_TO_POINTER(uid)));
	if (n > 1)
		g_hash_table_insert(gate_by_uid, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n - 1));
	else
		g_hash_table_remove(gate_by_uid, GUINT_TO_POINTER(uid));
	gate_nonroot--;
	g_mutex_unlock(&gate_lock);
}

/* The call on this thread (a tree with no cgroup to charge): 0 or errno. */
static int run_here(const fs_charged_syscall *sc)
{
	long a[6];
	char paths[6][64];
	for (int i = 0; i < 6; i++) {
		const fs_charge_arg *x = &sc->arg[i];
		if (x->kind == FS_ARG_BUF) {
			a[i] = (long)x->buf;
		} else if (x->kind == FS_ARG_FD_PATH) {
			fs_proc_path(paths[i], (int)x->v);
			a[i] = (long)paths[i];
		} else {
			a[i] = x->v;
		}
	}
	long r = syscall(sc->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	return r < 0 ? errno : 0;
}

static int charged_in(od_shadowfs *fs, const fs_caller *c, const fs_charged_syscall *sc)
{
	int cg = caller_cgroup(fs, c);
	if (cg < 0)
		return -cg;
	for (int depth = 0; depth < 256; depth++) {
		bool placed, killed;
		int err = fs_zygote_call(fs->opts.zygote, cg, sc, FS_CHARGE_TIMEOUT_MS, &placed, &killed);
		if (killed)
			warn_timed_out(FS_CHARGE_TIMEOUT_MS);
		if (placed) {
			close(cg);
			return err;
		}
		int up = openat(cg, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cg);
		if (up < 0)
			return err;
		cg = up;
	}
	close(cg);
	return EBUSY;
}

int fs_charged_call(od_shadowfs *fs, const fs_caller *c, const fs_charged_syscall *sc, int busy)
{
	int err;
	if (!on_cgroup2(fs))
		err = run_here(sc);
	else if (c->known && c->init_userns && c->fsuid == 0) /* root of our user namespace */
		err = charged_in(fs, c, sc);
	else if (!gate_enter(c->fsuid, MAX(1u, fs->opts.max_threads / 2)))
		err = EAGAIN; /* a container's root is bounded too */
	else {
		err = charged_in(fs, c, sc);
		gate_leave(c->fsuid);
	}
	return fs_reply_errno(err == EAGAIN ? busy : err);
}
