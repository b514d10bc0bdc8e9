/* test_charge.c — the charged call's mechanism (charge.h): the child makes the one
 * call and we read its result; a child that cannot finish (a call that blocks, a
 * frozen cgroup) is killed after the time-out and reaped, and the worker answers
 * EAGAIN instead of waiting for the thaw (the review of stop 24: with CLONE_VFORK
 * the worker waited in wait_for_vfork_done until the tenant thawed its cgroup).
 * The frozen case needs a writable cgroup2 mount (root); it SKIPs without one. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../charge.h"

static char *tmpdir(void)
{
	char *d = g_strdup("/tmp/oomd-charge-XXXXXX");
	cr_assert_not_null(g_mkdtemp(d));
	return d;
}

/* No child of ours left, zombie or alive. */
static void assert_no_child(void)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	int r = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL);
	cr_assert(r < 0 && errno == ECHILD, "a child is left behind (waitid %d, pid %d)", r,
		  (int)si.si_pid);
}

Test(charge, the_child_makes_the_call_and_we_read_its_result)
{
	g_autofree char *d = tmpdir();
	int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fs_charged_syscall mk = { SYS_mkdirat, { dfd, (long)"x", 0700 } };
	bool placed;
	cr_assert_eq(fs_charge_run(-1, &mk, 2000, &placed), 0);
	cr_assert(placed);
	struct stat st;
	cr_assert_eq(fstatat(dfd, "x", &st, 0), 0, "the child's mkdir is not there");
	cr_assert_eq(st.st_mode & 07777, 0700);
	/* a failing call: its errno, from the child's memory, not from our errno */
	errno = 0;
	cr_assert_eq(fs_charge_run(-1, &mk, 2000, &placed), EEXIST);
	fs_charged_syscall bad = { SYS_mkdirat, { 987654, (long)"y", 0700 } };
	cr_assert_eq(fs_charge_run(-1, &bad, 2000, &placed), EBADF);
	assert_no_child();
	unlinkat(dfd, "x", AT_REMOVEDIR);
	close(dfd);
	rmdir(d);
}

Test(charge, a_child_that_does_not_finish_is_killed_after_the_time_out)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	static char buf[8];
	/* read(2) on a pipe whose write end we keep open: blocks for good */
	fs_charged_syscall rd = { SYS_read, { p[0], (long)buf, sizeof buf } };
	bool placed;
	gint64 t0 = g_get_monotonic_time();
	int err = fs_charge_run(-1, &rd, 300, &placed);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert_eq(err, EAGAIN, "got %s", strerror(err));
	cr_assert(ms >= 290 && ms < 2000, "answered after %lld ms for a 300 ms time-out", (long long)ms);
	assert_no_child();
	/* the pipe is intact: the killed child took nothing */
	cr_assert_eq(write(p[1], "ok", 2), 2);
	cr_assert_eq(read(p[0], buf, sizeof buf), 2);
	close(p[0]);
	close(p[1]);
}

/* The cgroup2 mount of this host, or NULL. */
static char *cgroup2_mount(void)
{
	g_autofree char *mi = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &mi, NULL, NULL))
		return NULL;
	g_auto(GStrv) lines = g_strsplit(mi, "\n", -1);
	for (char **l = lines; *l; l++) {
		const char *sep = strstr(*l, " - cgroup2 ");
		if (!sep)
			continue;
		g_auto(GStrv) f = g_strsplit(*l, " ", 6);
		if (g_strv_length(f) >= 5 && strcmp(f[3], "/") == 0)
			return g_strdup(f[4]);
	}
	return NULL;
}

static bool put(const char *dir, const char *file, const char *v)
{
	g_autofree char *p = g_build_filename(dir, file, NULL);
	return g_file_set_contents_full(p, v, -1, G_FILE_SET_CONTENTS_NONE, 0644, NULL);
}

Test(charge, a_frozen_cgroup_costs_the_worker_the_time_out_not_the_thaw)
{
	g_autofree char *root = cgroup2_mount();
	if (!root || access(root, W_OK) != 0)
		cr_skip_test("no writable cgroup2 mount here (%s)", root ? root : "none");
	g_autofree char *cgp = g_strdup_printf("%s/oomd-test-charge-%d", root, (int)getpid());
	if (mkdir(cgp, 0755) != 0)
		cr_skip_test("cannot make a cgroup in %s: %s", root, strerror(errno));
	g_autofree char *freeze = g_build_filename(cgp, "cgroup.freeze", NULL);
	if (access(freeze, W_OK) != 0) {
		rmdir(cgp);
		cr_skip_test("no cgroup.freeze in %s (kernel before 5.2)", cgp);
	}
	int cg = open(cgp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g_autofree char *d = tmpdir();
	int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	fs_charged_syscall mk = { SYS_mkdirat, { dfd, (long)"made", 0700 } };
	bool placed;
	cr_assert(put(cgp, "cgroup.freeze", "1"));
	gint64 t0 = g_get_monotonic_time();
	int err = fs_charge_run(cg, &mk, 300, &placed);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	struct stat st;
	bool made = fstatat(dfd, "made", &st, 0) == 0;
	/* the legitimate call beside: once thawed, the same call works */
	cr_assert(put(cgp, "cgroup.freeze", "0"));
	int after = fs_charge_run(cg, &mk, 2000, &placed);
	bool made_after = fstatat(dfd, "made", &st, 0) == 0;
	unlinkat(dfd, "made", AT_REMOVEDIR);
	close(dfd);
	rmdir(d);
	close(cg);
	rmdir(cgp);
	cr_assert_eq(err, EAGAIN, "frozen: got %s after %lld ms", strerror(err), (long long)ms);
	cr_assert(ms < 2000, "frozen: answered after %lld ms for a 300 ms time-out", (long long)ms);
	cr_assert(!made, "the frozen child made the directory: it ran");
	cr_assert_eq(after, 0, "thawed: %s", strerror(after));
	cr_assert(made_after);
	assert_no_child();
}
