/* readlat - read-latency and OOM-delay timing benchmark for the VM (tests/vm/scenarios/bench-*).
 *
 *   readlat lat [-n N] [-w WAYS] FILE...
 *       read each FILE N times (default 2000, after 20 warm-up reads) in each of WAYS (a comma-
 *       separated list; default pread,open) and print
 *           pread FILE N MEDIAN P99 MEAN      (pread from offset 0 on one open fd)
 *           open FILE N MEDIAN P99 MEAN       (open + read until EOF + close: the cat path)
 *           stat FILE N MEDIAN P99 MEAN       (stat(2): on FUSE a LOOKUP and a GETATTR)
 *           openclose FILE N MEDIAN P99 MEAN  (open + close, no read)
 *       times in microseconds (CLOCK_MONOTONIC). The files take turns at every iteration, so
 *       that a direct and a shadow file compared in one run see the same conditions (a TCG VM
 *       on a loaded host has slow spells of several seconds).
 *
 *   readlat trial CGDIR LIMIT_BYTES DELAY_MS [--timeout MS] [--poll-us N] -- CMD [ARGS...]
 *       one OOM-delay trial on the REAL cgroup CGDIR (its memory.max L and delay T already set
 *       through the shadow tree): open CGDIR/memory.current, fork CMD (the hog, which joins the
 *       cgroup itself), poll memory.current every N us (default 200) until it exceeds L (t_over),
 *       then poll the xattr trusted.oomdelayfs.state of CGDIR for deadline=<ns> (every N us), then
 *       wait for the hog's death with a pidfd (t_dead; waitpid reaps it). All times on
 *       CLOCK_BOOTTIME, the daemon's clock. Prints
 *           detect_ms=D late_ms=K over_ns=.. deadline_ns=.. dead_ns=.. sig=S
 *       where D = (deadline - T) - t_over (daemon onset after the poller saw usage > L) and
 *       K = t_dead - deadline. Exit 1 on a time-out or if the hog ended without a signal; 2 if
 *       the hog died before a deadline was seen (a short hold while readlat was starved, or a
 *       death without a hold: the caller tells them apart by the daemon's log).
 *
 *   readlat trial CGDIR LIMIT_BYTES DELAY_MS --floor group|kernel [--rt PRIO] [...] -- CMD...
 *       the floor of a kill: the same trial with no daemon in it (CGDIR is a real cgroup the
 *       daemon does not manage; the caller sets memory.high = L and memory.max = L + ceiling on
 *       it, as the daemon does). At t_over the deadline is t_over + T; a thread of readlat (at
 *       SCHED_FIFO PRIO with --rt, as the daemon's deadline thread and kill actuator) sleeps in
 *       read() on a CLOCK_BOOTTIME timerfd armed for it, then writes "1" to cgroup.kill (group)
 *       or L to memory.max (kernel: the kernel's OOM killer acts) through a descriptor opened
 *       before the hog started. Prints
 *           late_ms=K wake_ms=W write_ms=X over_ns=.. deadline_ns=.. dead_ns=.. sig=S
 *       K as above; W = the timer thread's wake-up - deadline; X = how long the write took.
 *
 *   readlat until FILE VALUE [--since MS] [--every-ms N] [--timeout MS]
 *       read FILE (open, read, close) every N ms (default 5) from this one process until it
 *       reads VALUE (a trailing newline ignored): a restart's "start to first successful read"
 *       without a fork per try (a shell loop's cat under TCG came ~300 ms apart while the
 *       daemon's walk held a vCPU). MS: a CLOCK_MONOTONIC time in ms (odt now) to count from;
 *       default readlat's own start. Prints
 *           ms=M tries=T outcomes=MS:OUTCOME,...
 *       M = ms from MS to the end of the successful read; OUTCOMES: each change of what a read
 *       gave (an errno name or the first 24 bytes read) with when it first came. Exit 1 on a
 *       time-out (default 600000 ms), with the same line.
 *
 *   readlat stats [LABEL]
 *       read numbers from stdin, print "LABEL n=N min=.. median=.. p95=.. p99=.. max=.." (nearest rank)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h> /* NAN */
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmprog.h"

static void die(const char *msg)
{
	fprintf(stderr, "readlat: %s\n", msg);
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of a sorted array */
static double pct(const double *v, size_t n, double p)
{
	if (n == 0)
		return NAN;
	double x = p / 100.0 * (double)n;
	size_t r = (size_t)x;
	if ((double)r < x)
		r++;
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return v[r - 1];
}

static void summary(const char *way, const char *file, double *v, size_t n)
{
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof *v, cmp_double);
	printf("%s %s %zu %.1f %.1f %.1f\n", way, file, n, pct(v, n, 50), pct(v, n, 99), sum / (double)n);
}

