/* test_shadowfs.c — the FUSE layer mounted over a fixture directory that looks
 * like a cgroup tree, with the stub controller. Runs as root in a private mount
 * namespace (skipped otherwise). Assertions only on the test's own thread. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oomd/shadowfs.h"
#include "../fs_private.h"
#include "../charge.h"
#include "stub_controller.h"
#include "fixture.h"

TestSuite(shadowfs, .init = fx_setup, .fini = fx_teardown, .timeout = 20);

static bool listed(const char *rel, const char *name, unsigned char *type)
{
	g_autofree char *p = in_mnt(rel);
	DIR *d = opendir(p);
	cr_assert_not_null(d, "opendir %s: %s", p, strerror(errno));
	bool found = false;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, name) == 0) {
			found = true;
			if (type)
				*type = de->d_type;
		}
	closedir(d);
	return found;
}

Test(shadowfs, listing_has_synthetic_files_and_d_type)
{
	SKIP_UNLESS_READY();
	unsigned char t = 0;
	cr_assert(listed("a", "memory.oom_delay_millisecs", &t));
	cr_assert_eq(t, DT_REG);
	cr_assert(listed("a", "memory.oom_control", NULL));
	cr_assert(listed("a", "cgroup.event_control", NULL));
	cr_assert(listed("a", "b", &t));
	cr_assert_eq(t, DT_DIR);
	cr_assert(listed("a", "memory.max", &t));
	cr_assert_eq(t, DT_REG);
	cr_assert(listed("", "memory.oom_control", NULL), "the root cgroup has it");
	cr_assert(!listed("nomem", "memory.oom_control", NULL), "not a memory cgroup");

	struct stat s;
	g_autofree char *p = in_mnt("a/cgroup.event_control");
	cr_assert_eq(stat(p, &s), 0);
	cr_assert_eq(s.st_mode, S_IFREG | 0222);
	g_autofree char *q = in_mnt("a/memory.oom_control");
	struct stat s2;
	cr_assert_eq(stat(q, &s2), 0);
	cr_assert_neq(s.st_ino, s2.st_ino);
}

Test(shadowfs, real_ids_and_owners_pass_through)
{
	SKIP_UNLESS_READY();
	struct stat a, b;
	g_autofree char *p = in_mnt("a");
	g_autofree char *r = g_build_filename(fixture, "a", NULL);
	cr_assert_eq(stat(p, &a), 0);
	cr_assert_eq(stat(r, &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino);
	cr_assert_eq(a.st_mode, b.st_mode);
	cr_assert_eq(a.st_uid, b.st_uid);
	cr_assert_eq(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
}

Test(shadowfs, delay_reads_and_writes)
{
	SKIP_UNLESS_READY();
	g_autofree char *v0 = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(v0, "0\n");
	cr_assert_eq(poke("a/memory.oom_delay_millisecs", "500\n"), 0);
	g_autofree char *v1 = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(v1, "500\n");
	cr_assert_eq(poke("a/memory.oom_delay_millisecs", "abc"), EINVAL);
	cr_assert_eq(poke("a/memory.oom_delay_millisecs", "-1"), EINVAL);
	cr_assert_eq(poke("a/memory.oom_delay_millisecs", "9223372036854775808"), EINVAL);
	g_autofree char *v2 = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(v2, "500\n", "a bad write changes nothing");
	cr_assert_eq(poke("a/memory.oom_delay_millisecs", "0x10"), 0);
	g_autofree char *v3 = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(v3, "16\n");
	cr_assert_eq(poke("memory.oom_delay_millisecs", "7"), 0, "the root takes a delay");
}

Test(shadowfs, oom_control_format_and_root_rule)
{
	SKIP_UNLESS_READY();
	g_autofree char *v0 = slurp("a/memory.oom_control");
	cr_assert_str_eq(v0, "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
	cr_assert_eq(poke("a/memory.oom_control", "2"), EINVAL);
	cr_assert_eq(poke("a/memory.oom_control", "1\n"), 0);
	g_autofree char *v1 = slurp("a/memory.oom_control");
	cr_assert_str_eq(v1, "oom_kill_disable 1\nunder_oom 0\noom_kill 0\n");
	cr_assert_eq(poke("memory.oom_control", "1"), EINVAL);
	cr_assert_eq(poke("memory.oom_control", "0"), EINVAL);
}

Test(shadowfs, memory_max_shows_the_user_value)
{
	SKIP_UNLESS_READY();
	cr_assert_eq(poke("a/memory.max", "64M\n"), 0);
	g_autofree char *v = slurp("a/memory.max");
	cr_assert_str_eq(v, "67108864\n");
	g_autofree char *real = NULL;
	g_autofree char *rp = g_build_filename(fixture, "a/memory.max", NULL);
	cr_assert(g_file_get_contents(rp, &real, NULL, NULL));
	cr_assert_str_eq(real, "max\n", "the real file is the controller's business: [%s]", real);
	cr_assert_eq(poke("a/memory.max", "bogus"), EINVAL);
	cr_assert_eq(poke("a/memory.high", "max"), 0);
	g_autofree char *h = slurp("a/memory.high");
	cr_assert_str_eq(h, "max\n");
}

Test(shadowfs, synthetic_names_cannot_be_removed_or_shadowed)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.oom_control");
	cr_assert_eq(unlink(p), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(mkdir(p, 0755), -1);
	cr_assert_eq(errno, EEXIST);
}

Test(shadowfs, pass_through_uses_the_callers_offsets)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.events");
	int fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0);
	char buf[64] = { 0 };
	cr_assert_eq(pread(fd, buf, 3, 4), 3);
	cr_assert_str_eq(buf, "0\no");
	cr_assert_eq(pwrite(fd, "X", 1, 1), 1);
	close(fd);
	g_autofree char *real = NULL;
	g_autofree char *rp = g_build_filename(fixture, "a/memory.events", NULL);
	cr_assert(g_file_get_contents(rp, &real, NULL, NULL));
	cr_assert_str_eq(real, "oXm 0\noom_kill 0\n");
}

/* read_real tries a page first: files shorter than, equal to and longer than a page read
 * whole through one large read, and at offsets on both sides of the page */
