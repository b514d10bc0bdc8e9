/* fdguard.c — identity of a caller's descriptor from procfs, and the descriptor
 * reserve; see fdguard.h (the closer is closer.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
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
	return strcmp(target, "anon_inode:[eventfd]") == 0 ? 0 : EINVAL;
}

/* The "maj:min" of mount mnt_id in a mountinfo file; false if it is not listed. */
static bool mount_dev(const char *mountinfo, int mnt_id, dev_t *dev)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents(mountinfo, &text, NULL, NULL))
		return false;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		int id, parent;
		unsigned maj, min;
		if (sscanf(line, "%d %d %u:%u", &id, &parent, &maj, &min) == 4 && id == mnt_id) {
			*dev = makedev(maj, min);
			return true;
		}
		line = next;
	}
	return false;
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

bool fs_fd_within_budget(int fd)
{
	struct rlimit rl;
	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return fd >= 0;
	rlim_t reserve = MAX((rlim_t)FS_FD_RESERVE_MIN, rl.rlim_cur / FS_FD_RESERVE_SHARE);
	if (reserve > rl.rlim_cur / 2)
		reserve = rl.rlim_cur / 2;
	return (rlim_t)fd < rl.rlim_cur - reserve;
}