#define MAXF 8

/* The ways of reading a file readlat lat can time (one call of one_way is one sample). */
enum way { W_PREAD, W_OPEN, W_STAT, W_OPENCLOSE, W_N };
static const char *const way_names[W_N] = { "pread", "open", "stat", "openclose" };

/* One timed access of file in the way w (fd: the file's descriptor kept open, for pread);
 * microseconds, or -1 with errno. */
static double one_way(enum way w, const char *file, int fd, char *buf, size_t size)
{
	int64_t t0 = vp_ns(CLOCK_MONOTONIC);
	ssize_t r = 0;
	if (w == W_PREAD) {
		r = pread(fd, buf, size, 0);
	} else if (w == W_STAT) {
		struct stat st;
		r = stat(file, &st);
	} else {
		int d = open(file, O_RDONLY | O_CLOEXEC);
		if (d < 0)
			return -1;
		if (w == W_OPEN)
			while ((r = read(d, buf, size)) > 0)
				;
		int e = errno;
		close(d);
		errno = e;
	}
	int64_t t1 = vp_ns(CLOCK_MONOTONIC);
	return r < 0 ? -1 : (double)(t1 - t0) / 1000.0;
}

static int cmd_lat(int argc, char **argv)
{
	long n = 2000;
	const char *files[MAXF];
	int nf = 0;
	bool ways[W_N] = { [W_PREAD] = true, [W_OPEN] = true };
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			n = strtol(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
			const char *list = argv[++i];
			for (int w = 0; w < W_N; w++) {
				const char *at = strstr(list, way_names[w]);
				size_t l = strlen(way_names[w]);
				/* a whole item of the comma-separated list */
				while (at && !((at == list || at[-1] == ',') && (at[l] == ',' || !at[l])))
					at = strstr(at + 1, way_names[w]);
				ways[w] = at != NULL;
			}
		} else if (nf < MAXF) {
			files[nf++] = argv[i];
		} else {
			die("too many files");
		}
	}
	bool any = false;
	for (int w = 0; w < W_N; w++)
		any |= ways[w];
	if (nf == 0 || n < 1 || !any)
		die("usage: readlat lat [-n N] [-w pread,open,stat,openclose] FILE...");
	double *v[MAXF];
	int fd[MAXF];
	static char buf[65536];
	for (int f = 0; f < nf; f++) {
		v[f] = calloc((size_t)n, sizeof(double));
		if (!v[f])
			die("out of memory");
		fd[f] = open(files[f], O_RDONLY | O_CLOEXEC);
		if (fd[f] < 0) {
			perror(files[f]);
			return 1;
		}
	}
	/* each way in turn; within a way the files take turns, so that every file sees the same
	 * conditions */
	for (int w = 0; w < W_N; w++) {
		if (!ways[w])
			continue;
		for (long i = -20; i < n; i++)
			for (int f = 0; f < nf; f++) {
				double us = one_way((enum way)w, files[f], fd[f], buf, sizeof buf);
				if (us < 0) {
					perror(files[f]);
					return 1;
				}
				if (i >= 0)
					v[f][i] = us;
			}
		for (int f = 0; f < nf; f++)
			summary(way_names[w], files[f], v[f], (size_t)n);
	}
	for (int f = 0; f < nf; f++)
		close(fd[f]);
	return 0;
}

