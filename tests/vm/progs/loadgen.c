/* loadgen - load test of the shadow tree (tests/vm/scenarios/f-load.sh; issue 5, deliverable 7).
 *
 *   loadgen --shadow SBASE --real RBASE [--clients 64] [--duration 60] [--hogs 4]
 *           [--daemon-pid PID] [--hog-mb 48] [--limit-mb 32]
 *
 * SBASE is a cgroup seen through the shadow tree, RBASE the same cgroup in the real tree; memory
 * must be enabled in SBASE's cgroup.subtree_control. loadgen creates (through the shadow tree)
 * one cgroup per client, cNN, and one per hog, hN, and runs for DURATION seconds:
 *   - CLIENTS client processes, each in a loop of random operations:
 *       read: every readable file of a cgroup (its own, the base, another client's, a hog's)
 *             through the shadow; an error counts as unexpected unless the real file fails alike;
 *       knob: write memory.oom_delay_millisecs, memory.oom_control, memory.high or memory.max of
 *             its own cgroup (nobody else writes there) and read it back: a mismatch is a lost write;
 *       churn: shadow mkdir of a child of its own cgroup, check that it inherited T and D (rule 7),
 *             read a file in it, rmdir;
 *       listen: a short-lived child process registers a v1 listener (eventfd + the shadow
 *             memory.oom_control fd written to cgroup.event_control) on its own or a hog cgroup,
 *             waits 20-200 ms for a notification and exits (which ends the registration);
 *   - HOGS hog managers, each cycling its own cgroup (L = LIMIT_MB, T = 100-300 ms) with a v1
 *     listener registered on it for its whole life: a hog of HOG_MB MiB is started, the hold is
 *     seen (the listener's eventfd, which must count every onset, and the deadline in the
 *     persisted state) and then either left to be killed (it must not die before the deadline),
 *     resolved by raising memory.max through the shadow (it must finish, no kill), or resolved by
 *     the hog's own exit (no kernel kill). A hog that dies with neither a notification nor a
 *     deadline was killed without a hold. A hold seen too late to act on (the VM is slow) is left
 *     to be killed (seen_late; dl_unseen when its deadline was gone before it could be read), and
 *     an action completed after the deadline (a raise written, a killed hog reaped) does not count
 *     against the daemon (acted_late).
 * With --daemon-pid, the daemon's descriptors are counted before the cgroups are created and after
 * they are all removed (each time after dropping the dentry cache, so that the kernel forgets
 * every unused inode): /dev/fuse descriptors apart, as libfuse's clone_fd gives each FUSE worker
 * thread its own and keeps idle workers (up to --max-threads), so that extra /dev/fuse
 * descriptors are a leak only beyond the extra threads; every other descriptor must be gone.
 * The daemon's VmRSS is sampled every second (warm-up: the first half of the run, as FUSE workers
 * are added on demand and each brings its locked stack and malloc arena; RSS and threads are also
 * printed at each quarter).
 * Prints one line of key=value figures; "errors" are unexpected errors (each also logged on
 * stderr, the first 40), "lost" lost writes. Exit 0 when the run completed (the caller judges the
 * figures), 1 when it could not be set up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024LL * 1024)

struct stats {
	atomic_long files_read, dirs_read, expected_errs;
	atomic_long writes, readbacks, lost;
	atomic_long mkdirs, rmdirs, inherit_checks;
	atomic_long listeners, notified;
	atomic_long errors;
	atomic_long holds, killed, resolved_raise, resolved_exit, early, seen_late, acted_late, dl_unseen;
	atomic_long logged;
	atomic_int stop;
};

static struct stats *S;
static const char *sbase, *rbase;
static int nclients = 64, nhogs = 4, duration = 60, hog_mb = 48, limit_mb = 32;
static int64_t end_ns;

static int64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static int64_t mono(void) { return ns_of(CLOCK_MONOTONIC); }
static int over(void) { return S->stop || mono() >= end_ns; }

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void unexpected(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unexpected(const char *who, const char *fmt, ...)
{
	atomic_fetch_add(&S->errors, 1);
	if (atomic_fetch_add(&S->logged, 1) >= 40)
		return;
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	fprintf(stderr, "loadgen: %s: %s\n", who, b);
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* read a whole file into buf (NUL-terminated); bytes read or -errno */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t tot = 0;
	for (;;) {
		ssize_t r = read(fd, buf + tot, size - 1 - tot);
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0 || tot + (size_t)r >= size - 1) {
			tot += (size_t)r;
			break;
		}
		tot += (size_t)r;
	}
	close(fd);
	buf[tot] = 0;
	return (ssize_t)tot;
}

