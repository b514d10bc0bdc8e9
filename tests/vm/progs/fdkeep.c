/* fdkeep - descriptors opened through the shadow tree before restarts of its server, used
 * after each (f-fd-restart).
 *
 * usage: fdkeep CGDIR DIR ROUNDS
 *   Opens, in CGDIR (a memory cgroup of the shadow tree): memory.current and memory.stat
 *   (real files passed through), memory.max (virtualised), memory.oom_control (synthetic;
 *   twice: one for a poll() waiter), memory.oom_delay_millisecs O_RDWR (synthetic),
 *   memory.low O_RDWR (real, written), and CGDIR itself (readdir, openat). A thread blocks
 *   in poll(POLLPRI) on the second memory.oom_control from the start: it returns only on
 *   a change of the file (an OOM onset).
 *   With FDKEEP_V1=1 the v1 layout's names instead (memory.usage_in_bytes, memory.stat,
 *   memory.limit_in_bytes, memory.oom_control, memory.oom_delay_millisecs,
 *   memory.soft_limit_in_bytes written).
 *   Then creates DIR/ready.0, and for r = 1..ROUNDS waits for DIR/go.r, uses every
 *   descriptor once and creates DIR/ready.r. At the end closes them all.
 * Output: "round R ok" or "round R FAIL <what>: <errno name>" per round;
 *   "pollpri <ms> <revents>" when the waiter returns (CLOCK_MONOTONIC ms); "close ok|FAIL".
 *
 * usage: fdkeep pin DIR READYFILE
 *   (s-fdpin) holds an O_PATH descriptor of every name under DIR, directories first, each
 *   looked up through DIR's file system; prints "pinned N of M refused=<errno|none>", creates
 *   READYFILE and sleeps until killed. Its own RLIMIT_NOFILE is raised to its hard limit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vmprog.h"

enum { CUR, STAT, MAX, CTL, CTL2, DELAY, LOW, DIRFD, N };
static const char *const names_v2[N] = { "memory.current", "memory.stat", "memory.max",
					 "memory.oom_control", "memory.oom_control",
					 "memory.oom_delay_millisecs", "memory.low", "." };
/* FDKEEP_V1=1: the daemon's v1 layout (--v1-layout), whose files are all its own */
static const char *const names_v1[N] = { "memory.usage_in_bytes", "memory.stat",
					 "memory.limit_in_bytes", "memory.oom_control",
					 "memory.oom_control", "memory.oom_delay_millisecs",
					 "memory.soft_limit_in_bytes", "." };
static const char *const *names = names_v2;
static int fds[N];

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void *waiter(void *arg)
{
	(void)arg;
	struct pollfd p = { .fd = fds[CTL2], .events = POLLPRI };
	int r = poll(&p, 1, 600000);
	printf("pollpri %.1f revents=%#x r=%d\n", now_ms(), (unsigned)p.revents, r);
	fflush(stdout);
	return NULL;
}

static char failed[256];

static void bad(const char *what)
{
	if (!failed[0])
		snprintf(failed, sizeof failed, "%s: %s", what, strerror(errno));
}

static void bad_content(const char *what, const char *got)
{
	if (!failed[0])
		snprintf(failed, sizeof failed, "%s: content '%.60s'", what, got);
}

static ssize_t pread_str(int fd, char *buf, size_t n, off_t off)
{
	ssize_t r = pread(fd, buf, n - 1, off);
	buf[r < 0 ? 0 : r] = 0;
	return r;
}

