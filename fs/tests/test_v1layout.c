/* test_v1layout.c — the v1 layout (--layout v1) over the fixture: files read
 * from the controller's L and the v2 files, and the v1 state a reset leaves
 * (the kept memory.peak descriptor, the failcnt baseline) dropped when the
 * controller says the cgroup is gone (the stub fires the removed hook, as the
 * daemon's watcher does after an rmdir). Root + /dev/fuse. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oomd/shadowfs.h"
#include "../fs_private.h"
#include "../v1state.h"
#include "stub_controller.h"
#include "fixture.h"

static void v1_setup(void)
{
	fx_v1_layout = true;
	fx_setup();
}

TestSuite(v1layout, .init = v1_setup, .fini = fx_teardown, .timeout = 20);

/* Rewrites a fixture file in place (same inode), as the kernel's value changing. */
static void overwrite(const char *rel, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

/* Descriptors of this process open on the fixture file whose inode is ino. */
static int fds_on(ino_t ino)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode) && st.st_ino == ino)
			n++;
	}
	closedir(d);
	return n;
}

Test(v1layout, limit_is_the_controllers_L_in_v1_format)
{
	SKIP_UNLESS_READY();
	g_autofree char *unl = slurp("a/memory.limit_in_bytes");
	cr_assert_str_eq(unl, "9223372036854771712\n", "max is PAGE_COUNTER_MAX pages");
	cr_assert_eq(poke("a/memory.limit_in_bytes", "1M"), 0);
	oe_view v;
	cr_assert(od_controller_view(ctl, real_ino("a"), &v));
	cr_assert_eq(v.limit, 1 << 20, "the write reached the controller");
	g_autofree char *l = slurp("a/memory.limit_in_bytes");
	cr_assert_str_eq(l, "1048576\n");
	g_autofree char *real = g_build_filename(fixture, "a/memory.max", NULL);
	g_autofree char *k = NULL;
	cr_assert(g_file_get_contents(real, &k, NULL, NULL));
	cr_assert_str_eq(k, "max\n", "never written past the controller");
	cr_assert_eq(poke("a/memory.limit_in_bytes", "12x"), EINVAL);
	cr_assert_eq(poke("memory.limit_in_bytes", "1M"), EINVAL, "v1: no limit on the root");
}

Test(v1layout, a_cgroup_new_to_the_controller_is_added_once)
{
	SKIP_UNLESS_READY();
	g_autofree char *dir = g_build_filename(fixture, "fresh", NULL);
	cr_assert_eq(mkdir(dir, 0755), 0);
	put("fresh/memory.max", "8192\n");
	int before = stub_controller_adds(ctl);
	g_autofree char *l = slurp("fresh/memory.limit_in_bytes");
	cr_assert_str_eq(l, "8192\n");
	cr_assert_gt(stub_controller_adds(ctl), before, "the read added the cgroup");
	oe_view v;
	cr_assert(od_controller_view(ctl, real_ino("fresh"), &v));
}

Test(v1layout, a_cgroup_the_controller_cannot_take_answers_enodev)
{
	SKIP_UNLESS_READY();
	int fd = open_in_mnt("a/b/memory.limit_in_bytes", O_RDONLY);
	/* the stub refuses a directory without memory.max, as the controller a removed cgroup */
	g_autofree char *real = g_build_filename(fixture, "a/b/memory.max", NULL);
	cr_assert_eq(unlink(real), 0);
	stub_controller_removed(ctl, real_ino("a/b"));
	char buf[64];
	cr_assert_eq(pread(fd, buf, sizeof buf, 0), -1);
	cr_assert_eq(errno, ENODEV);
	close(fd);
	g_autofree char *ok = slurp("a/memory.limit_in_bytes");
	cr_assert_not_null(ok, "the cgroup beside it still answers");
}

