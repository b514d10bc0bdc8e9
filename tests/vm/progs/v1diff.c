/* v1diff - a legacy cgroup-v1 memory client, run once against a native v1
 * memory hierarchy and once against the oomdelayfs shadow tree in --layout v1
 * (tests/vm/scenarios/d-v1diff.sh compares the two transcripts).
 *
 *   v1diff [--v2] ROOT NAME
 *
 * --v2: ROOT is the shadow tree in its default (v2) layout: only the parts between the
 * "== oom" and "== end" markers and after "== rmdir" are run (cgroup.event_control, the
 * OOM phases, the rmdir signal), with memory.max for memory.limit_in_bytes and cgroup.procs
 * for tasks (the default layout serves memory.usage_in_bytes itself since issue 22); lines
 * keep the v1 names.
 *
 * Makes ROOT/NAME and ROOT/NAME/c and prints what a v1 client observes, one fact
 * a line: listings, file formats (run-dependent numbers reduced to their shape),
 * the errno of bad writes to memory.limit_in_bytes, memory.oom_control,
 * cgroup.event_control and others, under_oom transitions and eventfd
 * notification counts with oom_kill_disable=1 and then 0, oom_kill counts, the
 * rmdir signal. Lines starting with '#' carry timings and are not compared.
 * Removes what it made. Exit status 0 unless the set-up itself failed.
 * The parts: v1diff_io.c (the helpers, v1diff.h), this file (the steps of the transcript).
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "v1diff.h"

static char top[512], cgc[600];
static const char *root;

static volatile pid_t thread_tid;

static void *sleeper_thread(void *arg)
{
	(void)arg;
	thread_tid = gettid();
	for (;;)
		pause();
	return NULL;
}

static void seq_add(char *seq, size_t size, int *last, int v)
{
	if (v == *last)
		return;
	*last = v;
	size_t l = strlen(seq);
	snprintf(seq + l, size - l, "%s%d", l ? "," : "", v);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--v2") == 0) {
		v2 = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: v1diff [--v2] ROOT NAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	root = argv[1];
	snprintf(top, sizeof top, "%s/%s", root, argv[2]);
	snprintf(cgc, sizeof cgc, "%s/c", top);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return 1;
	t_31 = (volatile double *)((volatile char *)shared + 64);
	if (mkdir(top, 0755) < 0) {
		fprintf(stderr, "v1diff: mkdir %s: %s\n", top, strerror(errno));
		return 1;
	}
	if (v2) { /* v2: the child has memory files only when its parent passes the controller on */
		char path[1024];
		snprintf(path, sizeof path, "%s/cgroup.subtree_control", top);
		if (writef(path, "+memory", 7) != 0)
			fprintf(stderr, "v1diff: cannot enable +memory in %s\n", top);
	}
	if (mkdir(cgc, 0755) < 0) {
		fprintf(stderr, "v1diff: mkdir %s: %s\n", cgc, strerror(errno));
		return 1;
	}
	const char *files[] = { "memory.limit_in_bytes", "memory.usage_in_bytes",
		"memory.max_usage_in_bytes", "memory.failcnt", "memory.soft_limit_in_bytes",
		"memory.memsw.limit_in_bytes", "memory.memsw.usage_in_bytes",
		"memory.memsw.max_usage_in_bytes", "memory.memsw.failcnt", "memory.stat",
		"memory.use_hierarchy", "tasks", "cgroup.procs", "memory.oom_control",
		"cgroup.event_control", NULL };

	/* 1. listings and formats */
	if (v2)
		goto oom;
	list("c", cgc);
	list("root", root);
	for (int i = 0; files[i]; i++)
		show("c", cgc, files[i]);
	for (int i = 0; files[i]; i++)
		if (strcmp(files[i], "memory.stat") != 0 && !strstr(files[i], "usage"))
			show("root", root, files[i]);
	{
		struct stat st;
		char path[1024];
		for (int i = 0; files[i]; i++) {
			snprintf(path, sizeof path, "%s/%s", cgc, files[i]);
			if (stat(path, &st) == 0)
				printf("mode c/%s: %o\n", files[i], st.st_mode & 07777);
		}
	}

	/* 2. bad and good writes */
	const char *lim[] = { "max", "-2", "abc", "1x", "0x", "", "\n", " 8k ", "12345", "1G", "-1", "0x1000",
		"010", "+4096", "4096 4096", "1e", "99999999999999999999", "9223372036854775807", NULL };
	for (int i = 0; lim[i]; i++)
		TRYW("c", cgc, "memory.limit_in_bytes", lim[i]);
	tryw("c", cgc, "memory.limit_in_bytes", "8192\0", 5);
	TRYW("root", root, "memory.limit_in_bytes", "1G");
	TRYW("root", root, "memory.limit_in_bytes", "-1");
	const char *ctl[] = { "2", "-1", "abc", "1 ", "01", "0x1", "", "1\n", "0", NULL };
	for (int i = 0; ctl[i]; i++)
		TRYW("c", cgc, "memory.oom_control", ctl[i]);
	tryw("c", cgc, "memory.oom_control", "0\0", 2);
	TRYW("root", root, "memory.oom_control", "1");
	TRYW("root", root, "memory.oom_control", "0");
	TRYW("c", cgc, "memory.use_hierarchy", "0");
	TRYW("c", cgc, "memory.use_hierarchy", "2");
	TRYW("c", cgc, "memory.use_hierarchy", "1");
	TRYW("c", cgc, "memory.soft_limit_in_bytes", "max");
	TRYW("c", cgc, "memory.soft_limit_in_bytes", "1M");
	TRYW("c", cgc, "memory.soft_limit_in_bytes", "-1");
	TRYW("c", cgc, "memory.max_usage_in_bytes", "0");
	TRYW("c", cgc, "memory.max_usage_in_bytes", "abc");
	TRYW("c", cgc, "memory.failcnt", "0");
	TRYW("c", cgc, "memory.failcnt", "5");
	TRYW("c", cgc, "memory.force_empty", "0");
	TRYW("root", root, "memory.force_empty", "0");
	TRYW("c", cgc, "memory.usage_in_bytes", "0");
	TRYW("c", cgc, "memory.stat", "0");
	TRYW("c", cgc, "tasks", "999999");
	TRYW("c", cgc, "tasks", "abc");
	TRYW("c", cgc, "cgroup.procs", "999999");
	/* memsw: never below the memory limit */
	TRYW("c", cgc, "memory.limit_in_bytes", "64M");
	TRYW("c", cgc, "memory.memsw.limit_in_bytes", "32M");
	TRYW("c", cgc, "memory.memsw.limit_in_bytes", "128M");
	TRYW("c", cgc, "memory.limit_in_bytes", "256M");
	TRYW("c", cgc, "memory.limit_in_bytes", "96M");
	TRYW("c", cgc, "memory.memsw.limit_in_bytes", "-1");
	TRYW("c", cgc, "memory.limit_in_bytes", "-1");
	TRYW("c", cgc, "memory.memsw.failcnt", "0");
	TRYW("c", cgc, "memory.memsw.max_usage_in_bytes", "0");

	/* 3. cgroup.event_control */
