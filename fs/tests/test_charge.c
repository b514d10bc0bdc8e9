/* test_charge.c — the charged call's mechanism (charge.h, zygote.h): the charge
 * zygote's child makes the one call and we read its result; a child that cannot
 * finish (a call that blocks, a frozen cgroup) is killed after the time-out and
 * reaped, and the worker answers EAGAIN instead of waiting for the thaw (the review
 * of stop 24: with CLONE_VFORK the worker waited in wait_for_vfork_done until the
 * tenant thawed its cgroup). The child holds none of our descriptors (issue 21: a
 * child born frozen kept /dev/fuse past the daemon's death); a dead zygote is
 * forked again; a freed one leaves no child behind.
 * The frozen case needs a writable cgroup2 mount (root); it SKIPs without one. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../zygote_link.h"

static char *tmpdir(void)
{
	char *d = g_strdup("/tmp/oomd-charge-XXXXXX");
	cr_assert_not_null(g_mkdtemp(d));
	return d;
}

/* The children of pid (alive or zombie), up to max; their count. */
static int children_of(pid_t pid, pid_t *out, int max)
{
	int n = 0;
	GDir *d = g_dir_open("/proc", 0, NULL);
	cr_assert_not_null(d);
	const char *e;
	while ((e = g_dir_read_name(d))) {
		if (!g_ascii_isdigit(e[0]))
			continue;
		g_autofree char *p = g_strdup_printf("/proc/%s/stat", e);
		g_autofree char *st = NULL;
		if (!g_file_get_contents(p, &st, NULL, NULL))
			continue;
		const char *rp = strrchr(st, ')');
		int ppid = 0;
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == pid) {
			if (n < max)
				out[n] = atoi(e);
			n++;
		}
	}
	g_dir_close(d);
	return n;
}

/* No child of ours but the zygote, and none of the zygote's left, zombie or alive. */
static void assert_no_child(od_zygote *z)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	int r = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL);
	cr_assert(r == 0 && si.si_pid == 0, "a child of ours exited (waitid %d, pid %d)", r,
		  (int)si.si_pid);
	pid_t k[4];
	int n = children_of(fs_zygote_pid(z), k, 4);
	cr_assert_eq(n, 0, "%d children of the zygote left behind (pid %d)", n, (int)k[0]);
}

static int run(od_zygote *z, int cg, const fs_charged_syscall *sc, int timeout_ms, bool *placed)
{
	bool killed;
	return fs_zygote_call(z, cg, sc, timeout_ms, placed, &killed);
}

