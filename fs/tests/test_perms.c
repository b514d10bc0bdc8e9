/* test_perms.c — who may do what through the shadow tree: synthetic
 * files carry the owner and mode of the real file they change, writes are
 * checked against the caller as the kernel checks the real file, O_CREAT and
 * extended attributes answer as cgroupfs would. Callers other than root are
 * forked children with other credentials; they report by exit status only
 * (no assertion outside the test's own thread). The suite "daemon_checks"
 * mounts without default_permissions, so that only the daemon's own checks
 * stand between the caller and the real files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fixture.h"

static void open_up(void)
{
	fx_setup();
	if (!skipped)
		cr_assert_eq(chmod(fixture, 0755), 0); /* mkdtemp made it 0700 */
}

static void daemon_only(void)
{
	fx_no_default_permissions = true;
	open_up();
}

TestSuite(perms, .init = open_up, .fini = fx_teardown, .timeout = 20);
TestSuite(daemon_checks, .init = daemon_only, .fini = fx_teardown, .timeout = 20);

typedef struct {
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[4];
	bool drop_dac; /* uid 0 without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH */
} who;

static const who user = { 1000, 1000, 0, { 0 }, false };

/* Runs fn(arg) in a child with w's credentials; returns what fn returned (an
 * errno, 0 for success), or -1 if the child could not take the credentials. */
static int as(const who *w, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups((size_t)w->ngroups, w->groups) < 0 || setresgid(w->gid, w->gid, w->gid) < 0 ||
		    setresuid(w->uid, w->uid, w->uid) < 0)
			_exit(255);
		if (w->drop_dac) {
			struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
			struct __user_cap_data_struct d[2];
			if (syscall(SYS_capget, &h, d) < 0)
				_exit(255);
			d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
			if (syscall(SYS_capset, &h, d) < 0)
				_exit(255);
		}
		_exit(fn(arg));
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the child died of signal %d", WTERMSIG(st));
	return WEXITSTATUS(st) == 255 ? -1 : WEXITSTATUS(st);
}

static char path_buf[256];

static const char *mp(const char *rel)
{
	snprintf(path_buf, sizeof path_buf, "%s/%s", mnt, rel);
	return path_buf;
}

