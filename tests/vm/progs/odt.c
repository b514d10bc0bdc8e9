/* odt - oomdelayfs test tool, used by the VM scenarios (tests/vm/scenarios).
 *
 * Subcommands (times are CLOCK_MONOTONIC milliseconds with microsecond decimals):
 *   odt now                                   print the monotonic clock in ms
 *   odt hog MB [--step-kb N] [--report FILE] [--cgroup DIR] [--exit]
 *       join DIR (if given), then allocate and touch MB MiB of anonymous memory in
 *       steps of N KiB (default 256), writing "<KiB touched> <ms since start>\n" to FILE
 *       after each step; then hold the memory until killed (or exit with --exit, or
 *       with --retouch write every page again in a loop until killed)
 *   odt progress FILE                         print the KiB figure of a hog's report
 *   odt key FILE KEY                          print the value of KEY in a flat-keyed file
 *   odt write FILE VALUE                      write VALUE, print "<ms taken>" or the error
 *   odt waitev FILE KEY [--timeout MS] [--mode inotify|poll]
 *       wait until KEY in FILE differs from its value at start; print "<new> <ms waited>"
 *   odt evlat CGDIR high|oom_kill [--mb N] [--timeout MS]
 *       measure wake-up latency of inotify IN_MODIFY and poll POLLPRI on CGDIR/memory.events
 *       when the counter changes: a child in CGDIR holds N MiB (default 16); for "high"
 *       memory.high is set to N/2 and the child touches one more page at t0; for
 *       "oom_kill" memory.max is written to N/2 at t0 (the write OOM-kills the child)
 *   odt xattr set PATH NAME VALUE | get PATH NAME | list PATH | rm PATH NAME
 *   odt open PATH FLAG[,FLAG...]              open(2) with rdonly|wronly|rdwr|creat|excl|trunc;
 *                                             print "ok" or the errno name (exit 0 either way)
 *   odt sleep MS                              sleep with ms precision
 *   odt asuser UID GID CMD [ARGS...]          run CMD with these ids and no groups
 *   odt cgns CMD [ARGS...]                    run CMD in a new cgroup namespace (rooted at
 *                                             the cgroup odt is in)
 *   odt capbset CAP[,CAP...] CMD [ARGS...]    run CMD with every capability but these
 *                                             dropped from the bounding set (names as in
 *                                             capabilities(7) without CAP_, lower case):
 *                                             a root CMD then holds only these
 *
 * Exit status: 0 ok, 1 failure (with a message on stderr), 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("odt: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
	fputs("usage: odt now | hog MB [--step-kb N] [--report FILE] [--cgroup DIR] [--exit|--retouch]\n"
	      "       | progress FILE | key FILE KEY | write FILE VALUE\n"
	      "       | waitev FILE KEY [--timeout MS] [--mode inotify|poll]\n"
	      "       | evlat CGDIR high|oom_kill [--mb N] [--timeout MS]\n"
	      "       | xattr set PATH NAME VALUE | xattr get PATH NAME | xattr list PATH\n"
	      "       | xattr rm PATH NAME | open PATH FLAG[,FLAG...] | cgns CMD [ARGS...]\n"
	      "       | sleep MS | asuser UID GID CMD [ARGS...] | capbset CAP[,CAP...] CMD [ARGS...]\n", stderr);
	exit(2);
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 0);
	if (errno || *s == '\0' || *end != '\0' || v < 0)
		die("bad %s: '%s'", what, s);
	return v;
}

static void write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	ssize_t n = write(fd, val, strlen(val));
	if (n < 0)
		die("write '%s' to %s: %s", val, path, strerror(errno));
	close(fd);
}

/* Read KEY from a flat-keyed file through an open fd (pread from 0). -1 if absent. */
static long long key_fd(int fd, const char *key)
{
	char buf[4096];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n < 0)
		die("pread: %s", strerror(errno));
	buf[n] = '\0';
	size_t kl = strlen(key);
	for (char *line = buf; line && *line; ) {
		char *nl = strchr(line, '\n');
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return strtoll(line + kl + 1, NULL, 10);
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

static long long key_path(const char *path, const char *key)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	long long v = key_fd(fd, key);
	close(fd);
	return v;
}

