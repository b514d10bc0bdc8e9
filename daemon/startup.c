/* startup.c — see startup.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/kernel_io.h"
#include "oomd/startup.h"
#include "oomd/options.h"
#include "text_trim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <fuse_log.h>
#include <libcgroup.h>

int od_check_root(GError **err)
{
	if (geteuid() != 0) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_PERM,
			    "must run as root (effective uid %u): it writes the real cgroup knobs "
			    "and mounts with allow_other", (unsigned)geteuid());
		return OD_EXIT_NOT_ROOT;
	}
	return OD_EXIT_OK;
}

int od_check_fuse(GError **err)
{
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		int e = errno;
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e),
			    "FUSE unavailable: /dev/fuse: %s%s", g_strerror(e),
			    e == ENOENT ? " (load the fuse module: modprobe fuse)" : "");
		return OD_EXIT_FUSE;
	}
	return OD_EXIT_OK;
}

/* /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *d = s;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Calls fn(mount point, fstype, source, ud) for each line of mountinfo until it returns TRUE. */
static bool each_mount(bool (*fn)(const char *mnt, const char *type, const char *src, void *ud),
		       void *ud)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return false;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		/* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
		g_auto(GStrv) f = g_strsplit(*l, " ", -1);
		guint n = g_strv_length(f);
		if (n < 7)
			continue;
		guint sep = 6;
		while (sep < n && strcmp(f[sep], "-") != 0)
			sep++;
		if (sep + 2 >= n)
			continue;
		unescape(f[4]);
		unescape(f[sep + 2]);
		if (fn(f[4], f[sep + 1], f[sep + 2], ud))
			return true;
	}
	return false;
}

typedef struct {
	const char *path;
	char *type, *src;
} find_ctx;

static bool match_mnt(const char *mnt, const char *type, const char *src, void *ud)
{
	find_ctx *c = ud;
	if (strcmp(mnt, c->path) != 0)
		return false;
	/* The last match is the one on top: keep scanning. */
	g_free(c->type);
	g_free(c->src);
	c->type = g_strdup(type);
	c->src = g_strdup(src);
	return false;
}

/* mkdir(2) only looks the last component up in its parent (filename_create): an
 * existing name is EEXIST without following a mount on it, so no request reaches a
 * FUSE mount there, served or not. */
static int make_dir(const char *path, GError **err)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return OD_EXIT_OK;
	int e = errno;
	g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "mountpoint %s: mkdir: %s%s", path,
		    g_strerror(e), e == ENOENT ? " (its parent directory is missing)" : "");
	return OD_EXIT_MOUNTPOINT;
}

int od_make_mountpoint(const char *mountpoint, bool is_default, GError **err)
{
	int rc = is_default ? make_dir(OD_RUNTIME_DIR, err) : OD_EXIT_OK;
	return rc == OD_EXIT_OK ? make_dir(mountpoint, err) : rc;
}

int od_check_mountpoint(const char *mountpoint, GError **err)
{
	struct stat st;
	struct statfs sfs;
	/* statfs, not stat: FUSE always asks the server for it, while the shadow lets the kernel
	 * keep a directory's attributes 1 s (READDIRPLUS, issue 23), so a stat of a dead server's
	 * mount is answered from that cache meanwhile (s-forge on 6.12: a start 0.9 s after a
	 * SIGKILL found the stale mount "busy: already served"). A live mount with no server
	 * yet blocks in either, as before. */
	if (statfs(mountpoint, &sfs) < 0 && errno == ENOTCONN) {
		/* A dead FUSE server's mount: detach it lazily and mount over again. */
		g_warning("%s: stale FUSE mount (Transport endpoint is not connected): detaching it",
			  mountpoint);
		if (umount2(mountpoint, MNT_DETACH) < 0) {
			int e = errno;
			g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e),
				    "mountpoint %s is a stale FUSE mount and umount2(MNT_DETACH) failed: %s",
				    mountpoint, g_strerror(e));
			return OD_EXIT_MOUNTPOINT;
		}
	}
	if (stat(mountpoint, &st) < 0) {
		int e = errno;
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "mountpoint %s: %s%s", mountpoint,
			    g_strerror(e), e == ENOENT ? " (create it first)" : "");
		return OD_EXIT_MOUNTPOINT;
	}
	if (!S_ISDIR(st.st_mode)) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "mountpoint %s: %s", mountpoint,
			    g_strerror(ENOTDIR));
		return OD_EXIT_MOUNTPOINT;
	}
	g_autofree char *real = realpath(mountpoint, NULL);
	find_ctx c = { .path = real ? real : mountpoint };
	each_mount(match_mnt, &c);
	int rc = OD_EXIT_OK;
	if (c.type && g_str_has_prefix(c.type, "fuse") &&
	    (strstr(c.type, "oomdelayfs") || (c.src && strstr(c.src, "oomdelayfs")))) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_FAILED,
			    "mountpoint %s is busy: already served by a running oomdelayfs (%s); "
			    "stop it first", mountpoint, c.type);
		rc = OD_EXIT_MOUNTPOINT;
	}
	g_free(c.type);
	g_free(c.src);
	return rc;
}

