/* test_cache.c — what the kernel keeps of the shadow tree (issue 23): names and
 * attributes come with READDIRPLUS and stay for opts.cache_s; a change in the real tree
 * reported by od_shadowfs_real_changed (the watcher's inotify in the daemon) drops them.
 * The time-out here is 60 s, so only the notification can make a change show. */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "fdguard.h"
#include "fixture.h"
#include "oomd/fsstats.h"

static void cache_init(void)
{
	fx_cache_s = 60;
	fx_sweep_period_s = 1; /* sweeps every 1-4 s instead of 5-20 */
	fx_setup();
}

TestSuite(cache, .init = cache_init, .fini = fx_teardown);

static uint64_t ops(const char *op)
{
	od_fs_opcount c[64];
	size_t n = od_fs_opcounts(c, G_N_ELEMENTS(c));
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].op, op) == 0)
			return c[i].n;
	return 0;
}

static bool gone(const char *rel)
{
	g_autofree char *p = in_mnt(rel);
	struct stat st;
	return stat(p, &st) < 0 && errno == ENOENT;
}

static unsigned mode_of(const char *rel)
{
	g_autofree char *p = in_mnt(rel);
	struct stat st;
	return stat(p, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0u;
}

/* polls cond(rel, want) for up to 2 s (the invalidator is a thread of its own) */
#define WITHIN_2S(expr)                                                   \
	({                                                                \
		bool ok_ = false;                                         \
		for (int i_ = 0; i_ < 200 && !(ok_ = (expr)); i_++)       \
			g_usleep(10000);                                  \
		ok_;                                                      \
	})

Test(cache, a_listing_gives_names_with_their_attributes)
{
	SKIP_UNLESS_READY();
	for (int i = 0; i < 5; i++) {
		g_autofree char *d = g_strdup_printf("%s/a/l%d", fixture, i);
		cr_assert_eq(mkdir(d, 0755), 0);
	}
	g_autofree char *dir = in_mnt("a");
	DIR *d = opendir(dir); /* its own path walk looks "a" up */
	cr_assert_not_null(d);
	uint64_t l0 = ops("lookup"), p0 = ops("readdirplus"), g0 = ops("getattr");
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "l", 1) != 0)
			continue;
		struct stat st;
		g_autofree char *p = g_strdup_printf("%s/%s", dir, de->d_name);
		cr_assert_eq(lstat(p, &st), 0);
		cr_assert(S_ISDIR(st.st_mode));
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 5);
	cr_assert_geq(ops("readdirplus") - p0, 1, "the kernel lists with READDIRPLUS");
	cr_assert_eq(ops("lookup") - l0, 0, "no LOOKUP after READDIRPLUS");
	cr_assert_eq(ops("getattr") - g0, 0, "no GETATTR after READDIRPLUS");
}

Test(cache, a_real_rmdir_drops_the_name_on_notice)
{
	SKIP_UNLESS_READY();
	g_autofree char *real = g_strdup_printf("%s/a/gone", fixture);
	cr_assert_eq(mkdir(real, 0755), 0);
	cr_assert(!gone("a/gone"), "a new name shows at once (no negative entries)");
	cr_assert_eq(rmdir(real), 0);
	cr_assert(!gone("a/gone"), "kept by the kernel (the time-out is 60 s)");
	od_shadowfs_real_changed(fs, real_ino("a"), "gone", false);
	cr_assert(WITHIN_2S(gone("a/gone")), "the notice drops it");
}

Test(cache, a_real_chmod_drops_the_attributes_on_notice)
{
	SKIP_UNLESS_READY();
	g_autofree char *a = g_strdup_printf("%s/a", fixture);
	g_autofree char *f = g_strdup_printf("%s/a/memory.max", fixture);
	unsigned was = mode_of("a"), fwas = mode_of("a/memory.max");
	cr_assert(was && fwas);
	cr_assert_eq(chmod(a, 0700), 0);
	cr_assert_eq(chmod(f, 0600), 0);
	cr_assert_eq(mode_of("a"), was, "a directory's attributes are kept by the kernel");
	cr_assert_eq(mode_of("a/memory.max"), 0600, "a file's name is looked up at every walk");
	od_shadowfs_real_changed(fs, real_ino("a"), NULL, true);
	cr_assert(WITHIN_2S(mode_of("a") == 0700), "the notice drops the directory's");
	cr_assert_eq(chmod(a, was), 0);
	cr_assert_eq(chmod(f, fwas), 0);
}