/* ---- hog ---- */
static int cmd_hog(int argc, char **argv)
{
	if (argc < 1)
		usage();
	long mb = parse_long(argv[0], "MB");
	long step_kb = 256;
	const char *report = NULL, *cg = NULL;
	int do_exit = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--step-kb") && i + 1 < argc)
			step_kb = parse_long(argv[++i], "step");
		else if (!strcmp(argv[i], "--report") && i + 1 < argc)
			report = argv[++i];
		else if (!strcmp(argv[i], "--cgroup") && i + 1 < argc)
			cg = argv[++i];
		else if (!strcmp(argv[i], "--exit"))
			do_exit = 1;
		else if (!strcmp(argv[i], "--retouch"))
			do_exit = 2;
		else
			usage();
	}
	if (step_kb < 4)
		step_kb = 4;
	int rfd = -1;
	if (report) {
		rfd = open(report, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (rfd < 0)
			die("open %s: %s", report, strerror(errno));
	}
	if (cg) {
		char path[4096], pid[32];
		snprintf(path, sizeof path, "%s/cgroup.procs", cg);
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		write_file(path, pid);
	}
	size_t len = (size_t)mb << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap %ld MiB: %s", mb, strerror(errno));
	double t0 = now_ms();
	size_t step = (size_t)step_kb << 10;
	long pg = sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < len; off += step) {
		size_t end = off + step > len ? len : off + step;
		for (size_t q = off; q < end; q += (size_t)pg)
			p[q] = (char)(q >> 12 | 1);
		if (rfd >= 0) {
			char line[64];
			int n = snprintf(line, sizeof line, "%-12zu %-14.1f\n", end >> 10, now_ms() - t0);
			if (pwrite(rfd, line, (size_t)n, 0) < 0)
				die("write report: %s", strerror(errno));
		}
	}
	if (do_exit == 1)
		return 0;
	/* --retouch: fault every page back in, for ever (what reclaim takes, comes back) */
	for (unsigned round = 0; do_exit == 2; round++)
		for (size_t q = 0; q < len; q += (size_t)pg)
			p[q] = (char)(q >> 12 | round);
	for (;;)
		pause();
}

static int cmd_progress(int argc, char **argv)
{
	if (argc != 1)
		usage();
	FILE *f = fopen(argv[0], "r");
	long long kb = 0;
	if (f) {
		if (fscanf(f, "%lld", &kb) != 1)
			kb = 0;
		fclose(f);
	}
	printf("%lld\n", kb);
	return 0;
}

static int cmd_key(int argc, char **argv)
{
	if (argc != 2)
		usage();
	long long v = key_path(argv[0], argv[1]);
	if (v < 0)
		die("no key '%s' in %s", argv[1], argv[0]);
	printf("%lld\n", v);
	return 0;
}

static int cmd_write(int argc, char **argv)
{
	if (argc != 2)
		usage();
	int fd = open(argv[0], O_WRONLY);
	if (fd < 0)
		die("open %s: %s", argv[0], strerror(errno));
	double t0 = now_ms();
	ssize_t n = write(fd, argv[1], strlen(argv[1]));
	double t1 = now_ms();
	if (n < 0)
		die("write '%s' to %s: %s (after %.2f ms)", argv[1], argv[0], strerror(errno), t1 - t0);
	close(fd);
	printf("%.2f\n", t1 - t0);
	return 0;
}

/* ---- event waiting ---- */
enum mode { M_INOTIFY, M_POLL };

struct waiter {
	const char *file, *key;
	enum mode mode;
	int fd;            /* open memory.events (poll) or inotify fd */
	int evfd;          /* open memory.events to read values */
	long long base;
	int timeout_ms;
	double woke;       /* ms when the change was seen, 0 if never */
	long long val;
	int wakeups;       /* wake-ups that did not show a change */
};

