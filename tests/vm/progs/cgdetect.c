/* cgdetect - what container software finds when it looks for its cgroup-v2 limits, done the
 * two ways such software does it (run inside a container by tests/vm/containers.sh):
 *
 *   mountinfo: the JVM (CgroupSubsystemFactory), Go's runtime and libcgroup take the mount
 *     point of the `cgroup2` line of /proc/self/mountinfo, join the path of the "0::" line
 *     of /proc/self/cgroup (relative to the mount's root) and read memory.max there;
 *   statfs: systemd (cg_unified_cached) and runc (cgroups.IsCgroup2UnifiedMode) call
 *     statfs("/sys/fs/cgroup") and take f_type == CGROUP2_SUPER_MAGIC as "unified".
 *
 * Output, one line each:
 *   mountinfo cgroup2 <mount point> root=<root> lines=<cgroup2 lines> top=<fstype of the
 *     last mount on that point>
 *   limit <dir>/memory.max <content or error>
 *   delay <dir>/memory.oom_delay_millisecs <content or error>  (there only through oomdelayfs)
 *   statfs /sys/fs/cgroup 0x<f_type> cgroup2|fuse|other
 * Exit: 0, 1 if there is no cgroup2 line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#define CGROUP2_MAGIC 0x63677270UL
#define FUSE_MAGIC 0x65735546UL

/* The first line of `path` (without its newline) in buf, or "error <strerror>". */
static const char *first_line(const char *path, char *buf, size_t len)
{
	FILE *m = fopen(path, "r");
	if (m == NULL || fgets(buf, (int)len, m) == NULL)
		snprintf(buf, len, "error %s", strerror(errno));
	if (m != NULL)
		fclose(m);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

int main(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (f == NULL) {
		perror("/proc/self/mountinfo");
		return 1;
	}
	char line[4096], mnt[1024] = "", root[1024] = "", top[64] = "";
	int n = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		char r[1024], m[1024];
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) != 2)
			continue;
		const char *sep = strstr(line, " - ");
		if (sep == NULL)
			continue;
		char fstype[64];
		if (sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (mnt[0] != '\0' && strcmp(m, mnt) == 0)
			snprintf(top, sizeof(top), "%s", fstype);
		if (strcmp(fstype, "cgroup2") == 0) {
			n++;
			snprintf(mnt, sizeof(mnt), "%s", m);
			snprintf(root, sizeof(root), "%s", r);
			snprintf(top, sizeof(top), "%s", fstype);
		}
	}
	fclose(f);
	if (n == 0) {
		printf("mountinfo no cgroup2 line\n");
		return 1;
	}
	printf("mountinfo cgroup2 %s root=%s lines=%d top=%s\n", mnt, root, n, top);

	char cg[4096] = "";
	f = fopen("/proc/self/cgroup", "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(cg, sizeof(cg), "%s", line + 3);
			cg[strcspn(cg, "\n")] = '\0';
		}
	if (f != NULL)
		fclose(f);
	/* the cgroup path relative to the mount's root, as the JVM does */
	const char *rel = cg;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0 && strncmp(cg, root, rl) == 0)
		rel = cg + rl;
	else if (strcmp(root, "/") != 0)
		rel = "";
	const char *dir = strcmp(rel, "/") == 0 ? "" : rel;
	char path[8192], val[128];
	snprintf(path, sizeof(path), "%s%s/memory.max", mnt, dir);
	printf("limit %s %s\n", path, first_line(path, val, sizeof(val)));
	/* the file oomdelayfs adds, in the same directory */
	snprintf(path, sizeof(path), "%s%s/memory.oom_delay_millisecs", mnt, dir);
	printf("delay %s %s\n", path, first_line(path, val, sizeof(val)));

	struct statfs sf;
	if (statfs("/sys/fs/cgroup", &sf) != 0) {
		printf("statfs /sys/fs/cgroup error %s\n", strerror(errno));
		return 0;
	}
	unsigned long t = (unsigned long)sf.f_type;
	printf("statfs /sys/fs/cgroup 0x%lx %s\n", t,
	       t == CGROUP2_MAGIC ? "cgroup2" : t == FUSE_MAGIC ? "fuse" : "other");
	return 0;
}