static unsigned fmode_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0u;
}

/* A file's attributes are kept too (no GETATTR after its LOOKUP, none for an fstat); a
 * stat by path stays fresh (the walk looks the name up), an open descriptor's fstat shows
 * a real change once the watcher's notice names the file. */
Test(cache, a_files_attributes_are_kept_until_the_notice)
{
	SKIP_UNLESS_READY();
	g_autofree char *f = g_strdup_printf("%s/a/memory.high", fixture);
	g_autofree char *p = in_mnt("a/memory.high");
	unsigned was = mode_of("a/memory.high");
	cr_assert(was);
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	uint64_t l0 = ops("lookup"), g0 = ops("getattr");
	struct stat st;
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert_eq(fmode_of(fd), was);
	cr_assert_eq(ops("lookup") - l0, 1, "a stat by path looks the file's name up");
	cr_assert_eq(ops("getattr") - g0, 0, "and neither it nor an fstat asks for attributes");

	cr_assert_eq(chmod(f, 0600), 0);
	cr_assert_eq(fmode_of(fd), was, "kept by the kernel (the time-out is 60 s)");
	od_shadowfs_real_changed(fs, real_ino("a"), "memory.max", true);
	g_usleep(300000); /* the invalidator is a thread: time to have sent what it would */
	cr_assert_eq(fmode_of(fd), was, "a notice naming another file drops nothing of it");
	od_shadowfs_real_changed(fs, real_ino("a"), "memory.high", true);
	cr_assert(WITHIN_2S(fmode_of(fd) == 0600), "the notice naming it drops them");
	cr_assert_eq(mode_of("a/memory.high"), 0600, "and a stat by path agrees");
	close(fd);
	cr_assert_eq(chmod(f, was), 0);
}

/* A read through the page cache (sendfile: busybox cat) trims the kernel's size to what
 * the read returned; the next one must see the whole of a longer content. */
Test(cache, a_file_grows_between_two_sendfiles)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/memory.low");
	const char *vals[] = { "0\n", "1048576\n", "7\n", "123456789\n" };
	for (size_t i = 0; i < G_N_ELEMENTS(vals); i++) {
		put("a/memory.low", vals[i]);
		int in = open(p, O_RDONLY);
		cr_assert_geq(in, 0);
		int pfd[2];
		cr_assert_eq(pipe(pfd), 0);
		ssize_t n = sendfile(pfd[1], in, NULL, 65536);
		char buf[64] = { 0 };
		cr_assert_eq(n, (ssize_t)strlen(vals[i]), "sendfile of '%s' gave %zd bytes", vals[i], n);
		cr_assert_eq(read(pfd[0], buf, sizeof buf - 1), n);
		cr_assert_str_eq(buf, vals[i]);
		close(pfd[0]);
		close(pfd[1]);
		close(in);
	}
}

Test(cache, a_change_through_the_shadow_shows_at_once)
{
	SKIP_UNLESS_READY();
	g_autofree char *p = in_mnt("a/b");
	unsigned was = mode_of("a/b");
	cr_assert_eq(chmod(p, 0711), 0);
	cr_assert_eq(mode_of("a/b"), 0711, "setattr answers with the new attributes");
	cr_assert_eq(chmod(p, was), 0);
	g_autofree char *n = in_mnt("a/made");
	cr_assert_eq(mkdir(n, 0755), 0);
	cr_assert(!gone("a/made"));
	cr_assert_eq(rmdir(n), 0);
	cr_assert(gone("a/made"), "rmdir through the shadow drops the name itself");
}

