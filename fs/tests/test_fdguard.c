/* Unit tests (no FUSE, no root) of the descriptor guards: the bounded eventfd
 * write (ec_signal), identity from procfs, the descriptor reserve and the closer. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "ec_signal.h"
#include "fdguard.h"
#include "fs_private.h"

#define FULL UINT64_C(0xfffffffffffffffe) /* the largest count an eventfd holds */

static uint64_t count_of(int efd)
{
	uint64_t v = 0;
	cr_assert_eq(read(efd, &v, sizeof v), (ssize_t)sizeof v);
	return v;
}

Test(ec_signal, posts_one)
{
	ec_signal *s = ec_signal_new();
	cr_assert_not_null(s);
	int efd = eventfd(0, EFD_CLOEXEC); /* blocking, as a hostile caller leaves it */
	cr_assert_eq(ec_signal_post(s, efd), EC_SIGNAL_SENT);
	cr_assert_eq(count_of(efd), 1);
	close(efd);
	ec_signal_free(s);
}

Test(ec_signal, skips_a_full_counter_at_once)
{
	ec_signal *s = ec_signal_new();
	int efd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = FULL;
	cr_assert_eq(write(efd, &v, sizeof v), (ssize_t)sizeof v);
	gint64 t0 = g_get_monotonic_time();
	cr_assert_eq(ec_signal_post(s, efd), EC_SIGNAL_SATURATED);
	cr_assert_lt(g_get_monotonic_time() - t0, 5000, "no wait at all");
	cr_assert_eq(count_of(efd), FULL);
	close(efd);
	ec_signal_free(s);
}

/* Without a timer nothing bounds a write, so none is made: a full blocking counter
 * (filled as if between a poll and the write) must not hang the notifier. */
Test(ec_signal, without_a_timer_no_write_is_made, .timeout = 10)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = FULL;
	cr_assert_eq(write(efd, &v, sizeof v), (ssize_t)sizeof v);
	gint64 t0 = g_get_monotonic_time();
	errno = 0;
	cr_assert_eq(ec_signal_write(NULL, efd), EC_SIGNAL_FAILED);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_lt(g_get_monotonic_time() - t0, 5000, "no wait at all");
	cr_assert_eq(count_of(efd), FULL, "nothing written");
	close(efd);
}

/* The race the poll cannot close: the counter is full when the write starts. The
 * timer interrupts eventfd_write (EINTR, no SA_RESTART) instead of sleeping forever. */
Test(ec_signal, a_write_into_a_full_counter_is_interrupted, .timeout = 10)
{
	ec_signal *s = ec_signal_new();
	int efd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = FULL;
	cr_assert_eq(write(efd, &v, sizeof v), (ssize_t)sizeof v);
	for (int i = 0; i < 3; i++) { /* the timer re-arms each time */
		gint64 t0 = g_get_monotonic_time();
		cr_assert_eq(ec_signal_write(s, efd), EC_SIGNAL_WEDGED);
		gint64 took = g_get_monotonic_time() - t0;
		cr_assert_geq(took, (EC_SIGNAL_TIMEOUT_MS - 1) * 1000);
		cr_assert_lt(took, 1000000, "returned after %" G_GINT64_FORMAT " us", took);
	}
	cr_assert_eq(count_of(efd), FULL, "nothing was added");
	/* and the thread is usable afterwards: a normal write still goes through */
	cr_assert_eq(ec_signal_post(s, efd), EC_SIGNAL_SENT);
	cr_assert_eq(count_of(efd), 1);
	close(efd);
	ec_signal_free(s);
}

Test(fdguard, recognises_an_eventfd_from_procfs)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(fs_fd_is_eventfd(0, efd), 0);
	cr_assert_eq(fs_fd_is_eventfd(getpid(), efd), 0);
	cr_assert_eq(fs_fd_is_eventfd(0, p[0]), EINVAL);
	cr_assert_eq(fs_fd_is_eventfd(0, 4000), EBADF);
	cr_assert_eq(fs_fd_is_eventfd(0, -1), EBADF);
	close(p[0]);
	close(p[1]);
	close(efd);
}

Test(fdguard, an_eventfd_id_is_shared_by_duplicates_only)
{
	int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC);
	int a2 = dup(a);
	uint64_t ia = 0, ia2 = 1, ib = 0;
	cr_assert_eq(fs_eventfd_id(0, a, &ia), 0);
	cr_assert_eq(fs_eventfd_id(getpid(), a2, &ia2), 0);
	cr_assert_eq(fs_eventfd_id(0, b, &ib), 0);
	cr_assert_eq(ia, ia2);
	cr_assert_neq(ia, ib);
	cr_assert_eq(fs_eventfd_id(0, 4000, &ib), EBADF);
	close(a2);
	close(b);
	close(a);
}

Test(fdguard, identity_matches_fstat)
{
	char tmpl[] = "/tmp/fdguard-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert_geq(fd, 0);
	unlink(tmpl);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	dev_t dev = 0;
	uint64_t ino = 0;
	cr_assert_eq(fs_fd_identity(getpid(), fd, &dev, &ino), 0);
	cr_assert_eq(dev, st.st_dev);
	cr_assert_eq(ino, st.st_ino);
	cr_assert_eq(fs_fd_identity(0, 4000, &dev, &ino), EBADF);
	close(fd);
}

/* v1's fdget() does not see O_PATH descriptors: an O_PATH number is EBADF there,
 * whether it names a control file or an eventfd reopened through /proc/self/fd. */
