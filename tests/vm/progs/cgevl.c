/* cgevl - a cgroup-v1 event listener and its workload, written from the cgroup-v1
 * documentation (admin-guide/cgroup-v1/memory.rst "Memory thresholds" and "Memory
 * Pressure", cgroups.rst "Notification API"); used the way the kernel's
 * tools/cgroup/cgroup_event_listener is used ("memory.usage_in_bytes 16M",
 * "memory.pressure_level low"), without its code.
 *
 *   cgevl listen CONTROL_FILE ARGS [--timeout MS] [--cfd N]
 *       open CONTROL_FILE (or, with --cfd, use the inherited descriptor N: one the caller
 *       could not open itself, d-v1perm), make an eventfd, write "<efd> <cfd> ARGS" to the
 *       cgroup.event_control beside it; then print a line per read of the eventfd, until
 *       the cgroup is gone (cgroup.event_control no longer there) or MS passed:
 *         registered <ms>            | refused <errno name>   (exit 1)
 *         event <ms> count=<n>
 *         removed <ms> events=<n>    | timeout <ms> events=<n>
 *   cgevl psi CGDIR TRIGGER [--timeout MS]
 *       the kernel's own PSI trigger, as a v2 client uses it: write TRIGGER ("some 10000
 *       1000000") to CGDIR/memory.pressure and poll it for POLLPRI; the same lines as
 *       listen (one "event <ms> count=1" per wake-up), until CGDIR is gone or MS passed
 *   cgevl thrash CGDIR BASE_MB EXTRA_MB HOLD_MS
 *       a pressure onset at a known time (bench-psi): a child joins CGDIR, touches BASE_MB
 *       MiB, rests 1.5 s (a PSI window without stalls), prints "go <ms>", then touches
 *       EXTRA_MB more and keeps re-touching every page of both (one byte a page) until
 *       HOLD_MS after go, and exits; the parent prints "hog <ms> exit=<status>|killed=<sig>".
 *   cgevl hog CGDIR MB HOLD_MS [--release FILE]
 *       a child joins CGDIR (cgroup.procs), touches MB MiB of anonymous memory 1 MiB at a
 *       time, holds it HOLD_MS and exits; prints "hog <ms> exit=<status>|killed=<sig>" (after
 *       the exit, so after the kernel uncharged its memory). With --release, the child writes
 *       "<ms>\n" to FILE just before it exits: where usage begins to fall (d-v1memsw).
 * Times: CLOCK_MONOTONIC ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmprog.h"

static long ms(void)
{
	return (long)(vp_ns(CLOCK_MONOTONIC) / 1000000);
}

static int listen_on(const char *control, const char *args, long timeout, int given_cfd)
{
	char dir[4096], evc[4200];
	snprintf(dir, sizeof dir, "%s", control);
	snprintf(evc, sizeof evc, "%s/cgroup.event_control", dirname(dir));
	int cfd = given_cfd >= 0 ? given_cfd : open(control, O_RDONLY | O_CLOEXEC);
	int efd = eventfd(0, EFD_CLOEXEC);
	int ev = open(evc, O_WRONLY | O_CLOEXEC);
	if (cfd < 0 || efd < 0 || ev < 0) {
		printf("refused %s (open)\n", strerrorname_np(errno));
		return 1;
	}
	char line[256];
	int n = snprintf(line, sizeof line, "%d %d %s", efd, cfd, args);
	if (write(ev, line, (size_t)n) != n) {
		printf("refused %s\n", strerrorname_np(errno));
		return 1;
	}
	close(ev);
	printf("registered %ld\n", ms());
	long t0 = ms(), events = 0;
	for (;;) {
		struct pollfd p = { .fd = efd, .events = POLLIN };
		if (poll(&p, 1, 100) == 1) {
			uint64_t v;
			if (read(efd, &v, sizeof v) == sizeof v) {
				events += (long)v;
				printf("event %ld count=%llu\n", ms(), (unsigned long long)v);
			}
		}
		/* the kernel's listener asks the same: is the cgroup still there? */
		if (access(evc, W_OK) != 0) {
			/* the rmdir signal may come with the removal: read it first */
			uint64_t v;
			int fl = fcntl(efd, F_GETFL);
			fcntl(efd, F_SETFL, fl | O_NONBLOCK);
			vp_msleep(200);
			if (read(efd, &v, sizeof v) == sizeof v) {
				events += (long)v;
				printf("event %ld count=%llu\n", ms(), (unsigned long long)v);
			}
			printf("removed %ld events=%ld\n", ms(), events);
			return 0;
		}
		if (timeout > 0 && ms() - t0 > timeout) {
			printf("timeout %ld events=%ld\n", ms(), events);
			return 3;
		}
	}
}