Test(shadowfs, reads_around_a_page_give_the_real_bytes)
{
	SKIP_UNLESS_READY();
	const size_t sizes[] = { 7, 4095, 4096, 4097, 10000 };
	for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
		size_t len = sizes[k];
		g_autofree char *data = g_malloc(len);
		for (size_t i = 0; i < len; i++)
			data[i] = (char)('a' + (i * 7 + k) % 26);
		g_autofree char *rp = g_build_filename(fixture, "a/memory.stat", NULL);
		cr_assert(g_file_set_contents(rp, data, (gssize)len, NULL));
		g_autofree char *p = in_mnt("a/memory.stat");
		int fd = open(p, O_RDONLY);
		cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
		g_autofree char *got = g_malloc0(65536);
		ssize_t n = pread(fd, got, 65536, 0); /* one READ of 64 KiB (direct_io) */
		cr_assert_eq(n, (ssize_t)len, "size %zu: read %zd", len, n);
		cr_assert(memcmp(got, data, len) == 0, "size %zu: other bytes", len);
		off_t off = len > 4096 ? 4090 : (off_t)len / 2;
		n = pread(fd, got, 65536, off);
		cr_assert_eq(n, (ssize_t)len - off, "size %zu at %lld: read %zd", len, (long long)off, n);
		cr_assert(memcmp(got, data + off, len - (size_t)off) == 0);
		cr_assert_eq(pread(fd, got, 65536, (off_t)len), 0, "size %zu: EOF", len);
		close(fd);
	}
}