static long long read_ll(int fd)
{
	char b[64];
	ssize_t r = pread(fd, b, sizeof b - 1, 0);
	if (r <= 0)
		return -1;
	b[r] = 0;
	return strtoll(b, NULL, 10);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* The floor's deadline thread: the timerfd is armed and the kill's descriptor open before
 * it starts; it only sleeps, wakes and writes. */
struct floor_kill {
	int tfd, kfd, rt;
	const char *val;
	int64_t woke, written;
	int err; /* errno of the write, or the priority's refusal */
};

static void *floor_main(void *arg)
{
	struct floor_kill *k = arg;
	if (k->rt) {
		struct sched_param sp = { .sched_priority = k->rt };
		k->err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	}
	uint64_t x;
	while (read(k->tfd, &x, sizeof x) < 0 && errno == EINTR)
		;
	k->woke = vp_ns(CLOCK_BOOTTIME);
	if (pwrite(k->kfd, k->val, strlen(k->val), 0) < 0 && !k->err)
		k->err = errno;
	k->written = vp_ns(CLOCK_BOOTTIME);
	return NULL;
}

/* Opens the floor's kill file of cg (mode "group" or "kernel") and its timerfd. */
static void floor_open(struct floor_kill *k, const char *cg, const char *mode, long long limit, int rt)
{
	static char lim[32];
	char path[4096];
	int group = !strcmp(mode, "group");
	if (!group && strcmp(mode, "kernel"))
		die("--floor: group or kernel");
	snprintf(path, sizeof path, "%s/%s", cg, group ? "cgroup.kill" : "memory.max");
	snprintf(lim, sizeof lim, "%lld", limit);
	*k = (struct floor_kill){ .rt = rt, .val = group ? "1" : lim };
	k->kfd = open(path, O_WRONLY | O_CLOEXEC);
	k->tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
	if (k->kfd < 0 || k->tfd < 0)
		die("--floor: cannot open the kill file or a timerfd");
}

static int cmd_trial(int argc, char **argv)
{
	if (argc < 5)
		die("usage: readlat trial CGDIR LIMIT_BYTES DELAY_MS [--timeout MS] [--poll-us N] -- CMD...");
	const char *cg = argv[0];
	long long limit = strtoll(argv[1], NULL, 10);
	long long delay_ms = strtoll(argv[2], NULL, 10);
	long timeout_ms = 30000, poll_us = 200;
	const char *floor_mode = NULL;
	int rt = 0;
	int i = 3;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout_ms = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--poll-us") && i + 1 < argc)
			poll_us = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--floor") && i + 1 < argc)
			floor_mode = argv[++i];
		else if (!strcmp(argv[i], "--rt") && i + 1 < argc)
			rt = (int)strtol(argv[++i], NULL, 10);
		else
			die("bad option");
	}
	if (i + 1 >= argc)
		die("no command after --");
	char **cmd = argv + i + 1;

	char path[4096];
	snprintf(path, sizeof path, "%s/memory.current", cg);
	int cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cfd < 0)
		die("cannot open memory.current");
	struct floor_kill fk;
	pthread_t fth;
	int fth_started = 0;
	if (floor_mode)
		floor_open(&fk, cg, floor_mode, limit, rt);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		die("pidfd_open");
	int64_t start = vp_ns(CLOCK_BOOTTIME), end = start + (int64_t)timeout_ms * 1000000LL;
	int64_t t_over = 0, deadline = 0, t_dead = 0;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	const char *err = NULL;
	/* the one failure that may be the observer's: starved longer than the hold lasted */
	static const char unseen[] = "hog died before a deadline was seen";
	/* usage over L */
	for (;;) {
		long long cur = read_ll(cfd);
		int64_t t = vp_ns(CLOCK_BOOTTIME);
		if (cur > limit) {
			t_over = t;
			break;
		}
		if (poll(&p, 1, 0) > 0) {
			err = "hog died before usage passed L";
			break;
		}
		if (t > end) {
			err = "usage never passed L";
			break;
		}
		sleep_us(poll_us);
	}
	/* the floor's deadline: its own timer thread */
	if (!err && floor_mode) {
		deadline = t_over + delay_ms * 1000000LL;
		struct itimerspec its = { .it_value = { deadline / 1000000000LL, deadline % 1000000000LL } };
		if (timerfd_settime(fk.tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
			err = "timerfd_settime";
		else if (pthread_create(&fth, NULL, floor_main, &fk))
			err = "pthread_create";
		else
			fth_started = 1;
	}
	/* the daemon's deadline */
	while (!err && !floor_mode) {
		if ((deadline = vp_deadline(cg)) > 0)
			break;
		if (poll(&p, 1, 0) > 0) {
			err = unseen;
			break;
		}
		if (vp_ns(CLOCK_BOOTTIME) > end) {
			err = "no deadline in trusted.oomdelayfs.state";
			break;
		}
		sleep_us(poll_us);
	}
	/* death */
	if (!err) {
		int left = (int)((end + (delay_ms + 10000) * 1000000LL - vp_ns(CLOCK_BOOTTIME)) / 1000000);
		int r = poll(&p, 1, left > 0 ? left : 0);
		t_dead = vp_ns(CLOCK_BOOTTIME);
		if (r <= 0)
			err = "hog still alive long after the deadline";
		else if (floor_mode && t_dead < deadline)
			err = "the hog died before the floor's deadline";
	}
	if (err)
		kill(pid, SIGKILL);
	int st = 0;
	waitpid(pid, &st, 0);
	if (fth_started && err) {
		/* a timer never due: make it due, so that the thread ends */
		struct itimerspec now = { .it_value = { 0, 1 } };
		timerfd_settime(fk.tfd, TFD_TIMER_ABSTIME, &now, NULL);
	}
	if (fth_started)
		pthread_join(fth, NULL);
	if (floor_mode && !err && fk.err) {
		fprintf(stderr, "readlat: trial: the floor's kill: %s\n", strerror(fk.err));
		return 1;
	}
	if (err) {
		fprintf(stderr, "readlat: trial: %s\n", err);
		return err == unseen ? 2 : 1;
	}
	if (!WIFSIGNALED(st)) {
		fprintf(stderr, "readlat: trial: hog exited with status %d, not killed\n", WEXITSTATUS(st));
		return 1;
	}
	if (floor_mode) {
		printf("late_ms=%.3f wake_ms=%.3f write_ms=%.3f over_ns=%" PRId64 " deadline_ns=%" PRId64
		       " dead_ns=%" PRId64 " sig=%d\n", (double)(t_dead - deadline) / 1e6,
		       (double)(fk.woke - deadline) / 1e6, (double)(fk.written - fk.woke) / 1e6, t_over,
		       deadline, t_dead, WTERMSIG(st));
		return 0;
	}
	printf("detect_ms=%.3f late_ms=%.3f over_ns=%" PRId64 " deadline_ns=%" PRId64 " dead_ns=%" PRId64 " sig=%d\n",
	       (double)(deadline - delay_ms * 1000000LL - t_over) / 1e6, (double)(t_dead - deadline) / 1e6,
	       t_over, deadline, t_dead, WTERMSIG(st));
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	const char *label = argc > 0 ? argv[0] : "stats";
	size_t n = 0, cap = 64;
	double *v = malloc(cap * sizeof *v), x;
	while (v && scanf("%lf", &x) == 1) {
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof *v);
		if (v)
			v[n++] = x;
	}
	if (!v)
		die("out of memory");
	if (n == 0) {
		printf("%s n=0\n", label);
		return 1;
	}
	qsort(v, n, sizeof *v, cmp_double);
	printf("%s n=%zu min=%.1f median=%.1f p95=%.1f p99=%.1f max=%.1f\n", label, n, v[0],
	       pct(v, n, 50), pct(v, n, 95), pct(v, n, 99), v[n - 1]);
	return 0;
}