/* write a string in one write(); 0 or -errno */
static int put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = write(fd, val, strlen(val));
	int e = r < 0 ? errno : 0;
	if (close(fd) < 0 && !e)
		e = errno;
	return -e;
}

static long long keyval(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l;) {
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return strtoll(l + kl + 1, NULL, 10);
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -1;
}

/* ---- client operations ---- */
static char who[64];

static void op_read_dir(const char *sdir, const char *rdir)
{
	DIR *d = opendir(sdir);
	if (!d) {
		unexpected(who, "opendir %s: %s", sdir, strerror(errno));
		return;
	}
	atomic_fetch_add(&S->dirs_read, 1);
	static char buf[256 * 1024], rbuf[256 * 1024];
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT && e->d_name[0] == 'x')
				continue; /* another client's churn cgroup, gone since the listing */
			unexpected(who, "stat %s/%s: %s", sdir, e->d_name, strerror(errno));
			continue;
		}
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0444))
			continue;
		char sp[8192], rp[8192];
		snprintf(sp, sizeof sp, "%s/%s", sdir, e->d_name);
		ssize_t r = slurp(sp, buf, sizeof buf);
		if (r >= 0) {
			atomic_fetch_add(&S->files_read, 1);
			continue;
		}
		/* the same error on the real file is the kernel's, not the daemon's */
		snprintf(rp, sizeof rp, "%s/%s", rdir, e->d_name);
		ssize_t rr = slurp(rp, rbuf, sizeof rbuf);
		if (rr == r)
			atomic_fetch_add(&S->expected_errs, 1);
		else
			unexpected(who, "read %s: %s (the real file: %s)", sp, strerror((int)-r),
				   rr >= 0 ? "ok" : strerror((int)-rr));
	}
	closedir(d);
}

struct own {
	char s[4096], r[4096]; /* own cgroup, shadow and real */
	unsigned long long T;
	int D;
	unsigned seq;
};

static void write_check(const char *path, const char *val, const char *expect)
{
	char b[256];
	int e = put(path, val);
	atomic_fetch_add(&S->writes, 1);
	if (e) {
		unexpected(who, "write '%s' to %s: %s", val, path, strerror(-e));
		return;
	}
	ssize_t r = slurp(path, b, sizeof b);
	if (r < 0) {
		unexpected(who, "read back %s: %s", path, strerror((int)-r));
		return;
	}
	atomic_fetch_add(&S->readbacks, 1);
	if (strncmp(b, expect, strlen(expect))) {
		atomic_fetch_add(&S->lost, 1);
		unexpected(who, "lost write: wrote '%s' to %s, read back '%.60s'", val, path, b);
	}
}

static void op_knob(struct own *o, unsigned *rs)
{
	char p[4200], v[64], x[80];
	unsigned r = (unsigned)rand_r(rs);
	switch (r % 4) {
	case 0:
		o->T = (unsigned long long)rand_r(rs) % 100000;
		snprintf(p, sizeof p, "%s/memory.oom_delay_millisecs", o->s);
		snprintf(v, sizeof v, "%llu\n", o->T);
		write_check(p, v, v);
		break;
	case 1:
		o->D = rand_r(rs) % 2;
		snprintf(p, sizeof p, "%s/memory.oom_control", o->s);
		snprintf(v, sizeof v, "%d\n", o->D);
		snprintf(x, sizeof x, "oom_kill_disable %d\n", o->D);
		write_check(p, v, x);
		break;
	default:
		snprintf(p, sizeof p, "%s/%s", o->s, r % 4 == 2 ? "memory.high" : "memory.max");
		if (rand_r(rs) % 10 == 0)
			snprintf(v, sizeof v, "max\n");
		else
			snprintf(v, sizeof v, "%lld\n", 64 * MiB + (long long)(rand_r(rs) % 65536) * 4096);
		write_check(p, v, v);
		break;
	}
}

