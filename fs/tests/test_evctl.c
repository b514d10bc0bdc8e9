/* test_evctl.c — cgroup.event_control through the mount (the fixture of
 * fixture.h, the stub controller firing the notify and removed hooks): the
 * caller's descriptors checked, signals at onset and rmdir, bounds, a full or
 * blocking eventfd, listeners of exited processes dropped. Root + /dev/fuse. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oomd/shadowfs.h"
#include "../fs_private.h"
#include "stub_controller.h"
#include "fixture.h"

TestSuite(evctl, .init = fx_setup, .fini = fx_teardown, .timeout = 20);

Test(evctl, is_write_only_and_parses)
{
	SKIP_UNLESS_READY();
	errno = 0;
	char *v = slurp("a/cgroup.event_control");
	cr_assert_null(v);
	cr_assert_eq(errno, EINVAL, "cgroupfs opens a write-only file for reading; the read fails");
	cr_assert_eq(poke("a/cgroup.event_control", "1"), EINVAL);
	cr_assert_eq(poke("a/cgroup.event_control", "x y"), EINVAL);
}

/* Writes "<efd> <cfd>" to cg's cgroup.event_control; 0 or errno. */
static int reg(const char *cg, int efd, int cfd)
{
	return fx_register(cg, efd, cfd, NULL);
}

Test(evctl, checks_the_descriptors)
{
	SKIP_UNLESS_READY();
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int ctl_a = open_in_mnt("a/memory.oom_control", O_RDONLY);
	int ctl_b = open_in_mnt("a/b/memory.oom_control", O_RDONLY);
	int delay = open_in_mnt("a/memory.oom_delay_millisecs", O_RDONLY);
	cr_assert_eq(reg("a", 999, ctl_a), EBADF);
	cr_assert_eq(reg("a", efd, 998), EBADF);
	cr_assert_eq(reg("a", delay, ctl_a), EINVAL, "not an eventfd");
	cr_assert_eq(reg("a", efd, delay), EINVAL, "another control file");
	cr_assert_eq(reg("a", efd, ctl_b), EINVAL, "another cgroup's memory.oom_control");
	cr_assert_eq(fs_evctl_count(fs->evctl, real_ino("a")), 0);
	close(delay);
	close(ctl_b);
	close(ctl_a);
	close(efd);
}

Test(evctl, signals_onset_and_rmdir)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int cfd = open_in_mnt("a/memory.oom_control", O_RDONLY);
	cr_assert_eq(reg("a", efd, cfd), 0);
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 1);
	cr_assert_eq(fx_drain(efd), 0, "quiet until an OOM");
	stub_controller_notify(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 1);
	stub_controller_notify(ctl, real_ino("a/b"));
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 0, "another cgroup's onset is not ours");
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 1, "the rmdir signal");
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 0);
	close(cfd);
	close(efd);
}

Test(evctl, signals_at_once_during_a_hold)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int cfd = open_in_mnt("a/memory.oom_control", O_RDONLY);
	char buf[128];
	cr_assert_gt(read(cfd, buf, sizeof buf), 0); /* the stub learns of "a" on first use */
	stub_controller_set_under_oom(ctl, id, true);
	cr_assert_eq(reg("a", efd, cfd), 0);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 1);
	close(cfd);
	close(efd);
}

/* Issue 10: a blocking eventfd with its counter at 2^64-2 neither blocks the hook
 * (the controller's thread) nor the listener registered beside it. */
Test(evctl, a_full_blocking_eventfd_delays_nothing, .timeout = 30)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int bad = eventfd(0, EFD_CLOEXEC); /* blocking */
	uint64_t full = UINT64_C(0xfffffffffffffffe);
	cr_assert_eq(write(bad, &full, sizeof full), (ssize_t)sizeof full);
	int good = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int cfd = open_in_mnt("a/memory.oom_control", O_RDONLY);
	cr_assert_eq(reg("a", bad, cfd), 0);
	cr_assert_eq(reg("a", good, cfd), 0);
	for (int i = 0; i < 3; i++) {
		gint64 t0 = g_get_monotonic_time();
		stub_controller_notify(ctl, id); /* what the kill path's thread calls */
		cr_assert_lt(g_get_monotonic_time() - t0, 100000, "the hook only queues");
		fs_evctl_sync(fs->evctl);
		cr_assert_lt(g_get_monotonic_time() - t0, 1000000, "the notifier did not wait");
		cr_assert_eq(fx_drain(good), 1, "the listener beside it heard onset %d", i);
	}
	/* a counter that is full wakes its reader already: it stays registered */
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 2);
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(good), 1, "the rmdir signal");
	close(cfd);
	close(good);
	close(bad);
}

/* Issue 10: the control descriptor is identified from procfs, never taken: a
 * closed eventfd number after registration, or a control fd closed at once, change
 * nothing; a listener keeps hearing through our own reference. */
Test(evctl, survives_the_caller_closing_both)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int keep = dup(efd);
	int cfd = open_in_mnt("a/memory.oom_control", O_RDONLY);
	cr_assert_eq(reg("a", efd, cfd), 0);
	close(cfd);
	close(efd);
	stub_controller_notify(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(keep), 1);
	close(keep);
}

/* A process may hold FS_EC_MAX_PER_CGROUP listeners of one
 * cgroup (256); the next gets ENOMEM, what memcg_write_event_control answered when it
 * could not allocate one; other cgroups still take its registrations. */
Test(evctl, bounds_answer_enomem, .timeout = 60)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int cfd = open_in_mnt("a/memory.oom_control", O_RDONLY);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (int i = 0; i < 256; i++)
		cr_assert_eq(reg("a", efd, cfd), 0, "registration %d", i);
	cr_assert_eq(reg("a", efd, cfd), ENOMEM);
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 256);
	int cfd_b = open_in_mnt("a/b/memory.oom_control", O_RDONLY);
	cr_assert_eq(reg("a/b", efd, cfd_b), ENOMEM, "per process: 256 in all");
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(reg("a/b", efd, cfd_b), 0, "room again once they are gone");
	close(cfd_b);
	close(cfd);
	close(efd);
}

Test(evctl, drops_listeners_of_exited_processes)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	g_autofree char *ctlp = in_mnt("a/memory.oom_control");
	g_autofree char *evp = in_mnt("a/cgroup.event_control");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* only system calls here: the parent's FUSE threads serve us */
		int efd = eventfd(0, 0);
		int cfd = open(ctlp, O_RDONLY);
		int ev = open(evp, O_WRONLY);
		char line[32];
		int n = snprintf(line, sizeof line, "%d %d", efd, cfd);
		_exit(write(ev, line, (size_t)n) == n ? 0 : 1);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child registered");
	size_t left = 1;
	for (int i = 0; i < 100 && left; i++) {
		left = fs_evctl_count(fs->evctl, id);
		g_usleep(10000);
	}
	cr_assert_eq(left, 0, "the exited listener was dropped");
}
