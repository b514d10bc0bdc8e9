/* charge.c — charge.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "charge.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

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
	if (strstr(rel, "..") || g_str_has_suffix(rel, " (deleted)"))
		return -EACCES; /* outside our cgroup namespace's view */
	int root = cgroup_mount_root(fs);
	if (root < 0)
		return root;
	int fd = openat(root, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = errno;
	close(root);
	return fd < 0 ? -err : fd;
}

/* One child in cgroup cg running fn: 0 or errno; *placed false when the cgroup
 * takes no process (threaded: EOPNOTSUPP; internal-process rule: EBUSY). */
static int run_in(int cg, fs_charged_fn fn, void *arg, bool *placed)
{
	int pidfd = -1;
	struct clone_args a = {
		.flags = CLONE_INTO_CGROUP | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = 0,
		.cgroup = (uint64_t)cg,
	};
	*placed = true;
	long pid = syscall(SYS_clone3, &a, sizeof a);
	if (pid == 0)
		_exit(fn(arg) & 0xff); /* system calls only from here on */
	if (pid < 0) {
		int err = errno;
		*placed = !(err == EOPNOTSUPP || err == EBUSY);
		return err;
	}
	siginfo_t si;
	memset(&si, 0, sizeof si);
	int r;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL);
	while (r < 0 && errno == EINTR);
	close(pidfd);
	if (r < 0)
		return errno;
	if (si.si_code == CLD_EXITED)
		return si.si_status;
	return si.si_status == SIGKILL ? ENOMEM : EINTR;
}

/* Is the served tree on cgroup2? Only the fs tests serve another file system
 * (a directory tree standing in for it): there is no cgroup to charge there. */
static bool on_cgroup2(od_shadowfs *fs)
{
	fs_node *r = fs_inodes_get(fs->inodes, FUSE_ROOT_ID);
	struct statfs sf;
	return !r || fstatfs(r->fd, &sf) != 0 || sf.f_type == CGROUP2_SUPER_MAGIC;
}

int fs_charged_call(od_shadowfs *fs, const fs_caller *c, fs_charged_fn fn, void *arg)
{
	if (!on_cgroup2(fs))
		return fn(arg);
	int cg = caller_cgroup(fs, c);
	if (cg < 0)
		return -cg;
	for (int depth = 0; depth < 256; depth++) {
		bool placed;
		int err = run_in(cg, fn, arg, &placed);
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