static bool match_cgroup2(const char *mnt, const char *type, const char *src, void *ud)
{
	(void)src;
	if (strcmp(type, "cgroup2") != 0)
		return false;
	*(char **)ud = g_strdup(mnt);
	return true;
}

static void cg_logger(void *ud, int level, const char *fmt, va_list ap)
{
	(void)ud;
	(void)level;
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	g_strchomp(msg);
	/* Debug only: its failures are handled by the mountinfo fallback. */
	g_debug("libcgroup: %s", msg);
}

static bool is_cgroup2(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Is `word` one of the space-separated words of file `name` under fd? */
static int has_word(int fd, const char *name, const char *word, bool *found)
{
	g_autoptr(GString) text = g_string_new(NULL);
	int r = od_kio_read_all(fd, name, text);
	if (r < 0)
		return r;
	g_auto(GStrv) words = g_strsplit_set(text->str, " \n", -1);
	*found = g_strv_contains((const gchar *const *)words, word);
	return 0;
}

/* libcgroup keeps its mount table in 2.4 MiB of static storage, 800 KiB of which
 * cgroup_init() fills: resident, and locked by mlockall, for the daemon's whole
 * life, for a question asked once at start-up. A child asks it and writes the
 * answer into a pipe. Runs before the daemon makes any thread (od_open_cgroup_root's
 * contract), so the child may use malloc and stdio. NULL when libcgroup has no
 * answer (its failures are handled by the mountinfo fallback). */
static char *libcgroup_memory_mount(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0) {
		close(p[0]);
		cgroup_set_logger(cg_logger, CGROUP_LOG_WARNING, NULL);
		char *mp = NULL;
		if (cgroup_init() != 0 || cgroup_get_subsys_mount_point("memory", &mp) != 0 || !mp)
			_exit(1);
		for (size_t off = 0, len = strlen(mp); off < len;) {
			ssize_t n = write(p[1], mp + off, len - off);
			if (n < 0 && errno != EINTR)
				_exit(1);
			off += n > 0 ? (size_t)n : 0;
		}
		_exit(0);
	}
	close(p[1]);
	GString *mp = g_string_new(NULL);
	char buf[256];
	ssize_t n;
	while ((n = read(p[0], buf, sizeof buf)) != 0) {
		if (n > 0)
			g_string_append_len(mp, buf, n);
		else if (errno != EINTR)
			break;
	}
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || mp->len == 0) {
		g_string_free(mp, TRUE);
		return NULL;
	}
	return g_string_free(mp, FALSE);
}

