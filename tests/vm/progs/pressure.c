/* pressure - helpers of the f-* (fault) scenarios (tests/vm/scenarios/f-*.sh).
 *
 *   pressure killwatch CGDIR DEADLINE_NS [--timeout MS] [--emptied]
 *       wait (inotify on CGDIR/memory.events, and a 20 ms re-read as a fallback) until the
 *       real oom_kill counter of CGDIR moves past its value at start (with --emptied: until
 *       CGDIR/cgroup.events says populated 0, for a kill by cgroup.kill); print
 *       "<lateness ms> <oom_kill before> <oom_kill after> <CLOCK_BOOTTIME ms>", where
 *       lateness = the time the change was seen minus DEADLINE_NS (CLOCK_BOOTTIME ns; the
 *       daemon's persisted deadline). Memory locked, so global pressure cannot slow it.
 *       Exit 1 on timeout (default 60000 ms).
 *   pressure fill --leave MB [--churn-mb N] [--report FILE] [--log FILE]
 *       global memory pressure: oom_score_adj 1000 (the global OOM killer takes this one
 *       first), then allocate and touch anonymous memory until MemAvailable is at most MB
 *       MiB; then loop forever re-touching it and mapping, touching and unmapping N MiB
 *       (default 16) so that every allocation in the VM goes through direct reclaim.
 *       Writes "<MiB held> <MemAvailable MiB>\n" to the report FILE once filled, and
 *       "<CLOCK_BOOTTIME ms> <MemAvailable MiB>\n" to the log FILE after every churn pass
 *       (the pressure at a given moment, whenever the test's shell gets to look).
 *   pressure rtprobe CPU FILE [PRIO]
 *       what the VM itself gives a real-time task: pinned to CPU (-1: not pinned), memory
 *       locked, SCHED_FIFO PRIO (default 99), it sleeps 2 ms at a time (absolute
 *       CLOCK_BOOTTIME) and keeps, per 100 ms window, the worst wake-up lateness; on
 *       SIGTERM it writes "<window end, boottime ms> <worst lateness ms>\n" per window to
 *       FILE and exits. A vCPU that the host did not run (TCG, more VMs than host cores)
 *       shows here as it does for the daemon; unpinned at the daemon's priority, it also
 *       shows what the VM's scheduler gives a thread placed as the daemon's are.
 *   pressure now                     CLOCK_BOOTTIME in ms
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *m)
{
	fprintf(stderr, "pressure: %s: %s\n", m, strerror(errno));
	exit(1);
}

static long long key_of(const char *path, const char *key)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	size_t kl = strlen(key);
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return atoll(l + kl + 1);
	return -1;
}

static int killwatch(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cg = argv[0];
	int64_t deadline = atoll(argv[1]);
	long timeout = 60000;
	int emptied = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atol(argv[++i]);
		else if (!strcmp(argv[i], "--emptied"))
			emptied = 1;
	}
	mlockall(MCL_CURRENT | MCL_FUTURE);
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", cg, emptied ? "cgroup.events" : "memory.events");
	const char *key = emptied ? "populated" : "oom_kill";
	int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0 || inotify_add_watch(ifd, path, IN_MODIFY) < 0)
		die("inotify");
	long long k0 = key_of(path, key);
	if (k0 < 0)
		die(path);
	int64_t t0 = boot_ns();
	for (;;) {
		struct pollfd p = { .fd = ifd, .events = POLLIN };
		poll(&p, 1, 20);
		char b[4096];
		while (read(ifd, b, sizeof b) > 0)
			;
		long long k = key_of(path, key);
		int64_t t = boot_ns();
		if (emptied ? k == 0 : k > k0) {
			printf("%.1f %lld %lld %.1f\n", (double)(t - deadline) / 1e6, k0, k, (double)t / 1e6);
			return 0;
		}
		if (t - t0 > (int64_t)timeout * 1000000) {
			fprintf(stderr, "pressure: killwatch: %s of %s stayed %lld for %ld ms\n", key, cg, k0,
				timeout);
			return 1;
		}
	}
}

static long avail_mib(void)
{
	char buf[4096];
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strstr(buf, "MemAvailable:");
	return p ? atol(p + 13) / 1024 : -1;
}

static int fill(int argc, char **argv)
{
	long leave = 64, churn = 16;
	const char *report = NULL, *logpath = NULL;
	for (int i = 0; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "--leave"))
			leave = atol(argv[++i]);
		else if (!strcmp(argv[i], "--churn-mb"))
			churn = atol(argv[++i]);
		else if (!strcmp(argv[i], "--report"))
			report = argv[++i];
		else if (!strcmp(argv[i], "--log"))
			logpath = argv[++i];
	}
	FILE *lg = logpath ? fopen(logpath, "w") : NULL;
	if (logpath && !lg)
		perror(logpath);
	int fd = open("/proc/self/oom_score_adj", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "1000", 4) < 0)
			perror("oom_score_adj");
		close(fd);
	}
	long pg = sysconf(_SC_PAGESIZE);
	enum { CHUNK = 4 << 20, MAXCH = 1024 };
	static char *chunks[MAXCH];
	int n = 0;
	while (n < MAXCH) {
		long a = avail_mib();
		if (a >= 0 && a <= leave + 4)
			break;
		char *c = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			break;
		for (long q = 0; q < CHUNK; q += pg)
			c[q] = 1;
		chunks[n++] = c;
	}
	if (report) {
		FILE *f = fopen(report, "w");
		if (f) {
			fprintf(f, "%d %ld\n", n * 4, avail_mib());
			fclose(f);
		}
	}
	size_t cl = (size_t)churn << 20;
	for (unsigned gen = 2;; gen++) {
		if (lg) {
			fprintf(lg, "%.1f %ld\n", (double)boot_ns() / 1e6, avail_mib());
			fflush(lg);
		}
		for (int i = 0; i < n; i++)
			for (long q = 0; q < CHUNK; q += pg)
				chunks[i][q] = (char)gen;
		if (cl) {
			char *c = mmap(NULL, cl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (c != MAP_FAILED) {
				for (size_t q = 0; q < cl; q += (size_t)pg)
					c[q] = 1;
				munmap(c, cl);
			}
		}
	}
	return 0;
}

static volatile sig_atomic_t probe_stop;

static void on_probe_term(int sig)
{
	(void)sig;
	probe_stop = 1;
}

static int rtprobe(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	enum { PERIOD_NS = 2000000, WINDOW_NS = 100000000, MAXW = 36000 }; /* 1 h of windows */
	static struct { int64_t end; int32_t late_us; } w[MAXW];
	cpu_set_t set;
	CPU_ZERO(&set);
	int cpu = atoi(argv[0]);
	if (cpu >= 0) {
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) < 0)
			die("sched_setaffinity");
	}
	struct sched_param sp = { .sched_priority = argc > 2 ? atoi(argv[2]) : 99 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		die("sched_setscheduler");
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		die("mlockall");
	memset(w, 0, sizeof w); /* touched now, not while measuring */
	struct sigaction sa = { .sa_handler = on_probe_term };
	sigaction(SIGTERM, &sa, NULL);
	int nw = 0;
	int64_t next = boot_ns(), wend = next + WINDOW_NS, worst = 0;
	while (!probe_stop && nw < MAXW) {
		next += PERIOD_NS;
		struct timespec ts = { next / 1000000000, next % 1000000000 };
		if (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
			continue;
		int64_t now = boot_ns();
		if (now - next > worst)
			worst = now - next;
		if (now >= wend) {
			w[nw].end = now;
			w[nw++].late_us = (int32_t)(worst / 1000);
			worst = 0;
			wend = now + WINDOW_NS;
		}
		if (now - next > PERIOD_NS)
			next = now; /* after a stall, no burst of catch-up wake-ups */
	}
	FILE *f = fopen(argv[1], "w");
	if (!f)
		die(argv[1]);
	for (int i = 0; i < nw; i++)
		fprintf(f, "%.1f %.1f\n", (double)w[i].end / 1e6, w[i].late_us / 1e3);
	return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "now")) {
		printf("%.3f\n", (double)boot_ns() / 1e6);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "killwatch"))
		return killwatch(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "fill"))
		return fill(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "rtprobe"))
		return rtprobe(argc - 2, argv + 2);
	fputs("usage: pressure now | killwatch CGDIR DEADLINE_NS [--timeout MS] [--emptied]\n"
	      "       | fill --leave MB [--churn-mb N] [--report FILE] [--log FILE]\n"
	      "       | rtprobe CPU FILE\n", stderr);
	return 2;
}