static void round_once(int r)
{
	char buf[8192];
	failed[0] = 0;
	/* read (sequential, from the file position) and pread */
	if (lseek(fds[CUR], 0, SEEK_SET) < 0)
		bad("lseek memory.current");
	ssize_t n = read(fds[CUR], buf, sizeof buf - 1);
	if (n <= 0)
		bad("read memory.current");
	if (pread_str(fds[STAT], buf, sizeof buf, 0) <= 0)
		bad("pread memory.stat");
	else if (!strstr(buf, "anon "))
		bad_content("memory.stat", buf);
	if (pread_str(fds[STAT], buf, sizeof buf, 5) <= 0)
		bad("pread memory.stat at 5");
	if (pread_str(fds[MAX], buf, sizeof buf, 0) <= 0)
		bad("pread memory.max");
	if (pread_str(fds[CTL], buf, sizeof buf, 0) <= 0)
		bad("pread memory.oom_control");
	else if (!strstr(buf, "under_oom"))
		bad_content("memory.oom_control", buf);
	/* write, then read back what was written (a synthetic file) */
	char v[32];
	snprintf(v, sizeof v, "%d", 1000 + r);
	if (pwrite(fds[DELAY], v, strlen(v), 0) != (ssize_t)strlen(v))
		bad("write memory.oom_delay_millisecs");
	if (pread_str(fds[DELAY], buf, sizeof buf, 0) <= 0)
		bad("pread memory.oom_delay_millisecs");
	else if (atoi(buf) != 1000 + r)
		bad_content("memory.oom_delay_millisecs after the write", buf);
	if (pwrite(fds[LOW], "0", 1, 0) != 1)
		bad(names[LOW]);
	/* poll answers (not POLLERR/POLLNVAL) */
	struct pollfd p[2] = { { .fd = fds[CTL], .events = POLLIN }, { .fd = fds[CUR], .events = POLLIN } };
	if (poll(p, 2, 2000) != 2 || ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))) {
		if (!failed[0])
			snprintf(failed, sizeof failed, "poll: revents %#x %#x", (unsigned)p[0].revents,
				 (unsigned)p[1].revents);
	}
	/* readdir, and openat relative to the directory */
	int dfd = dup(fds[DIRFD]);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		bad("fdopendir");
	} else {
		rewinddir(d);
		int seen = 0;
		struct dirent *de;
		errno = 0;
		while ((de = readdir(d)))
			seen += strcmp(de->d_name, names[CUR]) == 0 ||
				strcmp(de->d_name, "memory.oom_control") == 0;
		if (errno)
			bad("readdir");
		else if (seen != 2)
			bad_content("readdir", "memory.current or memory.oom_control missing");
		closedir(d);
	}
	int f = openat(fds[DIRFD], names[CUR], O_RDONLY);
	if (f < 0) {
		bad("openat");
	} else {
		if (read(f, buf, sizeof buf) <= 0)
			bad("read of the openat");
		close(f);
	}
	if (failed[0])
		printf("round %d FAIL %s\n", r, failed);
	else
		printf("round %d ok\n", r);
	fflush(stdout);
}

static void touch(const char *dir, const char *what, int r)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s.%d", dir, what, r);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
}

static void wait_file(const char *dir, const char *what, int r)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s.%d", dir, what, r);
	struct stat st;
	while (stat(p, &st) < 0)
		usleep(20000);
}

static int pinned, tried, refused;

static void pin_dir(int dfd)
{
	int rd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rd >= 0 ? fdopendir(rd) : NULL;
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		tried++;
		int fd = openat(dfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (!refused)
				refused = errno;
			continue;
		}
		pinned++;
		if (de->d_type == DT_DIR)
			pin_dir(fd);
	}
	closedir(d);
}

static int pin_main(const char *dir, const char *ready)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "fdkeep pin: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	pin_dir(fd);
	printf("pinned %d of %d refused=%s\n", pinned, tried, refused ? strerror(refused) : "none");
	fflush(stdout);
	int r = open(ready, O_CREAT | O_WRONLY, 0644);
	if (r >= 0)
		close(r);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "pin"))
		return pin_main(argv[2], argv[3]);
	if (argc != 4) {
		fprintf(stderr, "usage: fdkeep CGDIR DIR ROUNDS\n");
		return 2;
	}
	int rounds = atoi(argv[3]);
	if (getenv("FDKEEP_V1"))
		names = names_v1;
	for (int i = 0; i < N; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s/%s", argv[1], names[i]);
		int fl = i == DELAY || i == LOW ? O_RDWR : i == DIRFD ? O_RDONLY | O_DIRECTORY : O_RDONLY;
		fds[i] = open(p, fl | O_CLOEXEC);
		if (fds[i] < 0) {
			fprintf(stderr, "fdkeep: open %s: %s\n", p, strerror(errno));
			return 1;
		}
	}
	pthread_t t;
	pthread_create(&t, NULL, waiter, NULL);
	usleep(300000); /* the waiter is in poll() */
	round_once(0);
	touch(argv[2], "ready", 0);
	for (int r = 1; r <= rounds; r++) {
		wait_file(argv[2], "go", r);
		round_once(r);
		touch(argv[2], "ready", r);
	}
	wait_file(argv[2], "go", rounds + 1);
	int bad_close = 0;
	for (int i = 0; i < N; i++)
		if (i != CTL2 && close(fds[i]) != 0)
			bad_close++;
	printf("close %s\n", bad_close ? "FAIL" : "ok");
	fflush(stdout);
	return 0;
}