int od_open_cgroup_root(const char *path, int *root_fd, char **root_path, GError **err)
{
	g_autofree char *found = NULL;
	if (!path) {
		/* libcgroup first: it knows the distributions' layouts. 2.0.2 can fail on
		 * pure v2 hosts, and may return a v1 memory mount on hybrid ones; the
		 * statfs check below tells. */
		g_autofree char *mp = libcgroup_memory_mount();
		if (mp) {
			int fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0 && is_cgroup2(fd))
				found = g_strdup(mp);
			if (fd >= 0)
				close(fd);
		}
		if (!found)
			each_mount(match_cgroup2, &found);
		if (!found) {
			g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NOENT,
				    "no cgroup2 mount in /proc/self/mountinfo (this host uses cgroup v1 "
				    "only; boot with systemd.unified_cgroup_hierarchy=1 or mount cgroup2)");
			return OD_EXIT_CGROUP;
		}
		path = found;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOTCONN) {
		/* A dead daemon's shadow mounted over the real tree (e.g. --release-all
		 * after a crash of `oomdelayfs /sys/fs/cgroup`): detach it, the real
		 * mount is underneath. */
		g_warning("%s: stale FUSE mount over the cgroup root: detaching it", path);
		if (umount2(path, MNT_DETACH) == 0)
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else
			errno = ENOTCONN;
	}
	if (fd < 0) {
		int e = errno;
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "cgroup root %s: %s", path,
			    g_strerror(e));
		return OD_EXIT_CGROUP;
	}
	if (!is_cgroup2(fd)) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL,
			    "cgroup root %s is not on a cgroup2 file system", path);
		close(fd);
		return OD_EXIT_CGROUP;
	}
	bool avail = false, enabled = false;
	int r = has_word(fd, "cgroup.controllers", "memory", &avail);
	if (r == 0)
		r = has_word(fd, "cgroup.subtree_control", "memory", &enabled);
	if (r < 0) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(-r),
			    "cgroup root %s: reading cgroup.controllers/subtree_control: %s", path,
			    g_strerror(-r));
		close(fd);
		return OD_EXIT_CGROUP;
	}
	if (!avail || !enabled) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NODEV,
			    "the memory controller is not %s at %s (%s); %s", avail ? "enabled" : "available",
			    path, avail ? "not in cgroup.subtree_control" : "not in cgroup.controllers",
			    avail ? "enable it: echo +memory > cgroup.subtree_control"
				  : "it is bound to cgroup v1 or disabled (cgroup_disable=memory)");
		close(fd);
		return OD_EXIT_CGROUP;
	}
	*root_fd = fd;
	*root_path = g_strdup(path);
	return OD_EXIT_OK;
}

/* CAP_IPC_LOCK lifts RLIMIT_MEMLOCK (bit 14 of CapEff in /proc/self/status). */
static bool has_ipc_lock(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/status", &text, NULL, NULL))
		return false;
	const char *p = strstr(text, "\nCapEff:");
	return p && (g_ascii_strtoull(p + 9, NULL, 16) & (1ull << 14));
}

/* Each cgroup costs several descriptors (the watcher's O_PATH one, the controller's
 * directory, the shadow tree's inodes and opens): the usual soft limit of 1024 runs
 * out at a few hundred cgroups. Root may raise both limits up to fs.nr_open. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = 1u << 20;
	g_autofree char *nr = NULL;
	if (g_file_get_contents("/proc/sys/fs/nr_open", &nr, NULL, NULL)) {
		guint64 v = g_ascii_strtoull(nr, NULL, 10);
		if (v > 0 && v < want)
			want = (rlim_t)v;
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
		return;
	struct rlimit nl = { .rlim_cur = want, .rlim_max = MAX(want, rl.rlim_max) };
	if (rl.rlim_max == RLIM_INFINITY)
		nl.rlim_max = RLIM_INFINITY;
	if (setrlimit(RLIMIT_NOFILE, &nl) < 0) {
		nl.rlim_cur = nl.rlim_max = rl.rlim_max; /* not root enough: the hard limit */
		if (setrlimit(RLIMIT_NOFILE, &nl) < 0 || rl.rlim_max < 8192)
			g_warning("RLIMIT_NOFILE stays at %llu: large cgroup trees may run out of "
				  "descriptors (set LimitNOFILE=1048576)", (unsigned long long)rl.rlim_max);
	}
}