/* child: open arg (a full path) for writing and write "1234"; 0 or errno */
static int write_1234(void *arg)
{
	int fd = open(arg, O_WRONLY);
	if (fd < 0)
		return errno;
	int r = write(fd, "1234", 4) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int write_as(const who *w, const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", mnt, rel);
	return as(w, write_1234, p);
}

static void real_chown(const char *rel, uid_t u, gid_t g, mode_t mode)
{
	g_autofree char *p = g_build_filename(fixture, rel, NULL);
	cr_assert_eq(chown(p, u, g), 0);
	cr_assert_eq(chmod(p, mode), 0);
}

Test(perms, synthetic_files_show_the_owner_and_mode_of_memory_max)
{
	SKIP_UNLESS_READY();
	real_chown("a/memory.max", 1000, 1001, 0640);
	struct stat s;
	const char *names[] = { "a/memory.oom_control", "a/memory.oom_delay_millisecs" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		cr_assert_eq(stat(mp(names[i]), &s), 0);
		cr_assert_eq(s.st_uid, 1000, "%s", names[i]);
		cr_assert_eq(s.st_gid, 1001, "%s", names[i]);
		cr_assert_eq(s.st_mode, S_IFREG | 0640, "%s: %o", names[i], s.st_mode);
	}
	/* everyone may register a listener, as in v1; its owner is the directory's */
	cr_assert_eq(stat(mp("a/cgroup.event_control"), &s), 0);
	cr_assert_eq(s.st_mode, S_IFREG | 0222);
	/* the root cgroup has no memory.max: root's, the table's mode */
	cr_assert_eq(stat(mp("memory.oom_control"), &s), 0);
	cr_assert_eq(s.st_uid, 0);
	cr_assert_eq(s.st_mode, S_IFREG | 0644);
	/* the virtualised memory.max is the real file */
	cr_assert_eq(stat(mp("a/memory.max"), &s), 0);
	cr_assert_eq(s.st_uid, 1000);
	cr_assert_eq(s.st_mode, S_IFREG | 0640);
}

/* The attack (the owner of a cgroup directory, not of its memory.max, changing
 * what its limit does through the synthetic files) and the admin's delegation
 * beside it, with the kernel's check (default_permissions) and then (next suite)
 * with the daemon's alone. */
static void delegation(void)
{
	real_chown("a", 1000, 1000, 0755); /* the directory is the user's, memory.max is not */
	cr_assert_eq(write_as(&user, "a/memory.oom_control"), EACCES);
	cr_assert_eq(write_as(&user, "a/memory.oom_delay_millisecs"), EACCES);
	cr_assert_eq(write_as(&user, "a/memory.max"), EACCES);
	g_autofree char *d = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(d, "0\n");
	real_chown("a/memory.max", 1000, 1000, 0644);
	cr_assert_eq(write_as(&user, "a/memory.oom_delay_millisecs"), 0);
	g_autofree char *d2 = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(d2, "1234\n");
	cr_assert_eq(write_as(&user, "a/memory.max"), 0);
}

Test(perms, delegating_memory_max_delegates_the_synthetic_files)
{
	SKIP_UNLESS_READY();
	delegation();
}

Test(daemon_checks, delegating_memory_max_delegates_the_synthetic_files)
{
	SKIP_UNLESS_READY();
	delegation();
	/* a plain file the daemon opens as root: the check is the daemon's */
	cr_assert_eq(write_as(&user, "memory.stat"), EACCES);
}

Test(daemon_checks, supplementary_groups_count)
{
	SKIP_UNLESS_READY();
	real_chown("a/memory.max", 0, 4321, 0664);
	who member = { 1000, 1000, 1, { 4321 }, false };
	cr_assert_eq(write_as(&member, "a/memory.oom_delay_millisecs"), 0);
	cr_assert_eq(write_as(&user, "a/memory.oom_delay_millisecs"), EACCES);
	who primary = { 1000, 4321, 0, { 0 }, false };
	cr_assert_eq(write_as(&primary, "a/memory.oom_control"), EINVAL, "allowed; 1234 is not 0/1");
}

Test(daemon_checks, root_needs_cap_dac_override_for_a_file_it_does_not_own)
{
	SKIP_UNLESS_READY();
	real_chown("a/memory.max", 1000, 1000, 0644);
	who weak_root = { 0, 0, 0, { 0 }, true };
	who root = { 0, 0, 0, { 0 }, false };
	cr_assert_eq(write_as(&weak_root, "a/memory.oom_delay_millisecs"), EACCES);
	cr_assert_eq(write_as(&root, "a/memory.oom_delay_millisecs"), 0);
	/* a root-owned 0644 file: root writes by its owner bits, capability or not */
	real_chown("a/memory.max", 0, 0, 0644);
	cr_assert_eq(write_as(&weak_root, "a/memory.oom_delay_millisecs"), 0);
}

/* child: open arg for writing, tell the parent, wait for its go, write; then a
 * second open. Returns (first write errno) | (second open errno) << 4. */
static int fds[2][2];
static int open_then_write(void *arg)
{
	int fd = open(arg, O_WRONLY);
	char c = fd < 0 ? 'x' : 'o';
	if (write(fds[0][1], &c, 1) != 1 || read(fds[1][0], &c, 1) != 1 || fd < 0)
		return 15;
	int r1 = write(fd, "7", 1) < 0 ? errno : 0;
	close(fd);
	int fd2 = open(arg, O_WRONLY);
	int r2 = fd2 < 0 ? errno : 0;
	if (fd2 >= 0)
		close(fd2);
	return (r1 & 15) | ((r2 == EACCES ? 1 : r2 ? 2 : 0) << 4);
}

Test(daemon_checks, the_right_is_decided_at_open_as_the_kernel_does)
{
	SKIP_UNLESS_READY();
	real_chown("a/memory.max", 1000, 1000, 0644);
	cr_assert_eq(pipe(fds[0]), 0);
	cr_assert_eq(pipe(fds[1]), 0);
	char p[256];
	snprintf(p, sizeof p, "%s/a/memory.oom_delay_millisecs", mnt);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(15);
		_exit(open_then_write(p));
	}
	char c = 0;
	cr_assert_eq(read(fds[0][0], &c, 1), 1);
	cr_assert_eq(c, 'o', "the owner of memory.max could not open the delay");
	real_chown("a/memory.max", 0, 0, 0644); /* the admin takes it back */
	cr_assert_eq(write(fds[1][1], "g", 1), 1);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st) & 15, 0, "a write through the earlier open: errno %d", WEXITSTATUS(st) & 15);
	cr_assert_eq(WEXITSTATUS(st) >> 4, 1, "a new open after the chown must be EACCES");
	g_autofree char *d = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(d, "7\n");
}

