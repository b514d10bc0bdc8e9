/* v1listener - a cgroup-v1 style OOM listener, written from the cgroup-v1
 * documentation (admin-guide/cgroup-v1/memory.rst "OOM Control", cgroups.rst
 * "Notification API"), with nothing specific to any particular implementation:
 *
 *   1. open CG/memory.oom_control
 *   2. efd = eventfd(0, 0)
 *   3. write "<efd> <cfd>" to CG/cgroup.event_control
 *   4. block in read(efd); each read returns the number of OOM notifications
 *
 * usage: v1listener CGDIR [--raise BYTES] [--kill-pids] [--count N] [--timeout MS]
 *                         [--listeners K] [--ready FILE] [--thread]
 *   --raise BYTES   on each signal, raise the limit: memory.limit_in_bytes (v1 layout)
 *                   or memory.max (v2 layout), whichever the directory has
 *   --kill-pids     on each signal, SIGKILL every process of CGDIR/cgroup.procs
 *   --count N       exit 0 after N signals (default: run until --timeout)
 *   --timeout MS    give up MS after registration: exit 3 (0 if no --count was given)
 *   --listeners K   register K eventfds (each its own registration), then wait on the first;
 *                   prints how many registrations succeeded and the errno of the first refusal
 *   --ready FILE    create FILE once registered (for scripts that must wait for that)
 *   --thread        open, register and wait from a second thread (as a threaded handler would)
 *   --control FILE  open FILE as the control fd instead of CGDIR/memory.oom_control (to see
 *                   how a wrong control file is refused); --control-wronly: open it O_WRONLY
 *   --line-end nl|nul  end the written line with a newline or a NUL byte (default: nothing)
 *   --fork          after registering, fork: the parent exits at once, the child (which
 *                   inherited the eventfd, as a daemonizing handler's would) waits and reports
 *   --compare FILE  (measurement aid, repeatable) a thread per FILE blocks in poll()
 *                   for POLLPRI on FILE, re-reading it after each wake-up, and prints
 *                   "pollpri <ms> FILE <content on one line>" when the content changed: the
 *                   time of the same event as seen through another file, in this process;
 *                   wake-ups without a change: "pollpri-spurious <ms> FILE <n>" at n = 1, 10, ...
 *
 * Output (times: CLOCK_MONOTONIC ms with microsecond decimals):
 *   registered <ms> listeners=<k>[ refused=<errno name>]
 *   signal <n> <ms> count=<eventfd value> <memory.oom_control on one line | gone: errno>
 *   raised <ms> <bytes> took=<ms>        (--raise)
 *   killed <ms> <pids>                   (--kill-pids)
 *   timeout <ms> signals=<n>
 * Exit: 0 done, 1 error (registration refused: the errno on stderr), 2 usage, 3 timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void usage(void)
{
	fputs("usage: v1listener CGDIR [--raise BYTES] [--kill-pids] [--count N] [--timeout MS]\n"
	      "                        [--listeners K] [--ready FILE] [--thread] [--compare FILE]...\n"
	      "                        [--control FILE] [--control-wronly] [--line-end nl|nul] [--fork]\n",
	      stderr);
	exit(2);
}

static const char *errname(int e)
{
	switch (e) {
	case EBADF: return "EBADF";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	case ENODEV: return "ENODEV";
	case ESRCH: return "ESRCH";
	case EAGAIN: return "EAGAIN";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	default: return strerror(e);
	}
}

/* memory.oom_control on one line, or "gone: ERRNO" when it cannot be read any more */
static void read_control(int cfd, char *out, size_t sz)
{
	char buf[512];
	ssize_t n = pread(cfd, buf, sizeof buf - 1, 0);
	if (n < 0) {
		snprintf(out, sz, "gone: %s", errname(errno));
		return;
	}
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = (i == n - 1) ? 0 : ',';
	snprintf(out, sz, "%s", buf);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, val, strlen(val));
	int err = n < 0 ? errno : 0;
	close(fd);
	return err;
}

static void raise_limit(const char *cg, const char *bytes)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/memory.limit_in_bytes", cg);
	if (access(path, F_OK) != 0)
		snprintf(path, sizeof path, "%s/memory.max", cg);
	double t0 = now_ms();
	int err = write_file(path, bytes);
	double t1 = now_ms();
	if (err)
		printf("raise-failed %.3f %s %s\n", t1, path, errname(err));
	else
		printf("raised %.3f %s took=%.3f\n", t1, bytes, t1 - t0);
	fflush(stdout);
}

static void kill_pids(const char *cg)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/cgroup.procs", cg);
	FILE *f = fopen(path, "re");
	if (!f) {
		printf("kill-failed %.3f %s\n", now_ms(), errname(errno));
		fflush(stdout);
		return;
	}
	char line[64], list[1024] = "";
	while (fgets(line, sizeof line, f)) {
		int pid = atoi(line);
		if (pid > 0 && pid != getpid() && kill(pid, SIGKILL) == 0) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%d", l ? "," : "", pid);
		}
	}
	fclose(f);
	printf("killed %.3f %s\n", now_ms(), list[0] ? list : "-");
	fflush(stdout);
}