/* Root's names count too (bench-manage on 6.1: 2,000 limit writes as root left 2,000
 * memory.max nodes and their descriptors, the sweeper asleep): past FS_SWEEP_IDLE file
 * descriptors the sweeper wakes, and a period later the kernel lets the unused names go. */
Test(cache, roots_unused_file_names_are_swept, .timeout = 30)
{
	SKIP_UNLESS_READY();
	/* 300 names in one directory set most of its 64 bits: keep none, to see every unused
	 * name go (the next test sees first-time names go while repeats stay) */
	fs->opts.name_keep_s = 0;
	const int n = FS_SWEEP_IDLE + 44;
	for (int i = 0; i < n; i++) {
		g_autofree char *rel = g_strdup_printf("a/f%03d", i);
		put(rel, "1\n");
	}
	size_t files = 0;
	fs_inodes_fds(fs->inodes, 0, NULL, &files);
	size_t before = files;
	for (int i = 0; i < n; i++) {
		g_autofree char *p = g_strdup_printf("%s/a/f%03d", mnt, i);
		struct stat st;
		cr_assert_eq(stat(p, &st), 0, "stat %s: %s", p, strerror(errno));
	}
	fs_inodes_fds(fs->inodes, 0, NULL, &files);
	cr_assert_geq(files, before + n, "each name looked up holds its node (%zu -> %zu)", before, files);
	/* the first sweep comes one period after the wake-up; FORGETs follow it */
	bool swept = false;
	for (int i = 0; i < 150 && !swept; i++) {
		g_usleep(100000);
		fs_inodes_fds(fs->inodes, 0, NULL, &files);
		swept = files < FS_SWEEP_IDLE;
	}
	cr_assert(swept, "%zu file descriptors still held 15 s after %d lookups by root", files, n);
	g_autofree char *p0 = in_mnt("a/f000");
	struct stat st;
	cr_assert_eq(stat(p0, &st), 0, "a swept name is looked up again");
}

#define KEEP_DIRS 30
#define KEEP_PER_DIR 10

/* Is k<i> (a/d<i/10>/k<i%10>) a node the kernel still knows? */
static bool known(int i)
{
	g_autofree char *dir = g_strdup_printf("%s/a/d%02d", fixture, i / KEEP_PER_DIR);
	g_autofree char *name = g_strdup_printf("k%d", i % KEEP_PER_DIR);
	struct stat st;
	cr_assert_eq(stat(dir, &st), 0);
	return fs_inodes_find_child(fs->inodes, st.st_ino, name) != 0;
}

static int count_known(int from, int to)
{
	int k = 0;
	for (int i = from; i < to; i++)
		k += known(i);
	return k;
}

/* stats every name, the last late of them half a second after the others */
static void stat_all(int n, int late)
{
	for (int i = 0; i < n; i++) {
		if (i == n - late)
			g_usleep(500000); /* the later group's stamps are newer */
		g_autofree char *p = g_strdup_printf("%s/a/d%02d/k%d", mnt, i / KEEP_PER_DIR, i % KEEP_PER_DIR);
		struct stat st;
		cr_assert_eq(stat(p, &st), 0, "stat %s: %s", p, strerror(errno));
	}
}

/* A monitor reads the same files every 10-15 s: a periodic sweep takes a name looked up for
 * the first time in its directory, and spares one made again after a sweep while it was
 * looked up within opts.name_keep_s, at most opts.name_keep_max of them (the most recent).
 * 300 names, 10 in each of 30 directories (a directory remembers 64 bits of names: a few
 * first-time names pass for repeats), looked up, swept, looked up again in two groups: the
 * sweeps after it take none; with the bound lowered to the later group's size, the next one
 * takes the older group and keeps the later. Sweeps every 1-4 s (fx_sweep_period_s). */