int od_harden(int nice)
{
	raise_nofile();
	errno = 0;
	int was = getpriority(PRIO_PROCESS, 0);
	if (was == -1 && errno)
		was = 0;
	/* Before any thread is made: they inherit it. */
	if (setpriority(PRIO_PROCESS, 0, nice) < 0)
		g_warning("setpriority(%d): %s: the kill may wait for the CPU behind the workloads",
			  nice, g_strerror(errno));
	/* Few malloc arenas: each reserves 64 MiB of address space, all of it
	 * counted as locked under MCL_FUTURE. */
	mallopt(M_ARENA_MAX, 2);
	/* A fixed threshold: glibc's own rises to the largest block freed, after which
	 * the transient buffers of a subtree write (actions for 10,000 cgroups) come
	 * from the heap and leave it fragmented and resident (locked) for good, instead
	 * of being mapped and unmapped. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* No transparent huge pages (Debian's kernels default to "always"): anonymous
	 * mappings next to each other merge (libfuse's 1 MiB receive buffers, hash
	 * tables' arrays), and one touch in a 2 MiB-aligned range of the merged mapping
	 * made all 2 MiB resident and locked; restarted daemons at 10,000 cgroups were
	 * seen 2-4 MiB larger than others for it (f-scale). */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		g_warning("prctl(PR_SET_THP_DISABLE): %s: huge pages may inflate the locked memory",
			  g_strerror(errno));
	/* MCL_ONFAULT: lock pages as they are touched, so that each thread's 8 MiB
	 * stack reservation is not made resident up front. MCL_FUTURE under a finite
	 * RLIMIT_MEMLOCK without CAP_IPC_LOCK would make later mmaps (thread stacks,
	 * malloc) fail with EAGAIN: lock what exists only, and say so. */
	/* Before the lock: the libraries' pages only start-up needed (text_trim.h; at 10,000
	 * cgroups, bench-manage: files 5,976 to 3,884 kB resident on 6.12, 5,952 to 4,012 on 7). */
	long trimmed = od_trim_startup_pages();
	g_debug("start-up pages of the libraries released: %ld kB", trimmed);
	struct rlimit rl;
	int flags = MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && !has_ipc_lock()) {
		g_warning("RLIMIT_MEMLOCK is %llu bytes and CAP_IPC_LOCK is missing: locking the "
			  "current pages only (set LimitMEMLOCK=infinity)", (unsigned long long)rl.rlim_cur);
		flags = MCL_CURRENT | MCL_ONFAULT;
	}
	if (mlockall(flags) < 0)
		g_warning("mlockall: %s: the daemon may be paged out under memory pressure "
			  "(raise LimitMEMLOCK)", g_strerror(errno));
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "-1000", 5) != 5)
		g_warning("/proc/self/oom_score_adj = -1000: %s: the OOM killer may choose the daemon",
			  g_strerror(errno));
	if (fd >= 0)
		close(fd);
	return was;
}

double od_ms_since_start(void)
{
	g_autofree char *text = NULL;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) < 0 ||
	    !g_file_get_contents("/proc/self/stat", &text, NULL, NULL))
		return -1;
	/* pid (comm) state ppid ...: the comm may hold spaces and parentheses; the start
	 * time is the 20th field after it (proc_pid_stat: field 22 in all) */
	const char *p = strrchr(text, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -1;
	guint64 ticks = g_ascii_strtoull(p + 1, NULL, 10);
	double start_ms = (double)ticks * 1000.0 / (double)hz;
	return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6 - start_ms;
}

static void fuse_logger(enum fuse_log_level level, const char *fmt, va_list ap)
{
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	g_strchomp(msg);
	if (level <= FUSE_LOG_ERR)
		g_warning("fuse: %s", msg);
	else if (level <= FUSE_LOG_NOTICE)
		g_message("fuse: %s", msg);
	else
		g_debug("fuse: %s", msg);
}

void od_log_bridges(bool debug)
{
	if (debug)
		g_log_set_debug_enabled(TRUE);
	fuse_set_log_func(fuse_logger);
}
