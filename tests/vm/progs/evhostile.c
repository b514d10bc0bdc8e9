/* evhostile - what a hostile caller does with cgroup.event_control (issue 10).
 *
 *   evhostile wedge CGDIR [--ready FILE]
 *       registers a blocking eventfd whose counter is at 2^64-2 (a write of 1 into it
 *       sleeps until someone reads) on CGDIR/memory.oom_control, then never reads
 *   evhostile closed CGDIR [--ready FILE]
 *       registers an eventfd, then closes both its eventfd and its control descriptor
 *   evhostile fusefd CGDIR FILE N [--ready FILE]
 *       FILE is on a FUSE mount this caller serves (hellofs with HELLOFS_HANG=1: it never
 *       answers FLUSH or GETATTR). N times it offers a descriptor of FILE as the eventfd
 *       and N times as the control file; then registers a real eventfd (the legitimate
 *       use beside it). Never closes FILE (its close would wait for the server).
 *   evhostile hold FILE N [--ready FILE]
 *       opens FILE up to N times (raising its own RLIMIT_NOFILE to the hard limit first)
 *       and keeps them open: the descriptors a caller can make the daemon hold
 *
 * Each prints one line and, once done, creates FILE of --ready, then sleeps until killed:
 *   registered <ms>                                    (wedge, closed)
 *   fusefd einval=<k>/<2N> other=<errno names> slowest=<ms> legit=<0|errno name>
 *   held <k> of <N> stopped=<errno name|none> limit=<own RLIMIT_NOFILE>
 * Exit: 1 error, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "evhostile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Writes "<efd> <cfd>" to CGDIR/cgroup.event_control: 0 or errno. */
static int reg(const char *cg, int efd, int cfd)
{
	char path[4096], line[64];
	snprintf(path, sizeof path, "%s/cgroup.event_control", cg);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	int n = snprintf(line, sizeof line, "%d %d", efd, cfd);
	int r = write(fd, line, (size_t)n) == n ? 0 : errno;
	close(fd);
	return r;
}

static int open_control(const char *cg)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/memory.oom_control", cg);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	return fd;
}

static void ready_and_wait(const char *ready)
{
	fflush(stdout);
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die(ready);
		close(fd);
	}
	for (;;)
		pause();
}

int main(int argc, char *argv[])
{
	if (argc < 3)
		goto usage;
	const char *mode = argv[1], *cg = argv[2], *ready = NULL;
	int nargs = strcmp(mode, "fusefd") == 0 ? 5 : strcmp(mode, "hold") == 0 ? 4 : 3;
	if (argc < nargs)
		goto usage;
	for (int i = nargs; i < argc; i++) {
		if (strcmp(argv[i], "--ready") == 0 && i + 1 < argc)
			ready = argv[++i];
		else
			goto usage;
	}

	if (strcmp(mode, "wedge") == 0 || strcmp(mode, "closed") == 0) {
		bool wedge = mode[0] == 'w';
		int efd = eventfd(0, EFD_CLOEXEC); /* blocking: the daemon's write would sleep */
		if (efd < 0)
			die("eventfd");
		uint64_t full = UINT64_C(0xfffffffffffffffe);
		if (wedge && write(efd, &full, sizeof full) != sizeof full)
			die("fill the eventfd");
		int cfd = open_control(cg);
		int r = reg(cg, efd, cfd);
		if (r) {
			errno = r;
			die("register");
		}
		if (!wedge) {
			close(efd);
			close(cfd);
		}
		printf("registered %.3f\n", now_ms());
		ready_and_wait(ready);
	}
	if (strcmp(mode, "fusefd") == 0) {
		int ffd = open(argv[3], O_RDONLY | O_CLOEXEC);
		if (ffd < 0)
			die(argv[3]);
		int n = atoi(argv[4]);
		int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		int cfd = open_control(cg);
		int einval = 0;
		double slowest = 0;
		char other[512] = "";
		for (int i = 0; i < 2 * n; i++) {
			double t0 = now_ms();
			int r = i % 2 ? reg(cg, efd, ffd) : reg(cg, ffd, cfd);
			double took = now_ms() - t0;
			if (took > slowest)
				slowest = took;
			if (r == EINVAL)
				einval++;
			else if (strlen(other) < sizeof other - 32)
				snprintf(other + strlen(other), sizeof other - strlen(other), "%s%s",
					 *other ? "," : "", r ? strerrorname_np(r) : "accepted");
		}
		int legit = reg(cg, efd, cfd);
		printf("fusefd einval=%d/%d other=%s slowest=%.1f legit=%s\n", einval, 2 * n,
		       *other ? other : "none", slowest, legit ? strerrorname_np(legit) : "0");
		ready_and_wait(ready);
	}
	if (strcmp(mode, "hold") == 0) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		long n = atol(argv[3]), k = 0;
		int stopped = 0;
		for (; k < n; k++)
			if (open(cg, O_RDONLY | O_CLOEXEC) < 0) {
				stopped = errno;
				break;
			}
		printf("held %ld of %ld stopped=%s limit=%llu\n", k, n,
		       stopped ? strerrorname_np(stopped) : "none", (unsigned long long)rl.rlim_cur);
		ready_and_wait(ready);
	}
usage:
	fputs("usage: evhostile wedge|closed CGDIR [--ready FILE]\n"
	      "       evhostile fusefd CGDIR FILE N [--ready FILE]\n"
	      "       evhostile hold FILE N [--ready FILE]\n", stderr);
	return 2;
}