static void op_churn(struct own *o)
{
	char sp[4200], f[4300], b[256];
	snprintf(sp, sizeof sp, "%s/x%u", o->s, o->seq++);
	if (mkdir(sp, 0755) < 0) {
		unexpected(who, "mkdir %s: %s", sp, strerror(errno));
		return;
	}
	atomic_fetch_add(&S->mkdirs, 1);
	snprintf(f, sizeof f, "%s/memory.oom_delay_millisecs", sp);
	ssize_t r = slurp(f, b, sizeof b);
	if (r < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	else if (strtoull(b, NULL, 10) != o->T)
		unexpected(who, "%s reads %.30s, not the parent's T %llu (rule 7)", f, b, o->T);
	snprintf(f, sizeof f, "%s/memory.oom_control", sp);
	r = slurp(f, b, sizeof b);
	if (r < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	else if (keyval(b, "oom_kill_disable") != o->D)
		unexpected(who, "%s: oom_kill_disable %lld, not the parent's D %d (rule 7)", f,
			   keyval(b, "oom_kill_disable"), o->D);
	else
		atomic_fetch_add(&S->inherit_checks, 1);
	snprintf(f, sizeof f, "%s/memory.stat", sp);
	if ((r = slurp(f, b, sizeof b)) < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	if (rmdir(sp) < 0)
		unexpected(who, "rmdir %s: %s", sp, strerror(errno));
	else
		atomic_fetch_add(&S->rmdirs, 1);
}

static void op_listen(const char *cg, unsigned *rs)
{
	int wait_ms = 20 + rand_r(rs) % 180;
	pid_t pid = fork();
	if (pid < 0) {
		unexpected(who, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		char p[4200], l[64];
		int efd = eventfd(0, EFD_CLOEXEC);
		snprintf(p, sizeof p, "%s/memory.oom_control", cg);
		int cfd = open(p, O_RDONLY | O_CLOEXEC);
		if (efd < 0 || cfd < 0) {
			fprintf(stderr, "loadgen: listener: eventfd/open %s: %s\n", p, strerror(errno));
			_exit(2);
		}
		snprintf(l, sizeof l, "%d %d", efd, cfd);
		snprintf(p, sizeof p, "%s/cgroup.event_control", cg);
		int e = put(p, l);
		if (e) {
			fprintf(stderr, "loadgen: listener: write '%s' to %s: %s\n", l, p, strerror(-e));
			_exit(2);
		}
		struct pollfd pf = { .fd = efd, .events = POLLIN };
		int n = poll(&pf, 1, wait_ms);
		uint64_t c = 0;
		if (n > 0 && read(efd, &c, sizeof c) != sizeof c)
			c = 0;
		_exit(c ? 1 : 0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) <= 1) {
		atomic_fetch_add(&S->listeners, 1);
		if (WEXITSTATUS(st) == 1)
			atomic_fetch_add(&S->notified, 1);
	} else {
		unexpected(who, "listener on %s failed (status 0x%x)", cg, st);
	}
}

static void client(int id)
{
	snprintf(who, sizeof who, "client %d", id);
	unsigned rs = (unsigned)(id * 7919 + getpid());
	struct own o = { .T = 0, .D = 0 };
	snprintf(o.s, sizeof o.s, "%s/c%02d", sbase, id);
	snprintf(o.r, sizeof o.r, "%s/c%02d", rbase, id);
	while (!over()) {
		int r = rand_r(&rs) % 100;
		char sd[4096], rd[4096];
		if (r < 30) {
			int t = rand_r(&rs) % 4;
			if (t == 0) {
				snprintf(sd, sizeof sd, "%s", o.s);
				snprintf(rd, sizeof rd, "%s", o.r);
			} else if (t == 1) {
				snprintf(sd, sizeof sd, "%s", sbase);
				snprintf(rd, sizeof rd, "%s", rbase);
			} else if (t == 2) {
				int c = rand_r(&rs) % nclients;
				snprintf(sd, sizeof sd, "%s/c%02d", sbase, c);
				snprintf(rd, sizeof rd, "%s/c%02d", rbase, c);
			} else {
				int h = nhogs ? rand_r(&rs) % nhogs : 0;
				snprintf(sd, sizeof sd, "%s/h%d", sbase, h);
				snprintf(rd, sizeof rd, "%s/h%d", rbase, h);
			}
			op_read_dir(sd, rd);
		} else if (r < 65) {
			op_knob(&o, &rs);
		} else if (r < 85) {
			op_churn(&o);
		} else {
			if (nhogs && rand_r(&rs) % 2) {
				snprintf(sd, sizeof sd, "%s/h%d", sbase, rand_r(&rs) % nhogs);
				op_listen(sd, &rs);
			} else {
				op_listen(o.s, &rs);
			}
		}
	}
}

/* ---- hogs ---- */
static pid_t start_hog(const char *rcg, int donefd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	char p[4200], v[32];
	snprintf(p, sizeof p, "%s/cgroup.procs", rcg);
	snprintf(v, sizeof v, "%d", (int)getpid());
	if (put(p, v))
		_exit(3);
	size_t len = (size_t)hog_mb * MiB;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(4);
	for (size_t o = 0; o < len; o += 4096)
		m[o] = 1;
	if (write(donefd, "d", 1) != 1)
		_exit(5);
	for (;;)
		pause();
}

static int under_oom(const char *scg)
{
	char p[4200], b[256];
	snprintf(p, sizeof p, "%s/memory.oom_control", scg);
	if (slurp(p, b, sizeof b) < 0)
		return -1;
	return (int)keyval(b, "under_oom");
}

static long long real_oom_kill(const char *rcg)
{
	char p[4200], b[1024];
	snprintf(p, sizeof p, "%s/memory.events", rcg);
	if (slurp(p, b, sizeof b) < 0)
		return -1;
	return keyval(b, "oom_kill");
}

static int64_t deadline_of(const char *rcg)
{
	char b[512];
	ssize_t r = getxattr(rcg, "trusted.oomdelayfs.state", b, sizeof b - 1);
	if (r <= 0)
		return 0;
	b[r] = 0;
	char *d = strstr(b, "deadline=");
	return d ? strtoll(d + 9, NULL, 10) : 0;
}

/* wait up to ms for fd to be readable */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r > 0;
}

static int wait_uoom(const char *scg, int val, int ms)
{
	int64_t until = mono() + (int64_t)ms * 1000000;
	while (mono() < until) {
		if (under_oom(scg) == val)
			return 1;
		msleep(5);
	}
	return under_oom(scg) == val;
}

static void reap(pid_t pid, int *st)
{
	while (waitpid(pid, st, 0) < 0 && errno == EINTR)
		;
}

/* read an eventfd's count (non-blocking); 0 if nothing */
static uint64_t drain(int efd)
{
	uint64_t c = 0;
	if (read(efd, &c, sizeof c) != sizeof c)
		c = 0;
	return c;
}

static void hog_manager(int id)
{
	snprintf(who, sizeof who, "hog %d", id);
	unsigned rs = (unsigned)(id * 104729 + getpid());
	char scg[4096], rcg[4096], p[4200], v[64];
	snprintf(scg, sizeof scg, "%s/h%d", sbase, id);
	snprintf(rcg, sizeof rcg, "%s/h%d", rbase, id);
	long long L = (long long)limit_mb * MiB;
	/* a v1 listener on the hog's cgroup for the manager's life: its eventfd counts the onsets */
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	snprintf(p, sizeof p, "%s/memory.oom_control", scg);
	int cfd = open(p, O_RDONLY | O_CLOEXEC);
	if (efd < 0 || cfd < 0)
		die("%s: eventfd/open %s: %s", who, p, strerror(errno));
	snprintf(v, sizeof v, "%d %d", efd, cfd);
	snprintf(p, sizeof p, "%s/cgroup.event_control", scg);
	int e = put(p, v);
	if (e)
		die("%s: write '%s' to %s: %s", who, v, p, strerror(-e));
	int mode = -1, prev_mode;
	while (!over()) {
		prev_mode = mode;
		mode = rand_r(&rs) % 4; /* 0, 1: kill; 2: raise; 3: exit */
		int T = 100 + rand_r(&rs) % 200;
		snprintf(p, sizeof p, "%s/memory.oom_delay_millisecs", scg);
		snprintf(v, sizeof v, "%d\n", T);
		write_check(p, v, v);
		int64_t t_T = ns_of(CLOCK_BOOTTIME);
		char kmax[64], khigh[64]; /* the real knobs just after the T write, for the diagnosis */
		snprintf(p, sizeof p, "%s/memory.max", rcg);
		if (slurp(p, kmax, sizeof kmax) < 0)
			kmax[0] = 0;
		snprintf(p, sizeof p, "%s/memory.high", rcg);
		if (slurp(p, khigh, sizeof khigh) < 0)
			khigh[0] = 0;
		for (char *c = kmax; *c; c++) if (*c == '\n') *c = 0;
		for (char *c = khigh; *c; c++) if (*c == '\n') *c = 0;
		long long k0 = real_oom_kill(rcg);
		drain(efd);
		int pfd[2];
		if (pipe2(pfd, O_CLOEXEC) < 0)
			die("pipe: %s", strerror(errno));
		pid_t pid = start_hog(rcg, pfd[1]);
		close(pfd[1]);
		if (pid < 0)
			die("fork: %s", strerror(errno));
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		int st = 0;
		/* the hold: the listener's eventfd (rule 11), or a new deadline in the persisted state
		 * (read on the real directory). A loaded TCG VM can deschedule this process for longer
		 * than a short hold: the eventfd keeps the count when the deadline is gone already */
		int held = 0, notified = 0;
		int64_t dl = 0;
		for (int64_t until = mono() + 20000000000LL; mono() < until;) {
			struct pollfd pf[2] = { { .fd = efd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
			poll(pf, 2, 2);
			if (drain(efd))
				notified = 1;
			if ((dl = deadline_of(rcg)) > t_T) {
				held = 1;
				break;
			}
			dl = 0;
			if (notified) {
				/* the state is persisted just after the onset */
				for (int i = 0; i < 100 && !readable(pidfd, 0); i++) {
					if ((dl = deadline_of(rcg)) > t_T)
						break;
					dl = 0;
					msleep(1);
				}
				held = 1;
				break;
			}
			if (readable(pidfd, 0) && drain(efd)) {
				notified = held = 1;
				break;
			}
			if (readable(pidfd, 0)) {
				int64_t t = ns_of(CLOCK_BOOTTIME);
				reap(pid, &st);
				char b1[64], b2[64], b3[64], xs[512];
				snprintf(p, sizeof p, "%s/memory.max", rcg);
				if (slurp(p, b1, sizeof b1) < 0) b1[0] = 0;
				snprintf(p, sizeof p, "%s/memory.high", rcg);
				if (slurp(p, b2, sizeof b2) < 0) b2[0] = 0;
				snprintf(p, sizeof p, "%s/memory.oom_delay_millisecs", scg);
				if (slurp(p, b3, sizeof b3) < 0) b3[0] = 0;
				ssize_t xn = getxattr(rcg, "trusted.oomdelayfs.state", xs, sizeof xs - 1);
				xs[xn > 0 ? xn : 0] = 0;
				for (char *c = b1; *c; c++) if (*c == '\n') *c = 0;
				for (char *c = b2; *c; c++) if (*c == '\n') *c = 0;
				for (char *c = b3; *c; c++) if (*c == '\n') *c = 0;
				unexpected(who, "hog ended (status 0x%x) without a hold: no listener notification, no deadline (T %d written %.1f ms before, "
					   "previous cycle mode %d; real memory.max %s, memory.high %s just after it; "
					   "real oom_kill %lld -> %lld; now real memory.max %s, "
					   "memory.high %s, shadow T %s; persisted state '%s' (boottime now %" PRId64 ")",
					   st, T, (double)(t - t_T) / 1e6, prev_mode, kmax, khigh, k0, real_oom_kill(rcg), b1, b2, b3, xs, t);
				goto next;
			}
			msleep(2);
		}
		if (!held) {
			char b[1024];
			snprintf(p, sizeof p, "%s/memory.current", rcg);
			long long cur = slurp(p, b, sizeof b) > 0 ? atoll(b) : -1;
			snprintf(p, sizeof p, "%s/memory.events", rcg);
			if (slurp(p, b, sizeof b) < 0)
				b[0] = 0;
			for (char *c = b; *c; c++)
				if (*c == '\n')
					*c = ' ';
			char b1[64], b2[64], b3[64], b4[64], xs[512];
			snprintf(p, sizeof p, "%s/memory.max", rcg);
			if (slurp(p, b1, sizeof b1) < 0) b1[0] = 0;
			snprintf(p, sizeof p, "%s/memory.high", rcg);
			if (slurp(p, b2, sizeof b2) < 0) b2[0] = 0;
			snprintf(p, sizeof p, "%s/memory.max", scg);
			if (slurp(p, b3, sizeof b3) < 0) b3[0] = 0;
			snprintf(p, sizeof p, "%s/memory.oom_delay_millisecs", scg);
			if (slurp(p, b4, sizeof b4) < 0) b4[0] = 0;
			ssize_t xn = getxattr(rcg, "trusted.oomdelayfs.state", xs, sizeof xs - 1);
			xs[xn > 0 ? xn : 0] = 0;
			for (char *c = b1; *c; c++) if (*c == '\n') *c = 0;
			for (char *c = b2; *c; c++) if (*c == '\n') *c = 0;
			for (char *c = b3; *c; c++) if (*c == '\n') *c = 0;
			for (char *c = b4; *c; c++) if (*c == '\n') *c = 0;
			unexpected(who, "no hold within 20 s (T %d, previous cycle mode %d; real memory.max %s, memory.high %s "
				   "just after the T write, now %s, %s; shadow memory.max %s, T %s, under_oom %d; "
				   "persisted state '%s'; real memory.current %lld, memory.events: %s)",
				   T, prev_mode, kmax, khigh, b1, b2, b3, b4, under_oom(scg), xs, cur, b);
			kill(pid, SIGKILL);
			reap(pid, &st);
			goto next;
		}
		atomic_fetch_add(&S->holds, 1);
		if (!notified) {
			struct pollfd pf = { .fd = efd, .events = POLLIN };
			if (poll(&pf, 1, 5000) > 0 && drain(efd))
				notified = 1;
			else
				unexpected(who, "the listener on %s was not notified within 5 s of the onset (rule 11)", scg);
		}
		if (!dl) {
			atomic_fetch_add(&S->dl_unseen, 1);
			mode = 0;
		}
		int64_t now = ns_of(CLOCK_BOOTTIME);
		if (mode >= 2) {
			/* act well within the delay; a hold seen late (a loaded VM) is left to be killed */
			int64_t room = dl ? (dl - now) / 1000000 : 0;
			if (room < 40) {
				atomic_fetch_add(&S->seen_late, 1);
				mode = 0;
			} else {
				msleep(rand_r(&rs) % (room / 2));
			}
		}
		if (mode <= 1) {
			if (!readable(pidfd, T + 20000)) {
				unexpected(who, "hog alive 20 s after its %d ms delay", T);
				kill(pid, SIGKILL);
				reap(pid, &st);
				goto next;
			}
			int64_t t = ns_of(CLOCK_BOOTTIME);
			reap(pid, &st);
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
				unexpected(who, "hog ended with status 0x%x, not SIGKILL", st);
			} else if (dl && t < dl) {
				atomic_fetch_add(&S->early, 1);
				unexpected(who, "hog killed %.1f ms before the deadline", (double)(dl - t) / 1e6);
			} else {
				atomic_fetch_add(&S->killed, 1);
			}
		} else {
			int64_t t_act; /* when the resolving action was complete */
			int killed_by_kernel = 0;
			if (mode == 2) {
				snprintf(p, sizeof p, "%s/memory.max", scg);
				snprintf(v, sizeof v, "%lld\n", 4 * L);
				write_check(p, v, v);
				t_act = ns_of(CLOCK_BOOTTIME);
				if (!readable(pfd[0], 20000)) {
					unexpected(who, "hog did not finish within 20 s of memory.max raised");
				} else if (readable(pidfd, 0)) {
					killed_by_kernel = 1;
				} else if (!wait_uoom(scg, 0, 5000)) {
					unexpected(who, "under_oom still 1 5 s after memory.max was raised");
				} else {
					atomic_fetch_add(&S->resolved_raise, 1);
				}
				kill(pid, SIGKILL);
				reap(pid, &st);
			} else {
				/* Complete when the hog is gone, not when the signal is sent: a
				 * SIGKILLed task still holds its memory until it runs its exit, and on
				 * a loaded VM it waited 180 ms for the CPU, past the deadline, while the
				 * daemon's kill came on time (f-load on 6.1, CI, 2026-12-04). */
				kill(pid, SIGKILL);
				reap(pid, &st);
				t_act = ns_of(CLOCK_BOOTTIME);
				if (!wait_uoom(scg, 0, 5000))
					unexpected(who, "under_oom still 1 5 s after the hog exited");
				else
					atomic_fetch_add(&S->resolved_exit, 1);
			}
			long long k1 = real_oom_kill(rcg);
			if (k1 != k0 || killed_by_kernel) {
				if (dl && t_act < dl)
					unexpected(who, "%s %.1f ms before the deadline, yet the kernel OOM-killed "
						   "(oom_kill %lld -> %lld; rule 5)", mode == 2 ? "memory.max raised" :
						   "the hog was killed by its owner", (double)(dl - t_act) / 1e6, k0, k1);
				else
					atomic_fetch_add(&S->acted_late, 1);
			}
		}
	next:
		if (pidfd >= 0)
			close(pidfd);
		close(pfd[0]);
		/* back to L for the next cycle, once the cgroup is empty */
		snprintf(p, sizeof p, "%s/cgroup.events", rcg);
		for (int i = 0; i < 500; i++) {
			char b[256];
			if (slurp(p, b, sizeof b) >= 0 && keyval(b, "populated") == 0)
				break;
			msleep(10);
		}
		if (!wait_uoom(scg, 0, 5000))
			unexpected(who, "under_oom still 1 5 s after the hog was gone");
		snprintf(p, sizeof p, "%s/memory.max", scg);
		snprintf(v, sizeof v, "%lld\n", L);
		write_check(p, v, v);
		msleep(50 + rand_r(&rs) % 200);
	}
}

/* ---- the daemon ---- */
/* the daemon's descriptors: all of them, and how many are /dev/fuse (libfuse's clone_fd gives
 * every FUSE worker thread its own; idle workers are kept, up to --max-threads) */
static long count_fds(int pid, long *fuse)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/fd", pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	long n = 0;
	*fuse = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		char l[300], t[64];
		snprintf(l, sizeof l, "/proc/%d/fd/%s", pid, e->d_name);
		ssize_t k = readlink(l, t, sizeof t - 1);
		if (k > 0) {
			t[k] = 0;
			if (!strcmp(t, "/dev/fuse"))
				(*fuse)++;
		}
	}
	closedir(d);
	return n;
}

static long count_threads(int pid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task", pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	long n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* the targets of the daemon's descriptors, one per line, into buf */
static void fd_targets(int pid, char *buf, size_t size)
{
	char p[64];
	size_t used = 0;
	buf[0] = 0;
	snprintf(p, sizeof p, "/proc/%d/fd", pid);
	DIR *d = opendir(p);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char l[300], t[4096];
		snprintf(l, sizeof l, "/proc/%d/fd/%s", pid, e->d_name);
		ssize_t n = readlink(l, t, sizeof t - 1);
		if (n < 0)
			continue;
		t[n] = 0;
		int w = snprintf(buf + used, size - used, "%s %s\n", e->d_name, t);
		if (w < 0 || (size_t)w >= size - used)
			break;
		used += (size_t)w;
	}
	closedir(d);
}

static long rss_kb(int pid)
{
	char p[64], b[4096];
	snprintf(p, sizeof p, "/proc/%d/status", pid);
	if (slurp(p, b, sizeof b) < 0)
		return -1;
	char *r = strstr(b, "VmRSS:");
	return r ? strtol(r + 6, NULL, 10) : -1;
}

static void drop_dentries(void)
{
	sync();
	if (put("/proc/sys/vm/drop_caches", "2"))
		fprintf(stderr, "loadgen: cannot drop caches\n");
	msleep(300);
}

static void mk(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

static char fdlist_before[65536], fdlist_after[65536];

int main(int argc, char **argv)
{
	int dpid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *n = i + 1 < argc ? argv[i + 1] : NULL;
		if (!n)
			die("usage: loadgen --shadow SBASE --real RBASE [--clients N] [--duration S] [--hogs N] [--daemon-pid PID] [--hog-mb MB] [--limit-mb MB]");
		if (!strcmp(a, "--shadow"))
			sbase = n;
		else if (!strcmp(a, "--real"))
			rbase = n;
		else if (!strcmp(a, "--clients"))
			nclients = atoi(n);
		else if (!strcmp(a, "--duration"))
			duration = atoi(n);
		else if (!strcmp(a, "--hogs"))
			nhogs = atoi(n);
		else if (!strcmp(a, "--daemon-pid"))
			dpid = atoi(n);
		else if (!strcmp(a, "--hog-mb"))
			hog_mb = atoi(n);
		else if (!strcmp(a, "--limit-mb"))
			limit_mb = atoi(n);
		else
			die("unknown option %s", a);
		i++;
	}
	if (!sbase || !rbase || nclients < 1 || nclients > 100 || nhogs < 0 || nhogs > 16 || duration < 1)
		die("bad arguments");
	S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(S, 0, sizeof *S);
	snprintf(who, sizeof who, "main");

	long fuse_before = 0, fuse_after = 0, fuse_tmp, thr_before = -1, thr_after = -1, thr_warm = -1;
	long rss_after = -1;
	long rss_q[4] = { -1, -1, -1, -1 }, thr_q[4] = { -1, -1, -1, -1 };
	long fd_before = -1, fd_after = -1, fd_max = 0, rss_start = -1, rss_warm = -1, rss_end = -1, rss_max = 0;
	if (dpid) {
		drop_dentries();
		fd_before = count_fds(dpid, &fuse_before);
		thr_before = count_threads(dpid);
		fd_targets(dpid, fdlist_before, sizeof fdlist_before);
		rss_start = rss_kb(dpid);
	}
	char p[4200], v[64];
	for (int c = 0; c < nclients; c++) {
		snprintf(p, sizeof p, "%s/c%02d", sbase, c);
		mk(p);
		snprintf(p, sizeof p, "%s/c%02d/cgroup.subtree_control", sbase, c);
		if (put(p, "+memory"))
			die("cannot enable +memory in %s", p);
	}
	for (int h = 0; h < nhogs; h++) {
		snprintf(p, sizeof p, "%s/h%d", sbase, h);
		mk(p);
		snprintf(p, sizeof p, "%s/h%d/memory.max", sbase, h);
		snprintf(v, sizeof v, "%lld", (long long)limit_mb * MiB);
		if (put(p, v))
			die("cannot write %s", p);
	}
	int64_t t0 = mono();
	end_ns = t0 + (int64_t)duration * 1000000000LL;
	int warm_s = duration / 2; /* FUSE workers are added on demand: a slow VM takes a while */
	int nkids = nclients + nhogs;
	pid_t *kids = calloc((size_t)nkids, sizeof *kids);
	for (int k = 0; k < nkids; k++) {
		pid_t pid = fork();
		if (pid < 0) {
			S->stop = 1;
			die("fork: %s", strerror(errno));
		}
		if (pid == 0) {
			if (k < nclients)
				client(k);
			else
				hog_manager(k - nclients);
			_exit(0);
		}
		kids[k] = pid;
	}
	/* sample the daemon while the children run */
	while (mono() < end_ns) {
		msleep(1000);
		if (!dpid)
			continue;
		long r = rss_kb(dpid), f = count_fds(dpid, &fuse_tmp);
		if (r < 0) {
			fprintf(stderr, "loadgen: the daemon (pid %d) is gone\n", dpid);
			unexpected(who, "the daemon died");
			S->stop = 1;
			break;
		}
		if (f > fd_max)
			fd_max = f;
		int64_t el = mono() - t0;
		if (el >= (int64_t)warm_s * 1000000000LL) {
			if (rss_warm < 0) {
				rss_warm = r;
				thr_warm = count_threads(dpid);
			}
			if (r > rss_max)
				rss_max = r;
		}
		/* the RSS and worker threads at each quarter, to tell a pool still growing from a leak */
		int q = (int)(el * 4 / ((int64_t)duration * 1000000000LL));
		if (q >= 1 && q <= 3 && rss_q[q] < 0) {
			rss_q[q] = r;
			thr_q[q] = count_threads(dpid);
		}
	}
	if (dpid)
		rss_end = rss_kb(dpid);
	int bad_exits = 0;
	for (int k = 0; k < nkids; k++) {
		int st;
		reap(kids[k], &st);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad_exits++;
	}
	if (bad_exits)
		unexpected(who, "%d load processes did not exit cleanly", bad_exits);
	double secs = (double)(mono() - t0) / 1e9;
	/* clean-up through the shadow tree */
	for (int c = 0; c < nclients; c++) {
		snprintf(p, sizeof p, "%s/c%02d", sbase, c);
		if (rmdir(p) < 0)
			unexpected(who, "rmdir %s: %s", p, strerror(errno));
	}
	for (int h = 0; h < nhogs; h++) {
		snprintf(p, sizeof p, "%s/h%d", sbase, h);
		if (rmdir(p) < 0)
			unexpected(who, "rmdir %s: %s", p, strerror(errno));
	}
	if (dpid) {
		/* FUSE releases and forgets are asynchronous: give them up to 10 s */
		for (int i = 0; i < 20; i++) {
			drop_dentries();
			fd_after = count_fds(dpid, &fuse_after);
			thr_after = count_threads(dpid);
			if (fd_after - fuse_after <= fd_before - fuse_before &&
			    fuse_after - fuse_before <= thr_after - thr_before)
				break;
			msleep(200);
		}
		rss_after = rss_kb(dpid);
		if (fd_after - fuse_after > fd_before - fuse_before || fuse_after - fuse_before > thr_after - thr_before) {
			fd_targets(dpid, fdlist_after, sizeof fdlist_after);
			fprintf(stderr, "loadgen: daemon descriptors before:\n%sloadgen: and after:\n%s", fdlist_before,
				fdlist_after);
		}
	}
	long ops = S->files_read + S->dirs_read + S->writes + S->readbacks + S->mkdirs + S->rmdirs + S->listeners;
	printf("secs=%.1f clients=%d ops=%ld files_read=%ld dirs_read=%ld expected_errs=%ld writes=%ld readbacks=%ld "
	       "lost=%ld mkdirs=%ld rmdirs=%ld inherit_checks=%ld listeners=%ld notified=%ld errors=%ld "
	       "holds=%ld killed=%ld resolved_raise=%ld resolved_exit=%ld early=%ld seen_late=%ld acted_late=%ld dl_unseen=%ld "
	       "fd_before=%ld fd_after=%ld fd_max=%ld fuse_fds_before=%ld fuse_fds_after=%ld threads_before=%ld threads_after=%ld rss_start_kb=%ld rss_warm_kb=%ld rss_end_kb=%ld rss_max_kb=%ld "
	       "rss_q1_kb=%ld rss_q2_kb=%ld rss_q3_kb=%ld threads_q1=%ld threads_q2=%ld threads_q3=%ld threads_warm=%ld rss_after_kb=%ld\n",
	       secs, nclients, ops, (long)S->files_read, (long)S->dirs_read, (long)S->expected_errs,
	       (long)S->writes, (long)S->readbacks, (long)S->lost, (long)S->mkdirs, (long)S->rmdirs,
	       (long)S->inherit_checks, (long)S->listeners, (long)S->notified, (long)S->errors,
	       (long)S->holds, (long)S->killed, (long)S->resolved_raise, (long)S->resolved_exit,
	       (long)S->early, (long)S->seen_late, (long)S->acted_late, (long)S->dl_unseen, fd_before, fd_after, fd_max, fuse_before, fuse_after, thr_before, thr_after, rss_start, rss_warm, rss_end, rss_max,
	       rss_q[1], rss_q[2], rss_q[3], thr_q[1], thr_q[2], thr_q[3], thr_warm, rss_after);
	return 0;
}
