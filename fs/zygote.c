/* zygote.c — zygote.h. Everything below fs_zygote_fork's fork runs in the zygote:
 * system calls only (zygote.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zygote.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* What the child does and what it leaves: written by the child alone, read by the
 * zygote once the child is reaped. */
typedef struct {
	long nr;
	long arg[6];
	long ret;  /* the call's return: >= 0 or -errno */
	long done; /* 1 once ret is written */
} charge_job;

#define CHARGE_STACK (16 * 1024) /* nothing is pushed; room for a signal frame */
#define PATH_LEN 32

/* One call in flight: its mapping holds the child's stack, the job, the payload and
 * the /proc/self/fd paths. */
typedef struct {
	void *map;
	size_t maplen;
	charge_job *job;
	int pidfd, reply;
	int64_t deadline_ns;
	bool killed;
} zjob;

#if defined(__x86_64__)
/* clone3 with CLONE_VM: the child makes job's call on its own stack, stores the
 * result in job and exits; the zygote goes on at once. A fork of the daemon
 * instead copied the page tables of all its locked memory (thread stacks
 * included) and left the kill path's threads to take copy-on-write faults until the
 * child exited: 12-76 ms a call against 0.07-0.35 ms this way, for a process with
 * 16-256 MiB locked and 20 threads (measured with a stand-alone copy of this
 * function on a 2-core host at load 13). The zygote is small when forked at start,
 * but a restarted one is a copy of the daemon: CLONE_VM keeps the cost off its
 * size. The child is the instructions below only, no C code, no libc: it shares
 * the zygote's TLS (errno). glibc has no clone3 wrapper that takes a stack. */
static long clone3_vm(struct clone_args *a, charge_job *job)
{
	register long nr __asm__("rax") = SYS_clone3;
	register struct clone_args *args __asm__("rdi") = a;
	register long size __asm__("rsi") = sizeof *a;
	register charge_job *j __asm__("r12") = job;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 /* the child, on the new stack: job's call, its result, exit(0) */
			 "mov %c[a0](%%r12), %%rdi\n\t"
			 "mov %c[a1](%%r12), %%rsi\n\t"
			 "mov %c[a2](%%r12), %%rdx\n\t"
			 "mov %c[a3](%%r12), %%r10\n\t"
			 "mov %c[a4](%%r12), %%r8\n\t"
			 "mov %c[a5](%%r12), %%r9\n\t"
			 "mov %c[nr](%%r12), %%rax\n\t"
			 "syscall\n\t"
			 "mov %%rax, %c[ret](%%r12)\n\t"
			 "movq $1, %c[done](%%r12)\n\t"
			 "xor %%edi, %%edi\n\t"
			 "mov %[exit], %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n\t"
			 "1:\n\t"
			 : "+r"(nr)
			 : "r"(args), "r"(size), "r"(j), [exit] "i"(SYS_exit),
			   [nr] "i"(offsetof(charge_job, nr)), [a0] "i"(offsetof(charge_job, arg[0])),
			   [a1] "i"(offsetof(charge_job, arg[1])), [a2] "i"(offsetof(charge_job, arg[2])),
			   [a3] "i"(offsetof(charge_job, arg[3])), [a4] "i"(offsetof(charge_job, arg[4])),
			   [a5] "i"(offsetof(charge_job, arg[5])), [ret] "i"(offsetof(charge_job, ret)),
			   [done] "i"(offsetof(charge_job, done))
			 : "rcx", "r11", "rdx", "r8", "r9", "r10", "memory", "cc");
	return nr;
}
#endif

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "/proc/self/fd/<fd>" into out (PATH_LEN), no stdio. */
static void fd_path(char *out, int fd)
{
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	int n = 0;
	unsigned u = (unsigned)fd;
	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < (int)sizeof digits);
	memcpy(out, pre, sizeof pre - 1);
	char *p = out + sizeof pre - 1;
	while (n)
		*p++ = digits[--n];
	*p = '\0';
}