Test(shadowfs, tree_changes_show_at_once)
{
	SKIP_UNLESS_READY();
	g_autofree char *real = g_build_filename(fixture, "a/new", NULL);
	g_autofree char *shadow = in_mnt("a/new");
	struct stat s;
	cr_assert_eq(stat(shadow, &s), -1);
	cr_assert_eq(mkdir(real, 0755), 0);
	cr_assert_eq(stat(shadow, &s), 0, "a real mkdir shows at once");
	cr_assert(listed("a", "new", NULL));
	cr_assert_eq(rmdir(real), 0);
	cr_assert_eq(stat(shadow, &s), -1, "and so does a real rmdir");
	cr_assert(!listed("a", "new", NULL));

	int before = stub_controller_adds(ctl);
	cr_assert_eq(mkdir(shadow, 0750), 0);
	cr_assert_eq(stat(real, &s), 0);
	cr_assert_eq(s.st_mode & 07777, 0750);
	cr_assert_gt(stub_controller_adds(ctl), before, "mkdir told the controller");
	cr_assert_eq(rmdir(shadow), 0);
	cr_assert_eq(stat(real, &s), -1);
}

static gpointer raise_under_oom(gpointer id)
{
	g_usleep(100000);
	stub_controller_set_under_oom(ctl, GPOINTER_TO_SIZE(id), true);
	return NULL;
}

Test(shadowfs, poll_on_oom_control_wakes_on_change)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.oom_control");
	g_autofree char *dir = g_build_filename(fixture, "a", NULL);
	struct stat ds;
	cr_assert_eq(stat(dir, &ds), 0);
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0);
	char buf[128];
	cr_assert_gt(read(fd, buf, sizeof buf), 0);
	struct pollfd pf = { .fd = fd, .events = POLLPRI };
	cr_assert_eq(poll(&pf, 1, 0), 0, "nothing new yet");

	GThread *t = g_thread_new("raise", raise_under_oom, GSIZE_TO_POINTER(ds.st_ino));
	int n = poll(&pf, 1, 5000);
	g_thread_join(t);
	cr_assert_eq(n, 1, "poll woke up");
	cr_assert(pf.revents & POLLPRI);

	ssize_t len = pread(fd, buf, sizeof buf - 1, 0);
	cr_assert_gt(len, 0);
	buf[len] = 0;
	cr_assert_str_eq(buf, "oom_kill_disable 0\nunder_oom 1\noom_kill 0\n");
	pf.revents = 0;
	cr_assert_eq(poll(&pf, 1, 0), 0, "read again: quiet until the next change");
	close(fd);
}

Test(shadowfs, poll_on_plain_files_answers_at_once)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.events");
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0);
	struct pollfd pf = { .fd = fd, .events = POLLIN | POLLPRI };
	cr_assert_eq(poll(&pf, 1, 1000), 1);
	cr_assert(pf.revents & POLLIN);
	close(fd);
}

Test(shadowfs, stops_while_files_are_open)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.oom_control");
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0);
	/* teardown's exit + join must return with this file still open */
	od_shadowfs_exit(fs);
	int r = GPOINTER_TO_INT(g_thread_join(server));
	cr_assert_eq(r, 0);
	server = g_thread_new("idle", serve, NULL); /* exiting already: returns at once */
	close(fd);
}

static gpointer serve_other(gpointer f)
{
	return GINT_TO_POINTER(od_shadowfs_run(f));
}

Test(shadowfs, a_subtree_root_is_an_ordinary_memory_cgroup)
{
	SKIP_UNLESS_READY();
	/* --cgroup-root of a subtree: its root has memory.max and takes oom_control writes */
	g_autofree char *sub = g_build_filename(fixture, "a", NULL);
	char mnt2[] = "/tmp/oomd-mnt2-XXXXXX";
	cr_assert_not_null(mkdtemp(mnt2));
	int rfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(rfd, 0);
	od_controller *c2 = od_controller_new(NULL);
	GError *err = NULL;
	od_shadowfs *fs2 = od_shadowfs_new(rfd, mnt2, c2, NULL, &err);
	cr_assert_not_null(fs2, "%s", err ? err->message : "?");
	GThread *t = g_thread_new("serve2", serve_other, fs2);

	g_autofree char *p = g_build_filename(mnt2, "memory.oom_control", NULL);
	int fd = open(p, O_WRONLY);
	ssize_t w = fd >= 0 ? write(fd, "1", 1) : -1;
	int e = errno;
	if (fd >= 0)
		close(fd);
	g_autofree char *q = g_build_filename(mnt2, "b", "memory.oom_delay_millisecs", NULL);
	struct stat st;
	int sr = stat(q, &st);

	od_shadowfs_exit(fs2);
	g_thread_join(t);
	od_shadowfs_free(fs2);
	od_controller_free(c2);
	close(rfd);
	rmdir(mnt2);
	cr_assert_eq(w, 1, "write: %s", strerror(e));
	cr_assert_eq(sr, 0, "children have their synthetic files");
}