Test(charge, the_child_makes_the_call_and_we_read_its_result)
{
	g_autofree char *d = tmpdir();
	int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	od_zygote *z = od_zygote_new();
	fs_charged_syscall mk = { SYS_mkdirat, { FS_FD(dfd), FS_STR("x"), FS_INT(0700) } };
	bool placed;
	cr_assert_eq(run(z, -1, &mk, 2000, &placed), 0);
	cr_assert(placed);
	struct stat st;
	cr_assert_eq(fstatat(dfd, "x", &st, 0), 0, "the child's mkdir is not there");
	cr_assert_eq(st.st_mode & 07777, 0700);
	/* a failing call: its errno, from the child's memory, not from our errno */
	errno = 0;
	cr_assert_eq(run(z, -1, &mk, 2000, &placed), EEXIST);
	fs_charged_syscall bad = { SYS_mkdirat, { FS_INT(987654), FS_STR("y"), FS_INT(0700) } };
	cr_assert_eq(run(z, -1, &bad, 2000, &placed), EBADF);
	/* bytes and a /proc/self/fd path: a user.* value set on the directory */
	g_autofree char *sub = g_build_filename(d, "x", NULL);
	int xfd = open(sub, O_PATH | O_DIRECTORY | O_CLOEXEC);
	static const char val[] = "v\0with a nul";
	fs_charged_syscall sx = { SYS_setxattr, { FS_FD_PATH(xfd), FS_STR("user.t"), FS_BUF(val, sizeof val),
						  FS_INT(sizeof val), FS_INT(0) } };
	int e = run(z, -1, &sx, 2000, &placed);
	if (e != EOPNOTSUPP) { /* a /tmp without user xattrs */
		cr_assert_eq(e, 0, "setxattr: %s", strerror(e));
		char got[64];
		cr_assert_eq(getxattr(sub, "user.t", got, sizeof got), (ssize_t)sizeof val);
		cr_assert_eq(memcmp(got, val, sizeof val), 0);
	}
	close(xfd);
	assert_no_child(z);
	od_zygote_free(z);
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
	od_zygote *z = od_zygote_new();
	fs_charged_syscall rd = { SYS_read, { FS_FD(p[0]), FS_BUF(buf, sizeof buf), FS_INT(sizeof buf) } };
	bool placed, killed;
	gint64 t0 = g_get_monotonic_time();
	int err = fs_zygote_call(z, -1, &rd, 300, &placed, &killed);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert_eq(err, EAGAIN, "got %s", strerror(err));
	cr_assert(ms >= 290 && ms < 2000, "answered after %lld ms for a 300 ms time-out", (long long)ms);
	cr_assert(killed);
	assert_no_child(z);
	od_zygote_free(z);
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
	od_zygote *z = od_zygote_new();
	fs_charged_syscall mk = { SYS_mkdirat, { FS_FD(dfd), FS_STR("made"), FS_INT(0700) } };
	bool placed;
	cr_assert(put(cgp, "cgroup.freeze", "1"));
	gint64 t0 = g_get_monotonic_time();
	int err = run(z, cg, &mk, 300, &placed);
	gint64 ms = (g_get_monotonic_time() - t0) / 1000;
	struct stat st;
	bool made = fstatat(dfd, "made", &st, 0) == 0;
	/* the legitimate call beside: once thawed, the same call works */
	cr_assert(put(cgp, "cgroup.freeze", "0"));
	int after = run(z, cg, &mk, 2000, &placed);
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
	assert_no_child(z);
	od_zygote_free(z);
}

/* A call that blocks (read on a pipe we keep open), sent through z from another
 * thread; the pipe's read end is p[0]. */
typedef struct {
	od_zygote *z;
	int fd, err;
} blocked_call;

static gpointer blocked_main(gpointer ud)
{
	blocked_call *b = ud;
	static char buf[8];
	fs_charged_syscall rd = { SYS_read, { FS_FD(b->fd), FS_BUF(buf, sizeof buf), FS_INT(sizeof buf) } };
	bool placed;
	b->err = run(b->z, -1, &rd, 3000, &placed);
	return NULL;
}

static bool has_child(od_zygote *z, pid_t *k)
{
	return children_of(fs_zygote_pid(z), k, 1) == 1;
}

/* issue 21: a child born frozen never runs, so what it holds is what it was born
 * with. The zygote's child is born with the zygote's table: none of ours. */