Test(v1layout, reset_state_goes_with_the_cgroup)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a/b");
	put("a/b/memory.peak", "4096\n");
	put("a/b/memory.events", "max 3\noom 0\noom_kill 0\n");
	g_autofree char *peak = g_build_filename(fixture, "a/b/memory.peak", NULL);
	struct stat kept;
	cr_assert_eq(stat(peak, &kept), 0);

	cr_assert_eq(poke("a/b/memory.max_usage_in_bytes", "0"), 0);
	cr_assert_eq(poke("a/b/memory.failcnt", "0"), 0);
	cr_assert_eq(fs_v1state_entries(), 1);
	cr_assert_eq(fs_v1state_fds(), 1);
	cr_assert_eq(fds_on(kept.st_ino), 1, "the reset memory.peak is kept open");
	/* read through the kept file, not the name: a new file under the name is not read */
	overwrite("a/b/memory.peak", "8192\n");
	put("a/b/memory.peak", "12288\n");
	g_autofree char *m = slurp("a/b/memory.max_usage_in_bytes");
	cr_assert_str_eq(m, "8192\n");
	g_autofree char *f = slurp("a/b/memory.failcnt");
	cr_assert_str_eq(f, "0\n", "counted from the reset");

	/* another cgroup's state stays */
	put("a/memory.peak", "4096\n");
	cr_assert_eq(poke("a/memory.max_usage_in_bytes", "0"), 0);
	cr_assert_eq(fs_v1state_entries(), 2);

	stub_controller_removed(ctl, id);
	cr_assert_eq(fs_v1state_entries(), 1, "the removed cgroup's entry is gone");
	cr_assert_eq(fs_v1state_fds(), 1);
	cr_assert_eq(fds_on(kept.st_ino), 0, "its memory.peak descriptor is closed");
	struct stat other;
	g_autofree char *apeak = g_build_filename(fixture, "a/memory.peak", NULL);
	cr_assert_eq(stat(apeak, &other), 0);
	cr_assert_eq(fds_on(other.st_ino), 1, "the other cgroup's is not");
	stub_controller_removed(ctl, real_ino("a"));
	cr_assert_eq(fs_v1state_entries(), 0);
	cr_assert_eq(fds_on(other.st_ino), 0);
}

/* Round three (s-v1peak): every max_usage reset keeps a descriptor for the cgroup's
 * life, and a tenant may reset every cgroup it makes. Counted against the writer:
 * uid 1000 keeps FS_V1_PEAKS_PER_PRINCIPAL, the next reset is ENOMEM and keeps none;
 * root's reset beside it works; a cgroup gone gives its slot back. */
static int reset_as_1000(int from, int to)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(255);
		int last = 0;
		for (int i = from; i < to; i++) {
			char rel[64];
			snprintf(rel, sizeof rel, "t%d/memory.max_usage_in_bytes", i);
			last = poke(rel, "0");
			if (last && i < to - 1)
				_exit(100 + (last & 63)); /* refused too early */
		}
		_exit(last);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(v1layout, a_tenants_kept_peaks_are_bounded)
{
	SKIP_UNLESS_READY();
	cr_assert_eq(chmod(fixture, 0755), 0); /* mkdtemp made it 0700 */
	int n = FS_V1_PEAKS_PER_PRINCIPAL + 1;
	for (int i = 0; i < n; i++) {
		char d[32], f[64];
		snprintf(d, sizeof d, "t%d", i);
		g_autofree char *dir = g_build_filename(fixture, d, NULL);
		cr_assert_eq(mkdir(dir, 0755), 0);
		snprintf(f, sizeof f, "%s/memory.max", d);
		put(f, "max\n");
		g_autofree char *mf = g_build_filename(fixture, f, NULL);
		cr_assert_eq(chown(mf, 1000, 1000), 0);
		snprintf(f, sizeof f, "%s/memory.peak", d);
		put(f, "4096\n");
	}
	cr_assert_eq(reset_as_1000(0, n), ENOMEM, "uid 1000's reset past its share");
	cr_assert_eq(fs_v1state_fds(), (size_t)FS_V1_PEAKS_PER_PRINCIPAL, "the refused reset kept nothing");
	/* root beside it */
	put("a/memory.peak", "4096\n");
	cr_assert_eq(poke("a/memory.max_usage_in_bytes", "0"), 0, "root's reset");
	cr_assert_eq(fs_v1state_fds(), (size_t)FS_V1_PEAKS_PER_PRINCIPAL + 1);
	/* a reset again of its own cgroup replaces its descriptor, within the share */
	cr_assert_eq(reset_as_1000(0, 1), 0, "uid 1000 resets t0 again");
	/* one of its cgroups gone: its next reset fits */
	stub_controller_removed(ctl, real_ino("t0"));
	cr_assert_eq(reset_as_1000(n - 1, n), 0, "after t0 went, uid 1000's last reset fits");
	cr_assert_eq(fs_v1state_fds(), (size_t)FS_V1_PEAKS_PER_PRINCIPAL + 1);
}