static void answer(int reply, int err, bool placed, bool killed)
{
	fs_zrep r = { .err = err, .placed = placed, .killed = killed };
	/* the worker may have given up (its end closed): nothing to do then */
	(void)send(reply, &r, sizeof r, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(reply);
}

static void close_fds(const int *fds, int n, int from)
{
	for (int i = from; i < n; i++)
		close(fds[i]);
}

static zjob jobs[FS_ZYGOTE_MAX_JOBS];
static int njobs;
static union {
	fs_zreq req;
	char bytes[sizeof(fs_zreq) + FS_ZYGOTE_MAX_PAYLOAD];
} inbuf;

/* One request: its child made (or the answer given at once). fds[0] is the answer
 * socket, owned by the job from here on; the others are closed once the child has
 * its copies. */
static void start(const fs_zreq *q, size_t got, int *fds, int nfds)
{
	int reply = fds[0];
	int base = 1 + (q->has_cg ? 1 : 0);
	int cg = q->has_cg ? fds[1] : -1;
	bool ok = q->magic == FS_ZYGOTE_MAGIC && got == sizeof *q + q->payload_len &&
		  q->payload_len <= FS_ZYGOTE_MAX_PAYLOAD && nfds >= base;
	for (int i = 0; ok && i < 6; i++) {
		uint32_t k = q->arg[i].kind;
		if (k == FS_ARG_BUF)
			ok = q->arg[i].off <= q->payload_len && q->arg[i].len <= q->payload_len - q->arg[i].off;
		else if (k == FS_ARG_FD || k == FS_ARG_FD_PATH)
			ok = q->arg[i].v >= 0 && q->arg[i].v < nfds - base;
		else
			ok = k == FS_ARG_INT;
	}
	if (!ok || njobs == FS_ZYGOTE_MAX_JOBS) {
		close_fds(fds, nfds, 1);
		answer(reply, ok ? EAGAIN : EINVAL, true, false);
		return;
	}
	size_t len = CHARGE_STACK + sizeof(charge_job) + 6 * PATH_LEN + q->payload_len;
	len = (len + 4095) & ~(size_t)4095;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		close_fds(fds, nfds, 1);
		answer(reply, EAGAIN, true, false);
		return;
	}
	charge_job *job = (charge_job *)((char *)map + CHARGE_STACK);
	char *paths = (char *)(job + 1);
	char *payload = paths + 6 * PATH_LEN;
	memcpy(payload, (const char *)(q + 1), q->payload_len);
	job->nr = (long)q->nr;
	for (int i = 0; i < 6; i++) {
		switch (q->arg[i].kind) {
		case FS_ARG_BUF:
			job->arg[i] = (long)(payload + q->arg[i].off);
			break;
		case FS_ARG_FD:
			job->arg[i] = fds[base + q->arg[i].v];
			break;
		case FS_ARG_FD_PATH:
			fd_path(paths + i * PATH_LEN, fds[base + (int)q->arg[i].v]);
			job->arg[i] = (long)(paths + i * PATH_LEN);
			break;
		default:
			job->arg[i] = (long)q->arg[i].v;
		}
	}
	int pidfd = -1;
	struct clone_args a = {
		.flags = CLONE_PIDFD | (cg >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = 0,
		.cgroup = cg >= 0 ? (uint64_t)cg : 0,
	};
#if defined(__x86_64__)
	a.flags |= CLONE_VM;
	a.stack = (uint64_t)(uintptr_t)map;
	a.stack_size = CHARGE_STACK;
	long pid = clone3_vm(&a, job);
	int err = pid < 0 ? (int)-pid : 0;
#else
	long pid = syscall(SYS_clone3, &a, sizeof a);
	int err = pid < 0 ? errno : 0;
	if (pid == 0) { /* a fork: its own memory; the result comes back in the exit status */
		long r = syscall(job->nr, job->arg[0], job->arg[1], job->arg[2], job->arg[3],
				 job->arg[4], job->arg[5]);
		_exit(r < 0 ? errno & 0xff : 0);
	}
#endif
	close_fds(fds, nfds, 1); /* the child has its copies */
	if (pid < 0) {
		munmap(map, len);
		answer(reply, err, !(err == EOPNOTSUPP || err == EBUSY), false);
		return;
	}
	jobs[njobs++] = (zjob){ .map = map, .maplen = len, .job = job, .pidfd = pidfd, .reply = reply,
				.deadline_ns = now_ns() + (int64_t)q->timeout_ms * 1000000 };
}

/* Has job j's child exited? Reaps it, answers and drops the job if so. */
static bool finish(int j)
{
	zjob *z = &jobs[j];
	siginfo_t si;
	memset(&si, 0, sizeof si);
	int r;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)z->pidfd, &si, WEXITED | WNOHANG | __WALL);
	while (r < 0 && errno == EINTR);
	if (r == 0 && si.si_pid == 0)
		return false; /* still running */
	int err;
#if defined(__x86_64__)
	if (r == 0 && __atomic_load_n(&z->job->done, __ATOMIC_ACQUIRE))
		err = z->job->ret < 0 ? (int)-z->job->ret : 0;
#else
	if (r == 0 && si.si_code == CLD_EXITED)
		err = si.si_status;
#endif
	else if (r < 0)
		err = errno; /* not reaped (never seen): the mapping stays, it may be in use */
	else if (z->killed)
		err = EAGAIN; /* ours: the time-out (charge.h) */
	else
		err = si.si_status == SIGKILL ? ENOMEM : EINTR; /* the caller's cgroup.kill, its OOM */
	answer(z->reply, err, true, z->killed);
	close(z->pidfd);
	if (r == 0)
		munmap(z->map, z->maplen);
	jobs[j] = jobs[--njobs];
	return true;
}

