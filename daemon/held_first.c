/* held_first.c — see held_first.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "held_first.h"
#include "oomd/persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

#define MAX_DEPTH 64 /* as deep as the controller climbs for ancestors */

/* dfd: an O_PATH descriptor of the directory whose id (inode) is dir_id. */
static size_t held_in(od_controller *c, int dfd, uint64_t dir_id, int depth)
{
	int rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rfd < 0 ? NULL : fdopendir(rfd);
	if (!d) {
		if (rfd >= 0)
			close(rfd);
		return 0; /* removed meanwhile; the walk sees what is there */
	}
	size_t added = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue; /* a file: its state lookup below would find none anyway */
		bool held = od_persist_held_at(dfd, de->d_name) == 1;
		struct stat st;
		if (!held && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* kernfs: st_nlink = 2 + subdirectories (kernfs_refresh_inode) */
		bool parent = !held && st.st_nlink > 2 && depth < MAX_DEPTH;
		if (!held && !parent)
			continue;
		int cfd = openat(dfd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		if (held) {
			uint64_t id = 0;
			int e = od_controller_add(c, dir_id, cfd, &id);
			if (e == 0)
				added++;
			else if (e != ENOENT)
				g_warning("held cgroup %s: cannot add it first: %s", de->d_name, g_strerror(e));
			parent = fstat(cfd, &st) == 0 && st.st_nlink > 2 && depth < MAX_DEPTH;
		}
		if (parent)
			added += held_in(c, cfd, (uint64_t)st.st_ino, depth + 1);
		close(cfd);
	}
	closedir(d);
	return added;
}

size_t od_adopt_held_first(od_controller *c, int root_fd)
{
	struct stat st;
	if (fstat(root_fd, &st) < 0)
		return 0;
	gint64 t0 = g_get_monotonic_time();
	size_t n = held_in(c, root_fd, (uint64_t)st.st_ino, 0);
	if (n)
		g_message("%zu held cgroups adopted first, in %.1f ms", n,
			  (g_get_monotonic_time() - t0) / 1000.0);
	return n;
}
