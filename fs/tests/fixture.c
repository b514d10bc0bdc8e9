/* fixture.c — see fixture.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"

char fixture[64], mnt[64];
int root_fd = -1;
od_controller *ctl;
od_shadowfs *fs;
GThread *server;
bool skipped;
bool fx_no_default_permissions;
bool fx_v1_layout;
double fx_cache_s;
unsigned fx_sweep_period_s;

void put(const char *rel, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	cr_assert(g_file_set_contents(p, content, -1, NULL), "fixture %s", p);
}

gpointer serve(gpointer d)
{
	(void)d;
	return GINT_TO_POINTER(od_shadowfs_run(fs));
}

/* A FUSE server that crashes inside the process it serves deadlocks it: the
 * dump waits for the test thread, which waits for an answer from the dead
 * server. Closing every /dev/fuse descriptor first aborts the connection, so a
 * crash shows up as a crash instead of a hung test. */
static void on_crash(int sig)
{
	char path[32], target[32];
	for (int fd = 3; fd < 4096; fd++) {
		int n = 0, v = fd;
		char digits[12];
		do {
			digits[n++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		memcpy(path, "/proc/self/fd/", 14);
		for (int i = 0; i < n; i++)
			path[14 + i] = digits[n - 1 - i];
		path[14 + n] = 0;
		ssize_t l = readlink(path, target, sizeof target - 1);
		if (l == 9 && memcmp(target, "/dev/fuse", 9) == 0)
			close(fd);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void fx_setup(void)
{
	signal(SIGSEGV, on_crash);
	signal(SIGABRT, on_crash);
	signal(SIGBUS, on_crash);
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
		skipped = true;
		return;
	}
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	strcpy(fixture, "/tmp/oomd-fx-XXXXXX");
	strcpy(mnt, "/tmp/oomd-mnt-XXXXXX");
	cr_assert_not_null(mkdtemp(fixture));
	cr_assert_not_null(mkdtemp(mnt));
	put("memory.stat", "anon 0\n");
	put("cgroup.controllers", "memory\n");
	for (int i = 0; i < 2; i++) {
		const char *d = i ? "a/b" : "a";
		g_autofree char *dir = g_build_filename(fixture, d, NULL);
		cr_assert_eq(g_mkdir_with_parents(dir, 0755), 0);
		g_autofree char *f1 = g_strconcat(d, "/memory.max", NULL);
		g_autofree char *f2 = g_strconcat(d, "/memory.high", NULL);
		g_autofree char *f3 = g_strconcat(d, "/memory.events", NULL);
		put(f1, "max\n");
		put(f2, "max\n");
		put(f3, "oom 0\noom_kill 0\n");
	}
	g_autofree char *nomem = g_build_filename(fixture, "nomem", NULL);
	cr_assert_eq(mkdir(nomem, 0755), 0);
	put("nomem/cgroup.procs", "");

	root_fd = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(root_fd, 0);
	ctl = od_controller_new(NULL);
	od_shadowfs_opts o;
	od_shadowfs_opts_defaults(&o);
	o.cache_s = fx_cache_s; /* 0 unless a suite sets it: no watcher reports on the fixture */
	if (fx_sweep_period_s)
		o.sweep_period_s = fx_sweep_period_s;
	o.max_threads = 4;
	o.default_permissions = !fx_no_default_permissions;
	o.v1_layout = fx_v1_layout;
	GError *err = NULL;
	fs = od_shadowfs_new(root_fd, mnt, ctl, &o, &err);
	cr_assert_not_null(fs, "od_shadowfs_new: %s", err ? err->message : "?");
	server = g_thread_new("serve", serve, NULL);
}

void fx_teardown(void)
{
	if (skipped)
		return;
	od_shadowfs_exit(fs);
	int r = GPOINTER_TO_INT(g_thread_join(server));
	od_shadowfs_free(fs);
	od_controller_free(ctl);
	close(root_fd);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", fixture);
	cr_expect_eq(system(cmd), 0);
	rmdir(mnt);
	cr_expect_eq(r, 0, "the loop ended with %d", r);
}

char *in_mnt(const char *rel)
{
	return g_build_filename(mnt, rel, NULL);
}

/* Reads the whole file; returns NULL and sets errno on failure. */
char *slurp(const char *rel)
{
	g_autofree char *p = in_mnt(rel);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return NULL;
	char buf[512];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	int e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return NULL;
	}
	buf[n] = 0;
	return g_strdup(buf);
}

/* One write(2); returns 0 or errno. */
int poke(const char *rel, const char *s)
{
	g_autofree char *p = in_mnt(rel);
	int fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = n < 0 ? errno : 0;
	close(fd);
	return e;
}

int fx_register(const char *cg, int efd, int cfd, const char *args)
{
	g_autofree char *line = g_strdup_printf("%d %d%s%s", efd, cfd, args ? " " : "", args ? args : "");
	g_autofree char *rel = g_strconcat(cg, "/cgroup.event_control", NULL);
	return poke(rel, line);
}

uint64_t fx_drain(int efd)
{
	uint64_t v = 0;
	if (read(efd, &v, sizeof v) != sizeof v)
		return 0;
	return v;
}

uint64_t fx_wait_signal(int efd, int ms)
{
	uint64_t total = 0;
	int quiet = 0;
	for (int i = 0; i < ms / 10 && quiet < 5; i++) {
		uint64_t v = fx_drain(efd);
		total += v;
		quiet = v ? 0 : total ? quiet + 1 : 0;
		g_usleep(10000);
	}
	return total;
}

void fx_rewrite(const char *rel, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

uint64_t real_ino(const char *rel)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	return st.st_ino;
}

int open_in_mnt(const char *rel, int flags)
{
	g_autofree char *p = in_mnt(rel);
	int fd = open(p, flags | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	return fd;
}
