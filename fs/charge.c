/* charge.c — charge.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "charge.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* The root of the cgroup2 mount that holds the served tree (its root may be a
 * subtree): up from it while ".." stays on the same file system. fd or -errno. */
static int cgroup_mount_root(od_shadowfs *fs)
{
	fs_node *r = fs_inodes_get(fs->inodes, FUSE_ROOT_ID);
	if (!r)
		return -ESTALE;
	int fd = openat(r->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? -errno : -EIO;
	for (int depth = 0; depth < 256; depth++) {
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) < 0 || ust.st_dev != st.st_dev || ust.st_ino == st.st_ino) {
			if (up >= 0)
				close(up);
			return fd;
		}
		close(fd);
		fd = up;
		st = ust;
	}
	return fd;
}

/* The caller's cgroup directory (O_RDONLY, as CLONE_INTO_CGROUP takes it), or -errno. */
static int caller_cgroup(od_shadowfs *fs, const fs_caller *c)
{
	if (!c->known || c->procfd < 0)
		return -EACCES;
	g_autofree char *text = fs_caller_read(c, "cgroup");
	const char *p = text ? strstr(text, "0::/") : NULL;
	if (!p || (p != text && p[-1] != '\n'))
		return -EACCES; /* no cgroup2 line: not the hierarchy we serve */
	p += 4;
	g_autofree char *rel = g_strndup(p, strcspn(p, "\n"));
	/* A ".." component: outside our cgroup namespace's view (cgroup_path_ns). */
	g_autofree char *slashed = g_strconcat("/", rel, "/", NULL);
	if (strstr(slashed, "/../") || g_str_has_suffix(rel, " (deleted)"))
		return -EACCES;
	int root = cgroup_mount_root(fs);
	if (root < 0)
		return root;
	int fd = openat(root, *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = errno;
	close(root);
	return fd < 0 ? -err : fd;
}

/* What the child does and what it leaves: written by the child alone, read by us
 * once it is reaped. */
typedef struct {
	long nr;
	long arg[6];
	long ret;  /* the call's return: >= 0 or -errno */
	long done; /* 1 once ret is written */
} charge_job;

#if defined(__x86_64__)
#define CHARGE_STACK (16 * 1024) /* nothing is pushed; room for a signal frame */
/* clone3 with CLONE_VM: the child makes job's call on its own stack, stores the
 * result in job and exits; we go on at once. A fork of the daemon instead copies
 * the page tables of all its locked memory (thread stacks included) and leaves the
 * kill path's threads to take copy-on-write faults until the child exits: 12-76 ms
 * a call against 0.07-0.35 ms this way, for a process with 16-256 MiB locked and 20
 * threads (measured with a stand-alone copy of this function on a 2-core host at
 * load 13). The child runs beside this thread with its TLS (errno): it is the
 * instructions below only, no C code, no libc. glibc has no clone3 wrapper that
 * takes a stack. */
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

/* One line per 10 s at most: a tenant can freeze its cgroup under every call. */
static void warn_timed_out(int timeout_ms, bool killed)
{
	static GMutex lock;
	static gint64 last;
	if (fs_warn_due(&lock, &last))
		g_warning("a caller's setxattr/mkdir did not finish in its cgroup within %d ms (a frozen "
			  "cgroup?): its child %s, the caller is told to try again (EBUSY, EAGAIN)",
			  timeout_ms, killed ? "was killed" : "could not be killed");
}

/* Has the child behind pidfd exited? Reaps it if so (si filled). */
static bool reaped(int pidfd, siginfo_t *si, int *err)
{
	memset(si, 0, sizeof *si);
	int r;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, si, WEXITED | WNOHANG | __WALL);
	while (r < 0 && errno == EINTR);
	*err = r < 0 ? errno : 0;
	return r < 0 || si->si_pid != 0;
}

/* Waits for the child behind pidfd at most timeout_ms, then SIGKILLs it; reaps it
 * either way (a frozen task dies on SIGKILL at once; one inside an uninterruptible
 * call finishes it first, as it would have on our own thread). Readiness of the
 * pidfd is only a hint: the child counts as gone once waitid has reaped it. 0 or
 * errno of the wait; *killed whether we killed it. */
static int reap(int pidfd, int timeout_ms, siginfo_t *si, bool *killed)
{
	gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	int err;
	*killed = false;
	for (;;) {
		if (reaped(pidfd, si, &err))
			return err;
		gint64 left = end - g_get_monotonic_time();
		if (left <= 0)
			break;
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		if (poll(&p, 1, (int)MIN((left + 999) / 1000, 100)) < 0 && errno != EINTR)
			break;
	}
	*killed = pidfd_send_signal(pidfd, SIGKILL, NULL, 0) == 0;
	warn_timed_out(timeout_ms, *killed);
	memset(si, 0, sizeof *si);
	int r;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, si, WEXITED | __WALL);
	while (r < 0 && errno == EINTR);
	return r < 0 ? errno : 0;
}

