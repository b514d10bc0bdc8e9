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
 *     deadline (a notification still counts if it comes within 5 s of the hog's death:
 *     notified_after_kill) was killed without a hold. A hold seen too late to act on (the VM is
 *     slow) is left to be killed (seen_late; dl_unseen when its deadline was gone before it could
 *     be read), and
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
 * The parts: loadgen_client.c (the clients), loadgen_hog.c (the hog managers), this file (the
 * options, the run, the daemon's figures); loadgen.h says what they share.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loadgen.h"

struct stats *S;
const char *sbase, *rbase;
int nclients = 64, nhogs = 4, hog_mb = 48, limit_mb = 32;
char who[64];
static int duration = 60;
static int64_t end_ns;

int over(void) { return S->stop || mono() >= end_ns; }

void unexpected(const char *name, const char *fmt, ...)
{
	atomic_fetch_add(&S->errors, 1);
	if (atomic_fetch_add(&S->logged, 1) >= 40)
		return;
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	fprintf(stderr, "loadgen: %s: %s\n", name, b);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void write_check(const char *path, const char *val, const char *expect)
{
	char b[256];
	int e = vp_put(path, val);
	atomic_fetch_add(&S->writes, 1);
	if (e) {
		unexpected(who, "write '%s' to %s: %s", val, path, strerror(-e));
		return;
	}
	ssize_t r = vp_slurp(path, b, sizeof b);
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

void reap(pid_t pid, int *st)
{
	while (waitpid(pid, st, 0) < 0 && errno == EINTR)
		;
}

/* ---- the daemon ---- */
/* the daemon's descriptors: all of them, and how many are /dev/fuse (libfuse's clone_fd gives
 * every FUSE worker thread its own; idle workers are kept, up to --max-threads) */
long count_fds(int pid, long *fuse)
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

long count_threads(int pid)
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
void fd_targets(int pid, char *buf, size_t size)
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

long rss_kb(int pid)
{
	char p[64], b[4096];
	snprintf(p, sizeof p, "/proc/%d/status", pid);
	if (vp_slurp(p, b, sizeof b) < 0)
		return -1;
	char *r = strstr(b, "VmRSS:");
	return r ? strtol(r + 6, NULL, 10) : -1;
}

static void drop_dentries(void)
{
	sync();
	if (vp_put("/proc/sys/vm/drop_caches", "2"))
		fprintf(stderr, "loadgen: cannot drop caches\n");
	vp_msleep(300);
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
		if (vp_put(p, "+memory"))
			die("cannot enable +memory in %s", p);
	}
	for (int h = 0; h < nhogs; h++) {
		snprintf(p, sizeof p, "%s/h%d", sbase, h);
		mk(p);
		snprintf(p, sizeof p, "%s/h%d/memory.max", sbase, h);
		snprintf(v, sizeof v, "%lld", (long long)limit_mb * MiB);
		if (vp_put(p, v))
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
		vp_msleep(1000);
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
			vp_msleep(200);
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
	       "holds=%ld killed=%ld resolved_raise=%ld resolved_exit=%ld early=%ld seen_late=%ld acted_late=%ld dl_unseen=%ld notified_after_kill=%ld "
	       "fd_before=%ld fd_after=%ld fd_max=%ld fuse_fds_before=%ld fuse_fds_after=%ld threads_before=%ld threads_after=%ld rss_start_kb=%ld rss_warm_kb=%ld rss_end_kb=%ld rss_max_kb=%ld "
	       "rss_q1_kb=%ld rss_q2_kb=%ld rss_q3_kb=%ld threads_q1=%ld threads_q2=%ld threads_q3=%ld threads_warm=%ld rss_after_kb=%ld\n",
	       secs, nclients, ops, (long)S->files_read, (long)S->dirs_read, (long)S->expected_errs,
	       (long)S->writes, (long)S->readbacks, (long)S->lost, (long)S->mkdirs, (long)S->rmdirs,
	       (long)S->inherit_checks, (long)S->listeners, (long)S->notified, (long)S->errors,
	       (long)S->holds, (long)S->killed, (long)S->resolved_raise, (long)S->resolved_exit,
	       (long)S->early, (long)S->seen_late, (long)S->acted_late, (long)S->dl_unseen, (long)S->notified_after_kill, fd_before, fd_after, fd_max, fuse_before, fuse_after, thr_before, thr_after, rss_start, rss_warm, rss_end, rss_max,
	       rss_q[1], rss_q[2], rss_q[3], thr_q[1], thr_q[2], thr_q[3], thr_warm, rss_after);
	return 0;
}