/* ---- O_CREAT ---- */

static int create_excl(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int create_plain(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void creates(void)
{
	who root = { 0, 0, 0, { 0 }, false };
	char p[256];
	const char *existing[] = { "a/memory.oom_control", "a/cgroup.event_control", "a/memory.max",
				   "a/memory.events" };
	for (size_t i = 0; i < G_N_ELEMENTS(existing); i++) {
		snprintf(p, sizeof p, "%s/%s", mnt, existing[i]);
		cr_assert_eq(as(&root, create_excl, p), EEXIST, "%s", existing[i]);
		cr_assert_eq(as(&user, create_excl, p), EEXIST, "%s", existing[i]);
	}
	/* without O_EXCL an existing file opens only with its permission */
	snprintf(p, sizeof p, "%s/a/memory.oom_control", mnt);
	cr_assert_eq(as(&user, create_plain, p), EACCES);
	cr_assert_eq(as(&root, create_plain, p), 0);
	/* a new name: the fixture is a plain directory, which can make it (cgroupfs answers EACCES) */
	snprintf(p, sizeof p, "%s/a/new", mnt);
	cr_assert_eq(as(&root, create_excl, p), 0);
	cr_assert_eq(as(&root, create_excl, p), EEXIST);
}

Test(perms, o_creat_o_excl_answers_as_the_kernel)
{
	SKIP_UNLESS_READY();
	creates();
}

Test(daemon_checks, o_creat_o_excl_answers_as_the_kernel)
{
	SKIP_UNLESS_READY();
	creates();
}

/* ---- extended attributes ---- */

static void real_xattr(const char *name, const char *value)
{
	g_autofree char *p = g_build_filename(fixture, "a", NULL);
	cr_assert_eq(setxattr(p, name, value, strlen(value), 0), 0, "%s: %s", name, strerror(errno));
}

/* child: 0 when the list of arg's xattrs (probe and read agree) has neither
 * trusted.* nor *.oomdelayfs.* but has user.u; a code otherwise */
static int list_as_user_sees(void *arg)
{
	char buf[4096];
	ssize_t probe = listxattr(arg, NULL, 0);
	ssize_t n = listxattr(arg, buf, sizeof buf);
	if (n < 0 || probe != n)
		return 1;
	bool u = false;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		if (strncmp(buf + i, "trusted.", 8) == 0)
			return 2;
		if (strstr(buf + i, ".oomdelayfs."))
			return 3;
		u |= strcmp(buf + i, "user.u") == 0;
	}
	return u ? 0 : 4;
}

static bool listed_xattr(const char *path, const char *name)
{
	char buf[4096];
	ssize_t n = listxattr(path, buf, sizeof buf);
	cr_assert_geq(n, 0);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strcmp(buf + i, name) == 0)
			return true;
	return false;
}