static void waiter_arm(struct waiter *w)
{
	w->evfd = open(w->file, O_RDONLY);
	if (w->evfd < 0)
		die("open %s: %s", w->file, strerror(errno));
	if (w->mode == M_INOTIFY) {
		w->fd = inotify_init1(IN_CLOEXEC);
		if (w->fd < 0)
			die("inotify_init1: %s", strerror(errno));
		if (inotify_add_watch(w->fd, w->file, IN_MODIFY) < 0)
			die("inotify_add_watch %s: %s", w->file, strerror(errno));
	} else {
		w->fd = w->evfd;
	}
	w->base = key_fd(w->evfd, w->key); /* the read also arms kernfs poll */
	if (w->base < 0)
		die("no key '%s' in %s", w->key, w->file);
}

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;
	double deadline = now_ms() + w->timeout_ms;
	for (;;) {
		int left = (int)(deadline - now_ms());
		if (left <= 0)
			return NULL;
		struct pollfd pfd = { .fd = w->fd, .events = w->mode == M_INOTIFY ? POLLIN : POLLPRI };
		int r = poll(&pfd, 1, left);
		if (r < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		double t = now_ms();
		if (w->mode == M_INOTIFY) {
			char buf[4096];
			if (read(w->fd, buf, sizeof buf) < 0)
				die("read inotify: %s", strerror(errno));
		}
		long long v = key_fd(w->evfd, w->key);
		if (v != w->base) {
			w->woke = t;
			w->val = v;
			return NULL;
		}
		w->wakeups++;
	}
}

static int cmd_waitev(int argc, char **argv)
{
	if (argc < 2)
		usage();
	struct waiter w = { .file = argv[0], .key = argv[1], .mode = M_INOTIFY, .timeout_ms = 10000 };
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			w.timeout_ms = (int)parse_long(argv[++i], "timeout");
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "poll"))
				w.mode = M_POLL;
			else if (strcmp(argv[i], "inotify"))
				usage();
		} else
			usage();
	}
	double t0 = now_ms();
	waiter_arm(&w);
	waiter_run(&w);
	if (!w.woke)
		die("%s: '%s' stayed %lld for %d ms", w.file, w.key, w.base, w.timeout_ms);
	printf("%lld %.2f\n", w.val, w.woke - t0);
	return 0;
}