int fs_charge_run(int cg, const fs_charged_syscall *sc, int timeout_ms, bool *placed)
{
	int pidfd = -1;
	charge_job job = { .nr = sc->nr };
	memcpy(job.arg, sc->arg, sizeof job.arg);
	struct clone_args a = {
		.flags = CLONE_PIDFD | (cg >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = 0,
		.cgroup = cg >= 0 ? (uint64_t)cg : 0,
	};
	*placed = true;
#if defined(__x86_64__)
	void *stack = g_malloc(CHARGE_STACK); /* 16-byte aligned: the top too */
	a.flags |= CLONE_VM;
	a.stack = (uint64_t)(uintptr_t)stack;
	a.stack_size = CHARGE_STACK;
	long pid = clone3_vm(&a, &job);
	if (pid < 0) {
		errno = (int)-pid;
		pid = -1;
	}
#else
	long pid = syscall(SYS_clone3, &a, sizeof a);
	if (pid == 0) { /* a fork: its own errno; system calls only from here on */
		long r = syscall(sc->nr, sc->arg[0], sc->arg[1], sc->arg[2], sc->arg[3], sc->arg[4],
				 sc->arg[5]);
		_exit(r < 0 ? errno & 0xff : 0);
	}
#endif
	if (pid < 0) {
		int err = errno;
#if defined(__x86_64__)
		g_free(stack);
#endif
		*placed = !(err == EOPNOTSUPP || err == EBUSY);
		return err;
	}
	siginfo_t si;
	bool killed;
	int werr = reap(pidfd, timeout_ms, &si, &killed);
	close(pidfd);
#if defined(__x86_64__)
	if (werr && werr != ECHILD) /* not reaped (never seen): it may still use the stack */
		g_warning("charged call: cannot reap its child: %s", g_strerror(werr));
	else
		g_free(stack); /* the child is gone */
	if (__atomic_load_n(&job.done, __ATOMIC_ACQUIRE))
		return job.ret < 0 ? (int)-job.ret : 0;
#else
	if (!werr && si.si_code == CLD_EXITED)
		return si.si_status;
#endif
	if (werr)
		return werr;
	if (killed)
		return EAGAIN; /* ours: the time-out (charge.h) */
	return si.si_status == SIGKILL ? ENOMEM : EINTR;
}

/* Is the served tree on cgroup2? Only the fs tests serve another file system
 * (a directory tree standing in for it): there is no cgroup to charge there. */
static bool on_cgroup2(od_shadowfs *fs)
{
	fs_node *r = fs_inodes_get(fs->inodes, FUSE_ROOT_ID);
	struct statfs sf;
	return !r || fstatfs(r->fd, &sf) != 0 || sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Charged calls in flight of non-root callers: per uid and together (charge.h). */
static GMutex gate_lock;
static GHashTable *gate_by_uid; /* uid -> count */
static unsigned gate_nonroot;

static bool gate_enter(uid_t uid, unsigned max_nonroot)
{
	g_mutex_lock(&gate_lock);
	if (!gate_by_uid)
		gate_by_uid = g_hash_table_new(g_direct_hash, g_direct_equal);
	unsigned n = GPOINTER_TO_UINT(g_hash_table_lookup(gate_by_uid, GUINT_TO_POINTER(uid)));
	bool ok = n < FS_CHARGE_PER_UID && gate_nonroot < max_nonroot;
	if (ok) {
		g_hash_table_insert(gate_by_uid, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n + 1));
		gate_nonroot++;
	}
	g_mutex_unlock(&gate_lock);
	return ok;
}

static void gate_leave(uid_t uid)
{
	g_mutex_lock(&gate_lock);
	unsigned n = GPOINTER_TO_UINT(g_hash_table_lookup(gate_by_uid, GUINT_TO_POINTER(uid)));
	if (n > 1)
		g_hash_table_insert(gate_by_uid, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n - 1));
	else
		g_hash_table_remove(gate_by_uid, GUINT_TO_POINTER(uid));
	gate_nonroot--;
	g_mutex_unlock(&gate_lock);
}

/* The call on this thread (a tree with no cgroup to charge): 0 or errno. */
static int run_here(const fs_charged_syscall *sc)
{
	long r = syscall(sc->nr, sc->arg[0], sc->arg[1], sc->arg[2], sc->arg[3], sc->arg[4], sc->arg[5]);
	return r < 0 ? errno : 0;
}

static int charged_in(od_shadowfs *fs, const fs_caller *c, const fs_charged_syscall *sc)
{
	int cg = caller_cgroup(fs, c);
	if (cg < 0)
		return -cg;
	for (int depth = 0; depth < 256; depth++) {
		bool placed;
		int err = fs_charge_run(cg, sc, FS_CHARGE_TIMEOUT_MS, &placed);
		if (placed) {
			close(cg);
			return err;
		}
		int up = openat(cg, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cg);
		if (up < 0)
			return err;
		cg = up;
	}
	close(cg);
	return EBUSY;
}

int fs_charged_call(od_shadowfs *fs, const fs_caller *c, const fs_charged_syscall *sc, int busy)
{
	int err;
	if (!on_cgroup2(fs))
		err = run_here(sc);
	else if (c->known && c->init_userns && c->fsuid == 0) /* root of our user namespace */
		err = charged_in(fs, c, sc);
	else if (!gate_enter(c->fsuid, MAX(1u, fs->opts.max_threads / 2)))
		err = EAGAIN; /* a container's root is bounded too */
	else {
		err = charged_in(fs, c, sc);
		gate_leave(c->fsuid);
	}
	return fs_reply_errno(err == EAGAIN ? busy : err);
}
