/* fdguard.c — identity of a caller's descriptor from procfs, and the descriptor
 * reserve; see fdguard.h (the closer is closer.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <glib.h>

#include "fdguard.h"

static void proc_path(char *buf, size_t size, pid_t pid, const char *what, int fd)
{
	if (pid > 0)
		snprintf(buf, size, "/proc/%d/%s/%d", (int)pid, what, fd);
	else
		snprintf(buf, size, "/proc/self/%s/%d", what, fd);
}

/* fdinfo's "flags:" line, f_flags in octal (seq_show: "pos:" first, then "flags:"). */
static bool fdinfo_flags(const char *text, unsigned long *flags)
{
	const char *f = strncmp(text, "pos:", 4) == 0 ? strstr(text, "\nflags:") : NULL;
	return f && sscanf(f + 7, "%lo", flags) == 1;
}

/* Is descriptor fd of process pid an O_PATH one? v1's fdget() skips O_PATH files
 * (FMODE_PATH): such a number is EBADF there, whatever file it names, so it is for us
 * too. 0 no, EBADF yes or no such fd. */
static int fd_not_opath(pid_t pid, int fd)
{
	char path[64];
	proc_path(path, sizeof path, pid, "fdinfo", fd);
	g_autofree char *text = NULL;
	unsigned long flags;
	if (!g_file_get_contents(path, &text, NULL, NULL) || !fdinfo_flags(text, &flags))
		return EBADF;
	return (flags & O_PATH) ? EBADF : 0;
}

int fs_fd_is_eventfd(pid_t pid, int fd)
{
	char path[64], target[64];
	if (fd < 0)
		return EBADF;
	proc_path(path, sizeof path, pid, "fd", fd);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n < 0)
		return errno == ENOENT ? EBADF : EINVAL;
	target[n] = 0;
	/* an anon inode's d_dname; any file's path starts with '/' */
	if (strcmp(target, "anon_inode:[eventfd]") != 0)
		return EINVAL;
	return fd_not_opath(pid, fd); /* an O_PATH reopening of an eventfd (/proc/self/fd/N) */
}

/* The "maj:min" of mount mnt_id in a mountinfo file; false if it is not listed. One line
 * at a time: the table is the caller's, as large as its mount namespace; read whole, each
 * lookup took as much of the daemon's (locked) heap as the caller's table is long. */
static bool mount_dev(const char *mountinfo, int mnt_id, dev_t *dev)
{
	FILE *f = fopen(mountinfo, "re");
	if (!f)
		return false;
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	while (!found && getline(&line, &cap, f) > 0) {
		int id, parent;
		unsigned maj, min;
		if (sscanf(line, "%d %d %u:%u", &id, &parent, &maj, &min) == 4 && id == mnt_id) {
			*dev = makedev(maj, min);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

int fs_fd_identity(pid_t pid, int fd, dev_t *dev, uint64_t *ino)
{
	char path[64];
	if (fd < 0)
		return EBADF;
	proc_path(path, sizeof path, pid, "fdinfo", fd);
	g_autofree char *text = NULL;
	GError *ge = NULL;
	if (!g_file_get_contents(path, &text, NULL, &ge)) {
		bool gone = g_error_matches(ge, G_FILE_ERROR, G_FILE_ERROR_NOENT);
		g_error_free(ge);
		return gone ? EBADF : EINVAL;
	}
	const char *m = strstr(text, "\nmnt_id:");
	const char *i = strstr(text, "\nino:");
	int mnt_id;
	uint64_t v;
	if (!m || !i || sscanf(m + 8, "%d", &mnt_id) != 1 || sscanf(i + 5, "%" SCNu64, &v) != 1)
		return EINVAL;
	unsigned long flags;
	if (!fdinfo_flags(text, &flags))
		return EINVAL;
	if (flags & O_PATH)
		return EBADF; /* fdget() skips it: v1 answered EBADF (fd_not_opath) */
	/* Mount ids are unique across mount namespaces: the caller's table lists its
	 * own mounts (a container's bind mount of the shadow), ours the host's. */
	char mi[64];
	if (pid > 0)
		snprintf(mi, sizeof mi, "/proc/%d/mountinfo", (int)pid);
	else
		snprintf(mi, sizeof mi, "/proc/self/mountinfo");
	if (!mount_dev(mi, mnt_id, dev) && !(pid > 0 && mount_dev("/proc/self/mountinfo", mnt_id, dev)))
		return EINVAL;
	*ino = v;
	return 0;
}

int fs_eventfd_id(pid_t pid, int fd, uint64_t *id)
{
	char path[64];
	if (fd < 0)
		return EBADF;
	proc_path(path, sizeof path, pid, "fdinfo", fd);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return EBADF;
	const char *p = strstr(text, "\neventfd-id:");
	return p && sscanf(p + 13, "%" SCNu64, id) == 1 ? 0 : EINVAL;
}

/* RLIMIT_NOFILE's soft limit, read again at most once a second: every open for a
 * caller asks (one getrlimit a descriptor was a tenth of an open's system calls,
 * x-write-strace 2026-12-06), and a limit changed from outside (prlimit(1)) is seen
 * within the second; until then the kernel's own EMFILE still holds. */
static bool nofile_limit(struct rlimit *rl)
{
	static gint64 read_at_us; /* 0: never */
	static rlim_t cur;
	static GMutex lock;
	gint64 now = g_get_monotonic_time();
	g_mutex_lock(&lock);
	bool ok = true;
	if (!read_at_us || now - read_at_us >= G_USEC_PER_SEC) {
		struct rlimit got;
		ok = getrlimit(RLIMIT_NOFILE, &got) == 0;
		if (ok) {
			cur = got.rlim_cur;
			read_at_us = now;
		}
	}
	rl->rlim_cur = cur;
	g_mutex_unlock(&lock);
	return ok;
}

size_t fs_fd_budget(void)
{
	struct rlimit rl;
	if (!nofile_limit(&rl) || rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	rlim_t reserve = MAX((rlim_t)FS_FD_RESERVE_MIN, rl.rlim_cur / FS_FD_RESERVE_SHARE);
	if (reserve > rl.rlim_cur / 2)
		reserve = rl.rlim_cur / 2;
	return (size_t)(rl.rlim_cur - reserve);
}

bool fs_fd_within_budget(int fd)
{
	return fd >= 0 && (size_t)fd < fs_fd_budget();
}