oom:
	printf("== oom\n");
	int status = 0;
	pid_t h, w;
	double t0;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int cfd = open_in(cgc, "memory.oom_control", O_RDONLY);
	int cfd_w = open_in(cgc, "memory.oom_control", O_WRONLY);
	int ufd = open_in(cgc, "memory.usage_in_bytes", O_RDONLY);
	int pfd = open_in(top, "memory.oom_control", O_RDONLY);
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0 || efd < 0 || cfd < 0)
		return 1;
	printf("evctl 'x': %s\n", ename(evctl(cgc, "x")));
	printf("evctl '<efd>': %s\n", ename(evctl(cgc, "%d", efd)));
	printf("evctl '<efd>  <cfd>' (two spaces): %s\n", ename(evctl(cgc, "%d  %d", efd, cfd)));
	printf("evctl '<efd> 9999': %s\n", ename(evctl(cgc, "%d 9999", efd)));
	printf("evctl '9999 <cfd>': %s\n", ename(evctl(cgc, "9999 %d", cfd)));
	printf("evctl '<pipe> <cfd>': %s\n", ename(evctl(cgc, "%d %d", pp[0], cfd)));
	printf("evctl '<efd> <usage fd>': %s\n", ename(evctl(cgc, "%d %d", efd, ufd)));
	printf("evctl '<efd> <usage fd> 1G' (threshold): %s\n", ename(evctl(cgc, "%d %d 1G", efd, ufd)));
	printf("evctl '<efd> <parent oom_control>': %s\n", ename(evctl(cgc, "%d %d", efd, pfd)));
	printf("evctl '<efd> <oom_control O_WRONLY>': %s\n",
	       cfd_w < 0 ? "open failed" : ename(evctl(cgc, "%d %d", efd, cfd_w)));
	printf("evctl '<efd> <cfd> junk': %s\n", ename(evctl(cgc, "%d %d junk", efd, cfd)));
	close(efd);
	/* the listeners of the OOM phases: on c (fresh eventfds) and on its parent */
	int ec = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ep = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	printf("evctl c '<efd> <cfd>\\n': %s\n", ename(evctl(cgc, "%d %d\n", ec, cfd)));
	printf("evctl parent '<efd> <pfd>': %s\n", ename(evctl(top, "%d %d", ep, pfd)));
	efd_settle(ec, ep);
	printf("efd after register: c=%llu parent=%llu\n", (unsigned long long)efd_take(ec),
	       (unsigned long long)efd_take(ep));

	/* 4. OOM with oom_kill_disable=1: held, notified, resolved by raising the limit */
	TRYW("c", cgc, "memory.limit_in_bytes", "32M");
	TRYW("c", cgc, "memory.oom_control", "1");
	double t_uoom = 0, t_efd = 0;
	t0 = now_ms();
	h = hog(cgc, 64);
	char seq_c[256] = "", seq_p[256] = "";
	int lc = -2, lp = -2;
	uint64_t nc = 0, np = 0;
	while (now_ms() - t0 < 20000) {
		int uc = under_oom(cgc), up = under_oom(top);
		seq_add(seq_c, sizeof seq_c, &lc, uc);
		seq_add(seq_p, sizeof seq_p, &lp, up);
		if (uc == 1 && !t_uoom)
			t_uoom = now_ms();
		struct pollfd p = { .fd = ec, .events = POLLIN };
		if (poll(&p, 1, 10) == 1 && !t_efd)
			t_efd = now_ms();
		if (t_uoom && now_ms() - t_uoom > 1500)
			break;
		if (shared[1])
			break;
	}
	nc += efd_take(ec);
	np += efd_take(ep);
	printf("A: hog finished before the raise: %s; alive: %s\n", shared[1] ? "yes" : "no",
	       waitpid(h, NULL, WNOHANG) == 0 ? "yes" : "no");
	printf("A: efd during hold: c=%llu parent=%llu\n", (unsigned long long)nc, (unsigned long long)np);
	printf("# A: under_oom seen %.0f ms, eventfd readable %.0f ms after the hog started (hog at %d MiB)\n",
	       t_uoom ? t_uoom - t0 : -1, t_efd ? t_efd - t0 : -1, shared[0]);
	if (*t_31 && t_efd)
		printf("# A: eventfd readable %.1f ms after the hog touched its 31st MiB (limit 32 MiB)\n",
		       t_efd - *t_31);
	show("c", cgc, "memory.oom_control");
	show("parent", top, "memory.oom_control");
	double tr = now_ms();
	TRYW("c", cgc, "memory.limit_in_bytes", "128M");
	while (!shared[1] && now_ms() - tr < 15000) {
		seq_add(seq_c, sizeof seq_c, &lc, under_oom(cgc));
		seq_add(seq_p, sizeof seq_p, &lp, under_oom(top));
		usleep(10000);
	}
	printf("# A: the hog finished %.0f ms after the raise\n", now_ms() - tr);
	usleep(300000);
	seq_add(seq_c, sizeof seq_c, &lc, under_oom(cgc));
	seq_add(seq_p, sizeof seq_p, &lp, under_oom(top));
	printf("A: hog finished after the raise: %s\n", shared[1] ? "yes" : "no");
	printf("A: under_oom sequence: c=%s parent=%s\n", seq_c, seq_p);
	efd_settle(ec, ep);
	printf("A: efd after the raise: c=%llu parent=%llu\n", (unsigned long long)efd_take(ec),
	       (unsigned long long)efd_take(ep));
	printf("A: oom_kill c=%lu parent=%lu\n", oom_kill_of(cgc), oom_kill_of(top));
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	usleep(200000);

	/* 5. OOM with oom_kill_disable=0: the kernel kills */
	TRYW("c", cgc, "memory.oom_control", "0");
	TRYW("c", cgc, "memory.limit_in_bytes", "32M");
	seq_c[0] = seq_p[0] = 0;
	lc = lp = -2;
	t0 = now_ms();
	h = hog(cgc, 64);
	w = 0;
	while (now_ms() - t0 < 20000 && (w = waitpid(h, &status, WNOHANG)) == 0) {
		seq_add(seq_c, sizeof seq_c, &lc, under_oom(cgc));
		usleep(10000);
	}
	if (w == 0) {
		printf("B: hog not killed within 20 s\n");
		kill(h, SIGKILL);
		waitpid(h, &status, 0);
	} else {
		printf("B: hog ended: %s\n", WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "SIGKILL"
					       : WIFSIGNALED(status) ? "other signal" : "exit");
	}
	printf("# B: hog ended %.0f ms after it started\n", now_ms() - t0);
	usleep(300000);
	printf("B: under_oom sequence: c=%s\n", seq_c);
	efd_settle(ec, ep);
	for (double tk = now_ms(); oom_kill_of(cgc) == 0 && now_ms() - tk < 2000;)
		usleep(10000); /* the shadow's count follows the kernel's notification */
	printf("B: efd: c=%llu parent=%llu\n", (unsigned long long)efd_take(ec),
	       (unsigned long long)efd_take(ep));
	printf("B: oom_kill c=%lu parent=%lu\n", oom_kill_of(cgc), oom_kill_of(top));
	if (!v2)
		show("after", cgc, "memory.failcnt"); /* counts vary from run to run */
	printf("== end\n");

	/* 6. states v1 and v2 reach differently */
	if (v2)
		goto rm;
	/* a limit below the usage: v1 reclaims, fails and says EBUSY; v2 OOM-kills */
	TRYW("c", cgc, "memory.limit_in_bytes", "64M");
	h = hog(cgc, 16);
	t0 = now_ms();
	while (!shared[1] && now_ms() - t0 < 15000)
		usleep(10000);
	printf("C: 16 MiB hog finished: %s\n", shared[1] ? "yes" : "no");
	TRYW("c", cgc, "memory.limit_in_bytes", "8M");
	usleep(300000);
	printf("C: hog alive after the limit went below its usage: %s\n",
	       waitpid(h, &status, WNOHANG) == 0 ? "yes" : "no");
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	efd_settle(ec, ep);
	printf("C: efd: c=%llu parent=%llu\n", (unsigned long long)efd_take(ec),
	       (unsigned long long)efd_take(ep));
	/* the watermark reset: v1 restarts it from the current usage */
	{
		char path[1024], buf[64];
		snprintf(path, sizeof path, "%s/memory.max_usage_in_bytes", cgc);
		printf("C: write max_usage_in_bytes '0': %s\n", ename(writef(path, "0", 1)));
		unsigned long long v = readf(path, buf, sizeof buf) ? 0 : strtoull(buf, NULL, 10);
		printf("C: max_usage after reset: %s\n", v < (1ull << 20) ? "<1 MiB" : ">=1 MiB (not reset)");
	}
	TRYW("c", cgc, "memory.limit_in_bytes", "-1");
	/* one thread of a multi-threaded process into tasks */
	pthread_t th;
	if (pthread_create(&th, NULL, sleeper_thread, NULL) == 0) {
		while (!thread_tid)
			usleep(1000);
		char tid[32], path[1024];
		snprintf(tid, sizeof tid, "%d", (int)thread_tid);
		snprintf(path, sizeof path, "%s/tasks", cgc);
		printf("D: write a thread's tid to c/tasks: %s\n", ename(writef(path, tid, strlen(tid))));
		snprintf(path, sizeof path, "%s/tasks", root);
		printf("D: write it back to root/tasks: %s\n", ename(writef(path, tid, strlen(tid))));
	}
	/* a process into a cgroup that has a child cgroup (v2: no internal processes) */
	{
		pid_t sl = fork();
		if (sl == 0) {
			for (;;)
				pause();
		}
		char pid[32], path[1024];
		snprintf(pid, sizeof pid, "%d", (int)sl);
		snprintf(path, sizeof path, "%s/cgroup.procs", top);
		printf("E: write a pid to the parent's cgroup.procs (it has a child): %s\n",
		       ename(writef(path, pid, strlen(pid))));
		kill(sl, SIGKILL);
		waitpid(sl, NULL, 0);
		usleep(100000);
	}

	/* 7. the rmdir signal */
rm:
	printf("== rmdir\n");
	close(cfd);
	if (cfd_w >= 0)
		close(cfd_w);
	close(ufd);
	printf("rmdir c: %s\n", ename(rmdir(cgc) < 0 ? errno : 0));
	efd_settle(ec, ep);
	printf("efd after rmdir c: c=%llu parent=%llu\n", (unsigned long long)efd_take(ec),
	       (unsigned long long)efd_take(ep));
	close(pfd);
	printf("rmdir parent: %s\n", ename(rmdir(top) < 0 ? errno : 0));
	efd_settle(ep, -1);
	printf("efd after rmdir parent: parent=%llu\n", (unsigned long long)efd_take(ep));
	return 0;
}