/* The daemon is gone: no child may outlive us frozen (it would run the call at the
 * thaw for no one). */
static void shut_down(void)
{
	for (int j = 0; j < njobs; j++)
		(void)syscall(SYS_pidfd_send_signal, jobs[j].pidfd, SIGKILL, NULL, 0);
	for (int j = 0; j < njobs; j++) {
		siginfo_t si;
		while (waitid((idtype_t)P_PIDFD, (id_t)jobs[j].pidfd, &si, WEXITED | __WALL) < 0 &&
		       errno == EINTR)
			;
	}
	_exit(0);
}

/* Reads one request; false at EOF (the daemon's end closed). */
static bool receive(int sock)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * FS_ZYGOTE_MAX_FDS)];
	} cm;
	struct iovec iov = { .iov_base = inbuf.bytes, .iov_len = sizeof inbuf.bytes };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			    .msg_controllen = sizeof cm.b };
	ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == 0)
		return false;
	if (n < 0)
		return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
	int fds[FS_ZYGOTE_MAX_FDS];
	int nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (nfds < FS_ZYGOTE_MAX_FDS)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if (nfds == 0)
		return true; /* no answer socket: nobody to answer (not ours) */
	if ((size_t)n < sizeof(fs_zreq) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		close_fds(fds, nfds, 1);
		answer(fds[0], EINVAL, true, false);
		return true;
	}
	start(&inbuf.req, (size_t)n, fds, nfds);
	return true;
}

static void serve(int sock)
{
	struct pollfd p[1 + FS_ZYGOTE_MAX_JOBS];
	for (;;) {
		int64_t now = now_ns(), next = -1;
		for (int j = 0; j < njobs; j++) {
			if (!jobs[j].killed && now >= jobs[j].deadline_ns) {
				jobs[j].killed = true; /* a frozen task dies on SIGKILL at once */
				(void)syscall(SYS_pidfd_send_signal, jobs[j].pidfd, SIGKILL, NULL, 0);
			}
			if (!jobs[j].killed && (next < 0 || jobs[j].deadline_ns < next))
				next = jobs[j].deadline_ns;
		}
		int n = 0;
		p[n++] = (struct pollfd){ .fd = njobs < FS_ZYGOTE_MAX_JOBS ? sock : -1, .events = POLLIN };
		for (int j = 0; j < njobs; j++)
			p[n++] = (struct pollfd){ .fd = jobs[j].pidfd, .events = POLLIN };
		int ms = next < 0 ? -1 : (int)((next - now + 999999) / 1000000);
		if (poll(p, (nfds_t)n, ms) < 0 && errno != EINTR)
			continue;
		for (int j = njobs - 1; j >= 0; j--)
			if (p[1 + j].revents)
				(void)finish(j); /* the last job moves to j: already looked at */
		if (p[0].revents && !receive(sock))
			shut_down();
	}
}

/* The zygote's start: only its socket, no stop signal, no OOM kill. */
static void zygote_main(int sock)
{
	if (syscall(SYS_close_range, 0, sock > 0 ? sock - 1 : 0, 0) < 0 || sock == 0)
		for (int fd = 0; fd < sock; fd++)
			close(fd);
	if (syscall(SYS_close_range, sock + 1, ~0U, 0) < 0)
		for (int fd = sock + 1; fd < 65536; fd++)
			close(fd);
	struct sigaction sa = { .sa_handler = SIG_IGN };
	sigemptyset(&sa.sa_mask);
	static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		sigaction(ignored[i], &sa, NULL);
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < 32; s++) /* the daemon's handlers write to descriptors we closed */
		if (s != SIGKILL && s != SIGSTOP && s != SIGTERM && s != SIGINT && s != SIGHUP &&
		    s != SIGQUIT && s != SIGUSR1 && s != SIGUSR2 && s != SIGPIPE)
			sigaction(s, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "oomd-charge", 0, 0, 0);
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "-1000", 5);
		close(fd);
	}
	serve(sock);
}

pid_t fs_zygote_fork(int *sock, int *pidfd)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	int pfd = -1;
	struct clone_args a = {
		.flags = CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)&pfd,
		.exit_signal = 0,
	};
	long pid = syscall(SYS_clone3, &a, sizeof a);
	if (pid == 0) {
		close(sp[0]);
		zygote_main(sp[1]);
		_exit(0);
	}
	int err = errno;
	close(sp[1]);
	if (pid < 0) {
		close(sp[0]);
		return -err;
	}
	/* a full queue is "not now" for the sender, never a wait past its time-out */
	int big = 1 << 20;
	(void)setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	*sock = sp[0];
	*pidfd = pfd;
	return (pid_t)pid;
}