static void xattrs(void)
{
	real_xattr("trusted.t", "1");
	real_xattr("user.u", "2");
	real_xattr("user.oomdelayfs.state", "limit=max hold=1");
	real_xattr("trusted.oomdelayfs.state", "x");
	real_chown("a", 1000, 1000, 0755);
	char p[256];
	snprintf(p, sizeof p, "%s/a", mnt);
	cr_assert_eq(as(&user, list_as_user_sees, p), 0);
	/* root: trusted.* as on the real tree, never the daemon's names */
	cr_assert(listed_xattr(p, "trusted.t"));
	cr_assert(listed_xattr(p, "user.u"));
	cr_assert(!listed_xattr(p, "user.oomdelayfs.state"));
	cr_assert(!listed_xattr(p, "trusted.oomdelayfs.state"));
	char v[64];
	cr_assert_eq(getxattr(p, "user.oomdelayfs.state", v, sizeof v), -1);
	cr_assert_eq(errno, ENODATA);
	cr_assert_eq(setxattr(p, "user.oomdelayfs.state", "forged", 6, 0), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(setxattr(p, "security.oomdelayfs.x", "forged", 6, 0), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(removexattr(p, "trusted.oomdelayfs.state"), -1);
	cr_assert_eq(errno, EPERM);
	g_autofree char *real = g_build_filename(fixture, "a", NULL);
	ssize_t n = getxattr(real, "user.oomdelayfs.state", v, sizeof v);
	cr_assert_eq(n, 16);
	cr_assert_eq(memcmp(v, "limit=max hold=1", 16), 0, "the daemon's state was changed");
	cr_assert_eq(getxattr(real, "trusted.oomdelayfs.state", v, sizeof v), 1);
	cr_assert_eq(getxattr(p, "trusted.t", v, sizeof v), 1);
	/* the owner's user.* round-trips */
	cr_assert_eq(setxattr(p, "user.note", "hi", 2, 0), 0);
	cr_assert_eq(getxattr(real, "user.note", v, sizeof v), 2);
	cr_assert_eq(removexattr(p, "user.note"), 0);
	cr_assert_eq(getxattr(real, "user.note", v, sizeof v), -1);
}

Test(perms, xattrs_as_the_caller_would_see_them_never_the_daemons)
{
	SKIP_UNLESS_READY();
	xattrs();
}

static int get_trusted(void *arg)
{
	char v[16];
	return getxattr(arg, "trusted.t", v, sizeof v) < 0 ? errno : 0;
}

static int set_trusted(void *arg)
{
	return setxattr(arg, "trusted.x", "1", 1, 0) < 0 ? errno : 0;
}

static int set_user(void *arg)
{
	return setxattr(arg, "user.x", "1", 1, 0) < 0 ? errno : 0;
}

Test(daemon_checks, xattrs_as_the_caller_would_see_them_never_the_daemons)
{
	SKIP_UNLESS_READY();
	xattrs();
	char p[256];
	snprintf(p, sizeof p, "%s/a", mnt);
	/* trusted.* needs CAP_SYS_ADMIN, user.* write permission (b is root's 0755) */
	cr_assert_eq(as(&user, get_trusted, p), ENODATA);
	cr_assert_eq(as(&user, set_trusted, p), EPERM);
	snprintf(p, sizeof p, "%s/a/b", mnt);
	cr_assert_eq(as(&user, set_user, p), EACCES);
	snprintf(p, sizeof p, "%s/a", mnt);
	cr_assert_eq(as(&user, set_user, p), 0, "a is the user's");
}

/* ---- cgroup.event_control: the writer must be able to read the control file ---- */

/* child: with the eventfd and the memory.oom_control descriptor it inherited,
 * register through a/cgroup.event_control, report the errno on fds[0], and live
 * until the parent has counted the listeners */
static int efd_inherited = -1, cfd_inherited = -1;
static int register_and_wait(void *arg)
{
	char line[32];
	snprintf(line, sizeof line, "%d %d", efd_inherited, cfd_inherited);
	int fd = open(arg, O_WRONLY);
	unsigned char r = fd < 0 ? (unsigned char)errno : 0;
	if (fd >= 0 && write(fd, line, strlen(line)) < 0)
		r = (unsigned char)errno;
	char go;
	if (write(fds[0][1], &r, 1) != 1 || read(fds[1][0], &go, 1) != 1)
		return 99;
	return 0;
}

static int listen_as_user(size_t *count)
{
	cr_assert_eq(pipe(fds[0]), 0);
	cr_assert_eq(pipe(fds[1]), 0);
	efd_inherited = eventfd(0, 0);
	cfd_inherited = open(mp("a/memory.oom_control"), O_RDONLY); /* root's open, handed down */
	cr_assert_geq(efd_inherited, 0);
	cr_assert_geq(cfd_inherited, 0);
	char p[256];
	snprintf(p, sizeof p, "%s/a/cgroup.event_control", mnt);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(98);
		_exit(register_and_wait(p));
	}
	unsigned char r = 0;
	cr_assert_eq(read(fds[0][0], &r, 1), 1);
	g_autofree char *real = g_build_filename(fixture, "a", NULL);
	struct stat st;
	cr_assert_eq(stat(real, &st), 0);
	*count = fs_evctl_count(fs->evctl, st.st_ino);
	cr_assert_eq(write(fds[1][1], "g", 1), 1);
	int ws;
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	close(efd_inherited);
	close(cfd_inherited);
	for (int i = 0; i < 2; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
	return r;
}

Test(perms, a_listener_needs_to_be_able_to_read_the_control_file)
{
	SKIP_UNLESS_READY();
	size_t n = 9;
	real_chown("a/memory.max", 0, 0, 0600);
	cr_assert_eq(listen_as_user(&n), EACCES);
	cr_assert_eq(n, 0);
	real_chown("a/memory.max", 0, 0, 0644); /* readable by all, as by default */
	cr_assert_eq(listen_as_user(&n), 0);
	cr_assert_eq(n, 1);
}