static int psi(const char *cg, const char *trigger, long timeout)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/memory.pressure", cg);
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || write(fd, trigger, strlen(trigger) + 1) < 0) {
		printf("refused %s\n", strerrorname_np(errno));
		return 1;
	}
	printf("registered %ld\n", ms());
	long t0 = ms(), events = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		int n = poll(&p, 1, 100);
		if (access(cg, F_OK) != 0) {
			printf("removed %ld events=%ld\n", ms(), events);
			return 0;
		}
		if (n == 1 && (p.revents & POLLERR)) {
			printf("removed %ld events=%ld (POLLERR)\n", ms(), events);
			return 0;
		}
		if (n == 1 && (p.revents & POLLPRI)) {
			events++;
			printf("event %ld count=1\n", ms());
		}
		if (timeout > 0 && ms() - t0 > timeout) {
			printf("timeout %ld events=%ld\n", ms(), events);
			return 3;
		}
	}
}

static char *touch_mb(long mb)
{
	char *p = mmap(NULL, (size_t)(mb * MiB), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(11);
	for (long i = 0; i < mb; i++)
		memset(p + i * MiB, 0x5a, MiB);
	return p;
}

static int report(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("hog %ld killed=%d\n", ms(), WTERMSIG(st));
	else
		printf("hog %ld exit=%d\n", ms(), WEXITSTATUS(st));
	return 0;
}

static void join(const char *cg)
{
	char path[4200], me[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", cg);
	snprintf(me, sizeof me, "%d", (int)getpid());
	if (vp_put(path, me) != 0)
		_exit(10);
}

static int thrash(const char *cg, long base, long extra, long hold)
{
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		join(cg);
		char *a = touch_mb(base);
		vp_msleep(1500);
		long go = ms();
		printf("go %ld\n", go);
		char *b = touch_mb(extra);
		long page = sysconf(_SC_PAGESIZE);
		while (ms() - go < hold) {
			for (long off = 0; off < base * MiB; off += page)
				a[off]++;
			for (long off = 0; off < extra * MiB; off += page)
				b[off]++;
		}
		_exit(0);
	}
	return report(pid);
}

static int hog(const char *cg, long mb, long hold, const char *release)
{
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		join(cg);
		for (long i = 0; i < mb; i++) {
			char *p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(11);
			memset(p, 0x5a, MiB);
		}
		vp_msleep(hold);
		if (release) { /* an existing file (vp_put does not create) */
			char line[32];
			snprintf(line, sizeof line, "%ld\n", ms());
			if (vp_put(release, line) != 0)
				_exit(12);
		}
		_exit(0);
	}
	return report(pid);
}

/* "--timeout MS" and "--cfd N" after the fixed arguments */
static long opt(int argc, char **argv, int from, const char *name, long dflt)
{
	for (int i = from; i + 1 < argc; i += 2)
		if (strcmp(argv[i], name) == 0)
			return atol(argv[i + 1]);
	return dflt;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && strcmp(argv[1], "listen") == 0)
		return listen_on(argv[2], argv[3], opt(argc, argv, 4, "--timeout", 0),
				 (int)opt(argc, argv, 4, "--cfd", -1));
	if (argc >= 4 && strcmp(argv[1], "psi") == 0)
		return psi(argv[2], argv[3], opt(argc, argv, 4, "--timeout", 0));
	if ((argc == 5 || (argc == 7 && strcmp(argv[5], "--release") == 0)) && strcmp(argv[1], "hog") == 0)
		return hog(argv[2], atol(argv[3]), atol(argv[4]), argc == 7 ? argv[6] : NULL);
	if (argc == 6 && strcmp(argv[1], "thrash") == 0)
		return thrash(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]));
	fprintf(stderr, "usage: cgevl listen CONTROL_FILE ARGS [--timeout MS] [--cfd N] | cgevl psi CGDIR TRIGGER\n"
			"       [--timeout MS] | cgevl hog CGDIR MB HOLD_MS [--release FILE] | cgevl thrash CGDIR BASE_MB EXTRA_MB HOLD_MS\n");
	return 2;
}