static char *real_content(const char *rel)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	char *s = NULL;
	cr_assert(g_file_get_contents(p, &s, NULL, NULL));
	return s;
}

Test(shadowfs, procs_zero_means_the_caller)
{
	SKIP_UNLESS_READY();
	put("a/cgroup.procs", "");
	cr_assert_eq(poke("a/cgroup.procs", "0\n"), 0);
	g_autofree char *got = real_content("a/cgroup.procs");
	g_autofree char *want = g_strdup_printf("%d\n", (int)gettid());
	cr_assert_str_eq(got, want, "the daemon must not move itself");
	put("a/cgroup.procs", "");
	cr_assert_eq(poke("a/cgroup.procs", "12"), 0, "same pid namespace: the number unchanged");
	g_autofree char *raw = real_content("a/cgroup.procs");
	cr_assert_str_eq(raw, "12\n", "the daemon writes its own decimal, never the caller's bytes");
}

/* What the kernel would read as pid 0 (the writer) or as another number must
 * be read so here: the caller's bytes never reach the kernel, which would read
 * them as the daemon's (kstrtoint(strstrip(buf), 0) in cgroup_procs_write_start). */
Test(shadowfs, procs_pid_syntax_is_the_kernels)
{
	SKIP_UNLESS_READY();
	g_autofree char *self = g_strdup_printf("%d\n", (int)gettid());
	const char *zero[] = { "-0", "+0", " 0x0 ", "00\n\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(zero); i++) {
		put("a/cgroup.procs", "");
		cr_assert_eq(poke("a/cgroup.procs", zero[i]), 0, "'%s'", zero[i]);
		g_autofree char *got = real_content("a/cgroup.procs");
		cr_assert_str_eq(got, self, "'%s' is the writer, not the daemon", zero[i]);
	}
	put("a/cgroup.procs", "");
	cr_assert_eq(poke("a/cgroup.procs", "0x1f"), 0);
	g_autofree char *hex = real_content("a/cgroup.procs");
	cr_assert_str_eq(hex, "31\n");
	const char *bad[] = { "\n", "-1", "1 2", "0x", "08", "2147483648", "++1", "1a", " - 1" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		put("a/cgroup.procs", "");
		cr_assert_eq(poke("a/cgroup.procs", bad[i]), EINVAL, "'%s'", bad[i]);
		g_autofree char *got = real_content("a/cgroup.procs");
		cr_assert_str_eq(got, "", "'%s' reached the kernel", bad[i]);
	}
}