static int cmd_evlat(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *cg = argv[0], *what = argv[1];
	long mb = 16;
	int timeout = 10000;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = parse_long(argv[++i], "MB");
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = (int)parse_long(argv[++i], "timeout");
		else
			usage();
	}
	int high = !strcmp(what, "high");
	if (!high && strcmp(what, "oom_kill"))
		usage();
	char evpath[4096], knob[4096], procs[4096];
	snprintf(evpath, sizeof evpath, "%s/memory.events", cg);
	snprintf(knob, sizeof knob, "%s/%s", cg, high ? "memory.high" : "memory.max");
	snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);

	/* child: join the cgroup, touch mb MiB, report, then touch a page per command */
	int up[2], down[2];
	if (pipe(up) || pipe(down))
		die("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		char s[32];
		snprintf(s, sizeof s, "%d", (int)getpid());
		write_file(procs, s);
		size_t len = (size_t)(mb + 8) << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		/* small pages only: the trigger must be a fresh charge, not a page of a THP
		 * that an earlier touch already faulted in */
		madvise(p, len, MADV_NOHUGEPAGE);
		size_t off;
		for (off = 0; off < ((size_t)mb << 20); off += 4096)
			p[off] = 1;
		if (write(up[1], "r", 1) != 1)
			_exit(1);
		char c;
		while (read(down[0], &c, 1) == 1 && off < len) {
			/* 64 new pages (one charge batch, past any per-cpu stock):
			 * charged over high -> reclaim and event on return to user */
			for (int k = 0; k < 64 && off < len; k++, off += 4096)
				p[off] = 1;
		}
		for (;;)
			pause();
	}
	char c;
	if (read(up[0], &c, 1) != 1)
		die("child did not become ready");

	struct waiter wi = { .file = evpath, .key = what, .mode = M_INOTIFY, .timeout_ms = timeout };
	struct waiter wp = { .file = evpath, .key = what, .mode = M_POLL, .timeout_ms = timeout };
	char val[32];
	snprintf(val, sizeof val, "%ld", (mb / 2) << 20);
	double tw0 = 0, tw1 = 0;
	if (high) {
		/* lower memory.high first (the write itself reclaims; no event expected) */
		tw0 = now_ms();
		write_file(knob, val);
		tw1 = now_ms();
	}
	waiter_arm(&wi);
	waiter_arm(&wp);
	pthread_t ti, tp;
	pthread_create(&ti, NULL, waiter_run, &wi);
	pthread_create(&tp, NULL, waiter_run, &wp);
	usleep(50000); /* both threads asleep in poll() */
	double t0 = now_ms(), t1;
	if (high) {
		if (write(down[1], "t", 1) != 1)
			die("write to child: %s", strerror(errno));
		t1 = t0;
	} else {
		tw0 = t0;
		write_file(knob, val);
		t1 = tw1 = now_ms();
	}
	pthread_join(ti, NULL);
	pthread_join(tp, NULL);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	if (!wi.woke || !wp.woke) {
		char b[4096];
		int fd = open(evpath, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
		b[n > 0 ? n : 0] = '\0';
		for (char *q = b; *q; q++)
			if (*q == '\n')
				*q = ' ';
		fprintf(stderr, "odt: memory.events now: %s\n", b);
		die("%s did not change within %d ms (inotify %s, poll %s)", what, timeout,
		    wi.woke ? "woke" : "silent", wp.woke ? "woke" : "silent");
	}
	if (high)
		printf("high %lld->%lld after one 64-page allocation over memory.high (its write took "
		       "%.2f ms): inotify woke %.2f ms, poll %.2f ms after the allocation",
		       wi.base, wi.val, tw1 - tw0, wi.woke - t0, wp.woke - t0);
	else
		printf("oom_kill %lld->%lld by writing memory.max below usage (write took %.2f ms): "
		       "inotify woke %.2f ms, poll %.2f ms after the write began",
		       wi.base, wi.val, t1 - t0, wi.woke - t0, wp.woke - t0);
	printf(" (wake-ups without a change: inotify %d, poll %d)\n", wi.wakeups, wp.wakeups);
	return 0;
}

static int cmd_xattr(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[0], "set")) {
		if (setxattr(argv[1], argv[2], argv[3], strlen(argv[3]), 0) < 0)
			die("setxattr %s %s: %s", argv[1], argv[2], strerror(errno));
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[0], "get")) {
		char buf[65536];
		ssize_t n = getxattr(argv[1], argv[2], buf, sizeof buf - 1);
		if (n < 0)
			die("getxattr %s %s: %s", argv[1], argv[2], strerror(errno));
		buf[n] = '\0';
		printf("%s\n", buf);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[0], "rm")) {
		if (removexattr(argv[1], argv[2]) < 0)
			die("removexattr %s %s: %s", argv[1], argv[2], strerror(errno));
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[0], "list")) {
		char buf[65536];
		ssize_t n = listxattr(argv[1], buf, sizeof buf);
		if (n < 0)
			die("listxattr %s: %s", argv[1], strerror(errno));
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
			printf("%s\n", buf + i);
		return 0;
	}
	usage();
}

/* open(2) with the named flags; prints "ok" or the errno's name, for scenarios
 * that compare errnos with the kernel's */