static int cmd_until(int argc, char **argv)
{
	if (argc < 2)
		die("usage: readlat until FILE VALUE [--since MS] [--every-ms N] [--timeout MS]");
	const char *file = argv[0], *want = argv[1];
	double since = (double)vp_ns(CLOCK_MONOTONIC) / 1e6;
	long every = 5, timeout = 600000;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--since"))
			since = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--every-ms"))
			every = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--timeout"))
			timeout = strtol(argv[i + 1], NULL, 10);
		else
			die("until: unknown option");
	}
	if ((argc - 2) % 2 || every < 1 || timeout < 1)
		die("until: bad options");
	char buf[256], last[64] = "", outcomes[2048] = "";
	size_t olen = 0;
	long tries = 0;
	for (;;) {
		char now_out[64];
		ssize_t n = vp_slurp(file, buf, sizeof buf);
		double t = (double)vp_ns(CLOCK_MONOTONIC) / 1e6 - since;
		tries++;
		bool ok = false;
		if (n < 0) {
			const char *name = strerrorname_np((int)-n);
			snprintf(now_out, sizeof now_out, "%s", name ? name : "E?");
		} else {
			if (n > 0 && buf[n - 1] == '\n')
				buf[n - 1] = '\0';
			ok = strcmp(buf, want) == 0;
			snprintf(now_out, sizeof now_out, "%.24s", buf);
			for (char *c = now_out; *c; c++)
				if (*c == ' ' || *c == ',' || *c == '\n')
					*c = '_';
		}
		if (strcmp(now_out, last) != 0 && olen < sizeof outcomes - 96) {
			olen += (size_t)snprintf(outcomes + olen, sizeof outcomes - olen, "%s%.0f:%s",
						 olen ? "," : "", t, now_out);
			snprintf(last, sizeof last, "%s", now_out);
		}
		if (ok || t >= (double)timeout) {
			printf("ms=%.0f tries=%ld outcomes=%s\n", t, tries, outcomes);
			return ok ? 0 : 1;
		}
		vp_msleep(every);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: readlat lat FILE [N] | trial CGDIR L T [...] -- CMD... | stats [LABEL] | until FILE VALUE [...]");
	if (!strcmp(argv[1], "lat"))
		return cmd_lat(argc - 2, argv + 2);
	if (!strcmp(argv[1], "trial"))
		return cmd_trial(argc - 2, argv + 2);
	if (!strcmp(argv[1], "stats"))
		return cmd_stats(argc - 2, argv + 2);
	if (!strcmp(argv[1], "until"))
		return cmd_until(argc - 2, argv + 2);
	die("unknown subcommand");
}