Test(shadowfs, procs_pids_are_translated_from_the_callers_namespace)
{
	SKIP_UNLESS_READY();
	put("a/cgroup.procs", "");
	g_autofree char *procs = in_mnt("a/cgroup.procs");
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t outer = fork();
	cr_assert_geq(outer, 0);
	if (outer == 0) {
		/* system calls only: the parent's FUSE threads serve us */
		if (unshare(CLONE_NEWPID) != 0)
			_exit(2);
		pid_t inner = fork(); /* pid 1 of the new namespace */
		if (inner < 0)
			_exit(3);
		if (inner == 0) {
			int fd = open(procs, O_WRONLY);
			_exit(fd >= 0 && write(fd, "1", 1) == 1 ? 0 : 4);
		}
		if (write(pipefd[1], &inner, sizeof inner) != sizeof inner)
			_exit(5);
		int st = 0;
		waitpid(inner, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 6);
	}
	pid_t inner = 0;
	cr_assert_eq(read(pipefd[0], &inner, sizeof inner), (ssize_t)sizeof inner);
	int st = 0;
	cr_assert_eq(waitpid(outer, &st, 0), outer);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	g_autofree char *got = real_content("a/cgroup.procs");
	g_autofree char *want = g_strdup_printf("%d\n", (int)inner);
	cr_assert_str_eq(got, want, "pid 1 of the caller's namespace is %d here", (int)inner);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Survival (takeover.c): the first server stops for a successor keeping the mount;
 * a second session takes the kept connection over (its recorded FUSE_INIT replayed)
 * and serves the same mount. The fixture's tree is no kernfs: nothing can be opened
 * by its id there, so a file opened before answers ESTALE (on cgroupfs it is opened
 * again: f-fd-restart in the VM). */
Test(shadowfs, a_successor_serves_the_same_connection)
{
	SKIP_UNLESS_READY();
	g_autofree char *before = slurp("a/memory.max");
	cr_assert_not_null(before, "read before: %s", strerror(errno));
	g_autofree char *p = in_mnt("a/memory.events");
	int held = open(p, O_RDONLY);
	cr_assert_geq(held, 0);
	int ffd, sfd;
	od_shadowfs_kept_fds(fs, &ffd, &sfd);
	ffd = dup(ffd); /* the keeper's copies */
	sfd = dup(sfd);
	cr_assert(ffd >= 0 && sfd >= 0);
	od_shadowfs_exit_keep(fs);
	int r = GPOINTER_TO_INT(g_thread_join(server));
	cr_assert_eq(r, 0);
	od_shadowfs_free(fs);

	od_shadowfs_opts o;
	od_shadowfs_opts_defaults(&o);
	o.cache_s = 0; /* the fixture's tree changes with no watcher to say so */
	o.max_threads = 4;
	o.fuse_fd = ffd;
	o.state_fd = sfd;
	GError *err = NULL;
	fs = od_shadowfs_new(root_fd, mnt, ctl, &o, &err);
	cr_assert_not_null(fs, "takeover: %s", err ? err->message : "?");
	server = g_thread_new("serve", serve, NULL);

	g_autofree char *after = slurp("a/memory.max");
	cr_assert_not_null(after, "read after the takeover: %s", strerror(errno));
	cr_assert_str_eq(after, before);
	char buf[64];
	ssize_t n = read(held, buf, sizeof buf);
	int e = errno;
	cr_assert_eq(n, -1, "a handle of the previous server must not be used");
	cr_assert_eq(e, ESTALE, "read on it: %s", strerror(e));
	cr_assert_eq(close(held), 0);
	/* and a fresh open of the same file works */
	g_autofree char *again = slurp("a/memory.events");
	cr_assert_not_null(again, "%s", strerror(errno));
}

/* fs_charged_call's answer (charge.h): any EAGAIN becomes the operation's "not now"
 * (setxattr's EAGAIN would reach the caller as EOPNOTSUPP: __vfs_setxattr_noperm;
 * s-charge-freeze on 6.12), and ENOSYS never comes out (the kernel would stop sending
 * that xattr call for the whole mount: fc->no_setxattr). The fixture's tree is not
 * cgroup2, so the call runs on this thread: the answer's mapping alone. */
Test(shadowfs, charged_call_answers_not_now_and_never_enosys)
{
	SKIP_UNLESS_READY();
	fs_caller c = { 0 };
	int p[2];
	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	static char b;
	fs_charged_syscall rd = { SYS_read, { FS_FD(p[0]), FS_BUF(&b, 1), FS_INT(1) } }; /* empty: EAGAIN */
	cr_assert_eq(fs_charged_call(fs, &c, &rd, EBUSY), EBUSY);
	cr_assert_eq(fs_charged_call(fs, &c, &rd, EAGAIN), EAGAIN);
	fs_charged_syscall none = { 100000, { FS_INT(0) } }; /* no such system call: ENOSYS */
	cr_assert_eq(fs_charged_call(fs, &c, &none, EBUSY), EPERM);
	fs_charged_syscall mk = { SYS_mkdirat, { FS_FD(root_fd), FS_STR("a"), FS_INT(0755) } };
	cr_assert_eq(fs_charged_call(fs, &c, &mk, EBUSY), EEXIST, "the call's own errno otherwise");
	close(p[0]);
	close(p[1]);
}