static int cmd_open(int argc, char **argv)
{
	if (argc != 2)
		usage();
	static const struct { const char *name; int flag; } names[] = {
		{ "rdonly", O_RDONLY }, { "wronly", O_WRONLY }, { "rdwr", O_RDWR },
		{ "creat", O_CREAT }, { "excl", O_EXCL }, { "trunc", O_TRUNC },
	};
	int flags = 0;
	char *save = NULL;
	for (char *t = strtok_r(argv[1], ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < sizeof names / sizeof names[0] && strcmp(names[i].name, t) != 0)
			i++;
		if (i == sizeof names / sizeof names[0])
			usage();
		flags |= names[i].flag;
	}
	int fd = open(argv[0], flags | O_CLOEXEC, 0644);
	if (fd < 0) {
		printf("%s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
		return 0;
	}
	close(fd);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *cmd = argv[1];
	argc -= 2;
	argv += 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "now")) {
		printf("%.0f\n", now_ms());
		return 0;
	}
	if (!strcmp(cmd, "sleep") && argc == 1) {
		long ms = parse_long(argv[0], "ms");
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return 0;
	}
	if (!strcmp(cmd, "hog"))
		return cmd_hog(argc, argv);
	if (!strcmp(cmd, "progress"))
		return cmd_progress(argc, argv);
	if (!strcmp(cmd, "key"))
		return cmd_key(argc, argv);
	if (!strcmp(cmd, "write"))
		return cmd_write(argc, argv);
	if (!strcmp(cmd, "waitev"))
		return cmd_waitev(argc, argv);
	if (!strcmp(cmd, "evlat"))
		return cmd_evlat(argc, argv);
	if (!strcmp(cmd, "xattr"))
		return cmd_xattr(argc, argv);
	if (!strcmp(cmd, "open"))
		return cmd_open(argc, argv);
	if (!strcmp(cmd, "cgns") && argc >= 1) {
		if (unshare(CLONE_NEWCGROUP) < 0)
			die("unshare(CLONE_NEWCGROUP): %s", strerror(errno));
		execvp(argv[0], argv);
		die("exec %s: %s", argv[0], strerror(errno));
	}
	if (!strcmp(cmd, "capbset") && argc >= 2) {
		static const struct { const char *name; int cap; } caps[] = {
			{ "chown", CAP_CHOWN }, { "dac_override", CAP_DAC_OVERRIDE },
			{ "dac_read_search", CAP_DAC_READ_SEARCH }, { "fowner", CAP_FOWNER },
			{ "fsetid", CAP_FSETID }, { "kill", CAP_KILL }, { "setgid", CAP_SETGID },
			{ "setuid", CAP_SETUID }, { "setpcap", CAP_SETPCAP },
			{ "net_bind_service", CAP_NET_BIND_SERVICE }, { "ipc_lock", CAP_IPC_LOCK },
			{ "sys_ptrace", CAP_SYS_PTRACE }, { "sys_admin", CAP_SYS_ADMIN },
			{ "sys_nice", CAP_SYS_NICE }, { "sys_resource", CAP_SYS_RESOURCE },
		};
		bool keep[64] = { false };
		char *list = strdup(argv[0]);
		for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
			size_t i = 0;
			while (i < sizeof caps / sizeof caps[0] && strcmp(caps[i].name, t))
				i++;
			if (i == sizeof caps / sizeof caps[0])
				die("capbset: unknown capability %s", t);
			keep[caps[i].cap] = true;
		}
		for (int c = 0; c < 64; c++)
			if (!keep[c] && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
				die("PR_CAPBSET_DROP %d: %s", c, strerror(errno));
		execvp(argv[1], argv + 1);
		die("exec %s: %s", argv[1], strerror(errno));
	}
	if (!strcmp(cmd, "asuser") && argc >= 3) {
		gid_t gid = (gid_t)parse_long(argv[1], "gid");
		uid_t uid = (uid_t)parse_long(argv[0], "uid");
		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			die("cannot become %d:%d: %s", (int)uid, (int)gid, strerror(errno));
		execvp(argv[2], argv + 2);
		die("exec %s: %s", argv[2], strerror(errno));
	}
	usage();
}