static void *compare_main(void *p)
{
	const char *file = p;
	int fd = open(file, O_RDONLY);
	if (fd < 0) {
		printf("compare-failed %s %s\n", file, errname(errno));
		fflush(stdout);
		return NULL;
	}
	char last[600], cur[600];
	long spurious = 0, report = 1;
	read_control(fd, last, sizeof last); /* the read arms kernfs poll */
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLPRI };
		if (poll(&pf, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		double t = now_ms();
		read_control(fd, cur, sizeof cur);
		if (strcmp(cur, last) != 0) {
			printf("pollpri %.3f %s %s\n", t, file, cur);
			fflush(stdout);
			strcpy(last, cur);
		} else {
			/* a wake-up without a change: count it (1, 10, 100, ...) and do not spin */
			if (++spurious == report) {
				printf("pollpri-spurious %.3f %s %ld revents=0x%x\n", t, file, spurious,
				       (unsigned)pf.revents);
				fflush(stdout);
				report *= 10;
			}
			usleep(1000);
		}
		if (strncmp(cur, "gone:", 5) == 0)
			break;
	}
	close(fd);
	return NULL;
}

static int run(int argc, char **argv);
struct targs {
	int argc;
	char **argv;
	int rc;
};
static void *thread_main(void *p)
{
	struct targs *t = p;
	t->rc = run(t->argc, t->argv);
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--thread")) {
			struct targs t = { argc, argv, 1 };
			pthread_t th;
			if (pthread_create(&th, NULL, thread_main, &t) != 0) {
				fputs("v1listener: pthread_create failed\n", stderr);
				return 1;
			}
			pthread_join(th, NULL);
			return t.rc;
		}
	}
	return run(argc, argv);
}

static int run(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *cg = argv[1];
	const char *raise = NULL, *ready = NULL, *control = NULL, *lend = "";
	size_t lendlen = 0;
	int cflags = O_RDONLY;
	int killp = 0, dofork = 0;
	long count = 0, timeout = -1, listeners = 1;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--raise") && i + 1 < argc)
			raise = argv[++i];
		else if (!strcmp(argv[i], "--kill-pids"))
			killp = 1;
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atol(argv[++i]);
		else if (!strcmp(argv[i], "--listeners") && i + 1 < argc)
			listeners = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--thread"))
			continue;
		else if (!strcmp(argv[i], "--control") && i + 1 < argc)
			control = argv[++i];
		else if (!strcmp(argv[i], "--fork"))
			dofork = 1;
		else if (!strcmp(argv[i], "--control-wronly"))
			cflags = O_WRONLY;
		else if (!strcmp(argv[i], "--line-end") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "nl"))
				lend = "\n", lendlen = 1;
			else if (!strcmp(argv[i], "nul"))
				lend = "", lendlen = 1; /* the string's terminating NUL */
			else
				usage();
		}
		else if (!strcmp(argv[i], "--compare") && i + 1 < argc) {
			pthread_t th;
			if (pthread_create(&th, NULL, compare_main, argv[++i]) == 0)
				pthread_detach(th);
		}
		else
			usage();
	}
	if (listeners < 1)
		usage();

	char path[4096];
	if (control)
		snprintf(path, sizeof path, "%s", control);
	else
		snprintf(path, sizeof path, "%s/memory.oom_control", cg);
	int cfd = open(path, cflags);
	if (cfd < 0) {
		fprintf(stderr, "v1listener: open %s: %s\n", path, errname(errno));
		return 1;
	}
	snprintf(path, sizeof path, "%s/cgroup.event_control", cg);
	int ecfd = open(path, O_WRONLY);
	if (ecfd < 0) {
		fprintf(stderr, "v1listener: open %s: %s\n", path, errname(errno));
		return 1;
	}

	int efd = -1;
	long ok = 0;
	int refused = 0;
	for (long k = 0; k < listeners; k++) {
		int fd = eventfd(0, 0);
		if (fd < 0) {
			refused = errno;
			break;
		}
		char line[64];
		int len = snprintf(line, sizeof line, "%d %d%s", fd, cfd, lend);
		if (lendlen && !*lend)
			len++; /* include the NUL */
		else if (lendlen)
			len = (int)strlen(line);
		if (write(ecfd, line, (size_t)len) < 0) {
			refused = errno;
			close(fd);
			break;
		}
		if (efd < 0)
			efd = fd;
		ok++;
	}
	close(ecfd);
	if (ok == 0) {
		fprintf(stderr, "v1listener: write cgroup.event_control: %s\n", errname(refused));
		return 1;
	}
	double treg = now_ms();
	if (refused)
		printf("registered %.3f listeners=%ld refused=%s\n", treg, ok, errname(refused));
	else
		printf("registered %.3f listeners=%ld\n", treg, ok);
	fflush(stdout);
	if (dofork) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("v1listener: fork");
			return 1;
		}
		if (pid > 0) {
			printf("forked %.3f child=%d\n", now_ms(), (int)pid);
			fflush(stdout);
			_exit(0);
		}
	}
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			close(fd);
	}

	long n = 0;
	for (;;) {
		int wait = -1;
		if (timeout >= 0) {
			double left = treg + (double)timeout - now_ms();
			wait = left > 0 ? (int)left + 1 : 0;
		}
		struct pollfd pf = { .fd = efd, .events = POLLIN };
		int r = poll(&pf, 1, wait);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("v1listener: poll");
			return 1;
		}
		if (r == 0) {
			printf("timeout %.3f signals=%ld\n", now_ms(), n);
			fflush(stdout);
			return count > 0 ? 3 : 0;
		}
		uint64_t v;
		if (read(efd, &v, sizeof v) != sizeof v) {
			perror("v1listener: read eventfd");
			return 1;
		}
		double t = now_ms();
		char st[600];
		read_control(cfd, st, sizeof st);
		n++;
		printf("signal %ld %.3f count=%llu %s\n", n, t, (unsigned long long)v, st);
		fflush(stdout);
		if (raise)
			raise_limit(cg, raise);
		if (killp)
			kill_pids(cg);
		if (count > 0 && n >= count)
			return 0;
	}
}