Test(fdguard, an_o_path_descriptor_is_ebadf)
{
	char tmpl[] = "/tmp/fdguard-XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert_geq(fd, 0);
	int path_fd = open(tmpl, O_PATH | O_CLOEXEC);
	cr_assert_geq(path_fd, 0);
	unlink(tmpl);
	dev_t dev = 0;
	uint64_t ino = 0;
	cr_assert_eq(fs_fd_identity(getpid(), path_fd, &dev, &ino), EBADF);
	cr_assert_eq(fs_fd_identity(getpid(), fd, &dev, &ino), 0, "the same file opened for reading");
	int efd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(efd, 0);
	char self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", efd);
	int qfd = open(self, O_PATH | O_CLOEXEC);
	cr_assert_geq(qfd, 0);
	cr_assert_eq(fs_fd_is_eventfd(getpid(), qfd), EBADF);
	cr_assert_eq(fs_fd_is_eventfd(0, qfd), EBADF);
	cr_assert_eq(fs_fd_is_eventfd(getpid(), efd), 0, "the eventfd itself");
	close(qfd);
	close(efd);
	close(path_fd);
	close(fd);
}

/* A successor server re-takes a carried listener's eventfd with pidfd_getfd (ec_carry.c
 * take_from): the holder's number and our copy must both still pass as eventfds with
 * the O_PATH check beside them (a suspect when f-levels-restart failed; it was not). */
Test(fdguard, an_eventfd_taken_from_another_process_passes, .timeout = 10)
{
	int efd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(efd, 0);
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* the listener: holds efd until the parent closes the pipe */
		char c;
		close(go[1]);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	cr_assert_geq(pidfd, 0);
	int taken = (int)syscall(SYS_pidfd_getfd, pidfd, efd, 0);
	cr_assert_geq(taken, 0, "pidfd_getfd: %s", g_strerror(errno));
	uint64_t a = 0, b = 0;
	cr_assert_eq(fs_fd_is_eventfd(pid, efd), 0, "the holder's descriptor");
	cr_assert_eq(fs_fd_is_eventfd(0, taken), 0, "ours, taken over");
	cr_assert_eq(fs_eventfd_id(pid, efd, &a), 0);
	cr_assert_eq(fs_eventfd_id(0, taken, &b), 0);
	cr_assert_eq(a, b, "the same eventfd");
	close(go[1]);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	close(taken);
	close(pidfd);
	close(efd);
}

Test(fdguard, the_top_of_the_table_is_reserved)
{
	struct rlimit rl = { .rlim_cur = 4096, .rlim_max = 4096 };
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert(fs_fd_within_budget(3));
	cr_assert(fs_fd_within_budget(4096 - FS_FD_RESERVE_MIN - 1));
	cr_assert_not(fs_fd_within_budget(4096 - FS_FD_RESERVE_MIN));
	cr_assert_not(fs_fd_within_budget(4095));
	cr_assert_not(fs_fd_within_budget(-1));
	rl.rlim_cur = 1024; /* a small limit keeps half for the daemon */
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert(fs_fd_within_budget(4096 - FS_FD_RESERVE_MIN - 1), "the limit read is kept for 1 s");
	g_usleep(G_USEC_PER_SEC + 100000); /* a limit changed is seen within the second */
	cr_assert(fs_fd_within_budget(511));
	cr_assert_not(fs_fd_within_budget(512));
}

Test(fdguard, the_closer_closes, .timeout = 10)
{
	int err = 0;
	fs_closer *c = fs_closer_new(&err);
	cr_assert_not_null(c);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fs_closer_give(c, p[1], 1000);
	char b;
	cr_assert_eq(read(p[0], &b, 1), 0, "EOF once the write end is closed");
	cr_assert_not(fs_closer_backed_up(c, 1000));
	close(p[0]);
	fs_closer_free(c);
}

/* The one reader of /proc status fields (caller.c), used for Tgid, Threads, CapEff. */
Test(status_fields, numbers_of_a_field_never_of_the_next)
{
	const char *st = "Name:\tx\nUmask:\t0022\nTgid:\t4242\nPid:\t4243\nThreads:\t\n"
			 "CapEff:\t000001ffffffffff\nNSpid:\t4243\t7\n";
	guint64 v = 0;
	cr_assert(fs_status_number(st, "Tgid:", 10, &v));
	cr_assert_eq(v, 4242);
	cr_assert(fs_status_number(st, "Umask:", 8, &v));
	cr_assert_eq(v, 022);
	cr_assert(fs_status_number(st, "CapEff:", 16, &v));
	cr_assert_eq(v, UINT64_C(0x1ffffffffff));
	cr_assert(!fs_status_number(st, "Threads:", 10, &v), "an empty value took the next line's");
	cr_assert(!fs_status_number(st, "PPid:", 10, &v));
	pid_t ns[4];
	cr_assert_eq(fs_status_nspid(st, ns, 4), 2);
	cr_assert_eq(ns[1], 7);
}

/* A registration's pidfd is opened by number: the caller's pinned thread must
 * still be alive, in that group, or the number may name someone else now. */
Test(status_fields, a_caller_gone_is_in_no_group)
{
	fs_caller me = { .procfd = open("/proc/thread-self", O_PATH | O_DIRECTORY | O_CLOEXEC) };
	cr_assert_geq(me.procfd, 0);
	cr_assert(fs_caller_in_group(&me, getpid()));
	cr_assert(!fs_caller_in_group(&me, getpid() + 1));
	cr_assert(!fs_caller_in_group(&me, 0));
	close(me.procfd);

	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	char path[32];
	snprintf(path, sizeof path, "/proc/%d", (int)child);
	fs_caller gone = { .procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC) };
	cr_assert_geq(gone.procfd, 0);
	cr_assert(fs_caller_in_group(&gone, child));
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert(!fs_caller_in_group(&gone, child), "a reaped caller still counted as its group");
	close(gone.procfd);
}