Test(charge, the_child_holds_none_of_our_descriptors)
{
	int marker = memfd_create("daemon-marker", MFD_CLOEXEC); /* stands in for /dev/fuse */
	cr_assert_geq(marker, 0);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	od_zygote *z = od_zygote_new();
	blocked_call b = { .z = z, .fd = p[0] };
	GThread *t = g_thread_new("blocked", blocked_main, &b);
	pid_t k = 0;
	for (int i = 0; i < 200 && !has_child(z, &k); i++)
		g_usleep(10000);
	cr_assert_neq(k, 0, "no child of the zygote seen");
	g_autofree char *fdd = g_strdup_printf("/proc/%d/fd", (int)k);
	GDir *d = g_dir_open(fdd, 0, NULL);
	cr_assert_not_null(d);
	int n = 0;
	GString *what = g_string_new(NULL);
	const char *e;
	while ((e = g_dir_read_name(d))) {
		g_autofree char *l = g_strdup_printf("%s/%s", fdd, e);
		g_autofree char *to = g_file_read_link(l, NULL);
		g_string_append_printf(what, " %s->%s", e, to ? to : "?");
		cr_assert(!to || !strstr(to, "daemon-marker"), "the child holds our descriptor: %s", what->str);
		n++;
	}
	g_dir_close(d);
	/* its socket, the answer's socket, the pipe end: a few, whatever we hold */
	cr_assert_leq(n, 6, "the child holds %d descriptors:%s", n, what->str);
	cr_assert_eq(write(p[1], "x", 1), 1);
	g_thread_join(t);
	cr_assert_eq(b.err, 0, "%s", strerror(b.err));
	g_string_free(what, TRUE);
	od_zygote_free(z);
	close(p[0]);
	close(p[1]);
	close(marker);
}

Test(charge, a_dead_zygote_is_forked_again)
{
	g_autofree char *d = tmpdir();
	int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	od_zygote *z = od_zygote_new();
	pid_t first = fs_zygote_pid(z);
	cr_assert_gt(first, 0);
	cr_assert_eq(kill(first, SIGKILL), 0);
	g_usleep(100000);
	fs_charged_syscall mk = { SYS_mkdirat, { FS_FD(dfd), FS_STR("x"), FS_INT(0700) } };
	bool placed;
	cr_assert_eq(run(z, -1, &mk, 2000, &placed), 0);
	pid_t second = fs_zygote_pid(z);
	cr_assert(second > 0 && second != first, "zygote %d, then %d", (int)first, (int)second);
	unlinkat(dfd, "x", AT_REMOVEDIR);
	od_zygote_free(z);
	close(dfd);
	rmdir(d);
}

/* gone, or a zombie that nobody reaped yet */
static bool gone(pid_t pid)
{
	g_autofree char *p = g_strdup_printf("/proc/%d/stat", (int)pid);
	g_autofree char *st = NULL;
	if (!g_file_get_contents(p, &st, NULL, NULL))
		return true;
	const char *rp = strrchr(st, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* The daemon dies (SIGKILL) with a call in flight: its end of the socket closes,
 * the zygote kills the child (it could be frozen: it would run the call at the
 * thaw, holding what it holds until then) and exits. */
Test(charge, the_daemons_death_ends_the_zygote_and_its_child)
{
	int p[2], pp[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
	pid_t dm = fork();
	cr_assert_geq(dm, 0);
	if (dm == 0) { /* the "daemon" */
		od_zygote *z = od_zygote_new();
		pid_t zp = fs_zygote_pid(z);
		if (write(pp[1], &zp, sizeof zp) != sizeof zp)
			_exit(1);
		static char buf[8];
		fs_charged_syscall rd = { SYS_read, { FS_FD(p[0]), FS_BUF(buf, sizeof buf), FS_INT(sizeof buf) } };
		bool placed;
		run(z, -1, &rd, 60000, &placed);
		_exit(0);
	}
	pid_t zp = 0;
	cr_assert_eq(read(pp[0], &zp, sizeof zp), (ssize_t)sizeof zp);
	pid_t k = 0;
	for (int i = 0; i < 200 && children_of(zp, &k, 1) != 1; i++)
		g_usleep(10000);
	cr_assert_neq(k, 0, "no child of the zygote seen");
	cr_assert_eq(kill(dm, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(dm, &st, 0), dm);
	for (int i = 0; i < 200 && !(gone(k) && gone(zp)); i++)
		g_usleep(10000);
	cr_assert(gone(k), "the child %d outlived the daemon", (int)k);
	cr_assert(gone(zp), "the zygote %d outlived the daemon", (int)zp);
	close(p[0]);
	close(p[1]);
	close(pp[0]);
	close(pp[1]);
}