Test(cache, file_names_looked_up_again_are_kept, .timeout = 90)
{
	SKIP_UNLESS_READY();
	fs->opts.name_keep_s = 600;
	const int n = KEEP_DIRS * KEEP_PER_DIR;
	for (int d = 0; d < KEEP_DIRS; d++) {
		g_autofree char *p = g_strdup_printf("%s/a/d%02d", fixture, d);
		cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s: %s", p, strerror(errno));
		for (int i = 0; i < KEEP_PER_DIR; i++) {
			g_autofree char *rel = g_strdup_printf("a/d%02d/k%d", d, i);
			put(rel, "1\n");
		}
	}
	stat_all(n, 0);
	int left = n;
	for (int i = 0; i < 100 && (left = count_known(0, n)) > n / 5; i++)
		g_usleep(100000);
	cr_assert_leq(left, n / 5, "%d of %d names looked up once still known 10 s later", left, n);
	g_usleep(500000); /* the FORGETs of one sweep come together */
	/* the kept names hold at most a uid's share of the budget (sweep.c) */
	int late = (int)MIN((size_t)100, fs_fd_budget() / (2 * FS_INODES_UID_SHARE));
	cr_assert_geq(late, 10, "the descriptor limit leaves %d names to keep", late);
	stat_all(n, late);
	g_usleep(5 * G_USEC_PER_SEC); /* past at least one sweep (every 1-4 s) */
	cr_assert_eq(count_known(0, n), n, "names looked up again 5 s ago were swept with a 600 s keep");
	fs->opts.name_keep_max = (unsigned)late;
	int old = n - late;
	for (int i = 0; i < 100 && (left = count_known(0, n - late)) > 0; i++)
		g_usleep(100000);
	cr_assert_eq(left, 0, "%d of the %d older names outlived the bound of %d for 10 s", left, old, late);
	cr_assert_eq(count_known(n - late, n), late, "the %d most recent names were not all kept", late);
}

/* A read-only reopen through /proc/self/fd walks no name, so the kernel judges it by the kept
 * mode: the daemon judges it again by the real file's (fs_access_read). Root's O_PATH
 * descriptor of a file uid 1000 may read; the real tree then closes the file to it; uid
 * 1000's reopen is refused, and root's beside it works. */
Test(cache, a_reopen_through_proc_is_judged_by_the_real_mode)
{
	SKIP_UNLESS_READY();
	g_autofree char *f = g_strdup_printf("%s/a/memory.high", fixture);
	g_autofree char *p = in_mnt("a/memory.high");
	cr_assert_eq(chmod(f, 0644), 0);
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	int pfd = open(p, O_PATH);
	cr_assert_geq(pfd, 0, "O_PATH %s: %s", p, strerror(errno));
	cr_assert_eq(chmod(f, 0600), 0);
	g_autofree char *via = g_strdup_printf("/proc/self/fd/%d", pfd);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			_exit(2);
		int fd = open(via, O_RDONLY);
		_exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 3);
	}
	int ws;
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	cr_assert(WIFEXITED(ws));
	cr_assert_eq(WEXITSTATUS(ws), 1, "uid 1000's reopen of a 0600 root file: exit %d (0: it read, 3: not EACCES)",
		     WEXITSTATUS(ws));
	int fd = open(via, O_RDONLY);
	cr_assert_geq(fd, 0, "root's reopen: %s", strerror(errno));
	close(fd);
	close(pfd);
	cr_assert_eq(chmod(f, 0644), 0);
}

/* cgroup.event_control shows its directory's owner: a chown of the directory alone (its
 * own IN_ATTRIB, no name) drops the synthetic file's attributes too. */
Test(cache, a_directory_chown_reaches_its_synthetic_files)
{
	SKIP_UNLESS_READY();
	g_autofree char *a = g_strdup_printf("%s/a", fixture);
	g_autofree char *p = in_mnt("a/cgroup.event_control");
	int fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	uid_t was = st.st_uid;
	cr_assert_eq(chown(a, 1000, 1000), 0);
	od_shadowfs_real_changed(fs, real_ino("a"), NULL, true);
	cr_assert(WITHIN_2S(fstat(fd, &st) == 0 && st.st_uid == 1000), "event_control still shows uid %u",
		  (unsigned)st.st_uid);
	close(fd);
	cr_assert_eq(chown(a, was, was), 0);
}
