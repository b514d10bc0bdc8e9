/* test_v1notify.c — usage thresholds and memory.pressure_level through
 * cgroup.event_control (the fixture of fixture.h: a/memory.current is a plain file the
 * test writes, the sampler of ec_levels.c reads it). What v1 answers for bad
 * arguments (6.1: page_counter_memparse, vmpressure_register_event), the crossing
 * signals in both directions, OOM onsets kept apart, the rmdir signal, and the
 * sampler's idleness with nothing registered. PSI triggers need a kernel: the VM
 * scenario d-v1notify. Root + /dev/fuse. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "oomd/shadowfs.h"
#include "../fs_private.h"
#include "stub_controller.h"
#include "fixture.h"
#include "oomd/v1events.h"

static void init_v1(void)
{
	fx_v1_layout = true;
	fx_setup();
	if (!skipped) {
		put("a/memory.current", "4194304\n");
		put("a/b/memory.current", "0\n");
		put("a/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	}
}

TestSuite(v1notify, .init = init_v1, .fini = fx_teardown, .timeout = 30);

Test(v1notify, threshold_arguments_as_v1)
{
	SKIP_UNLESS_READY();
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	int ub = open_in_mnt("a/b/memory.usage_in_bytes", O_RDONLY);
	int lim = open_in_mnt("a/memory.limit_in_bytes", O_RDONLY);
	cr_assert_eq(fx_register("a", efd, u, "16x"), EINVAL);
	cr_assert_eq(fx_register("a", efd, u, " 16M"), EINVAL, "the arguments are not stripped");
	cr_assert_eq(fx_register("a", efd, u, "16 M"), EINVAL);
	cr_assert_eq(fx_register("a", efd, u, "max"), EINVAL);
	cr_assert_eq(fx_register("a", efd, ub, "16M"), EINVAL, "another cgroup's usage file");
	cr_assert_eq(fx_register("a", efd, lim, "16M"), EINVAL, "not a control file");
	cr_assert_eq(fx_register("a", 999, u, "16M"), EBADF);
	cr_assert_eq(fx_register("a", efd, 998, "16M"), EBADF);
	cr_assert_eq(fx_register("a", u, u, "16M"), EINVAL, "not an eventfd");
	cr_assert_eq(fs_evctl_count(fs->evctl, real_ino("a")), 0);
	cr_assert_eq(fx_register("a", efd, u, "16M"), 0);
	cr_assert_eq(fx_register("a", efd, u, "16m"), 0);
	cr_assert_eq(fx_register("a", efd, u, "0x1000"), 0);
	cr_assert_eq(fx_register("a", efd, u, "-1"), 0);
	cr_assert_eq(fx_register("a", efd, u, NULL), 0, "no argument: memparse of an empty string, 0");
	cr_assert_eq(fs_evctl_count(fs->evctl, real_ino("a")), 5);
	close(lim);
	close(ub);
	close(u);
	close(efd);
}

Test(v1notify, threshold_signals_each_crossing_and_the_rmdir)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	int oomfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int oc = open_in_mnt("a/memory.oom_control", O_RDONLY);
	cr_assert_eq(fx_register("a", efd, u, "16M"), 0);
	cr_assert_eq(fx_register("a", oomfd, oc, NULL), 0);
	cr_assert_eq(fx_wait_signal(efd, 300), 0, "4 MiB: below, quiet");
	put("a/memory.current", "20971520\n");
	cr_assert_eq(fx_wait_signal(efd, 1000), 1, "crossed upwards");
	cr_assert_eq(fx_wait_signal(efd, 300), 0, "once");
	put("a/memory.current", "16777216\n");
	cr_assert_eq(fx_wait_signal(efd, 300), 0, "at the threshold is still above");
	put("a/memory.current", "16773120\n");
	cr_assert_eq(fx_wait_signal(efd, 1000), 1, "crossed downwards");
	stub_controller_notify(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(oomfd), 1);
	cr_assert_eq(fx_drain(efd), 0, "an OOM onset is the OOM listeners' only");
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 1, "the rmdir signal");
	cr_assert_eq(fx_drain(oomfd), 1);
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 0);
	close(oc);
	close(oomfd);
	close(u);
	close(efd);
}

Test(v1notify, pressure_level_file_and_arguments)
{
	SKIP_UNLESS_READY();
	struct stat st;
	g_autofree char *p = in_mnt("a/memory.pressure_level");
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0, "mode 0 as v1's cftype without handlers");
	g_autofree char *pb = in_mnt("a/b/memory.pressure_level");
	cr_assert_neq(stat(pb, &st), 0, "no memory.pressure (no PSI): absent");
	cr_assert_eq(errno, ENOENT);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int pl = open_in_mnt("a/memory.pressure_level", O_RDONLY); /* root: as v1 */
	char buf[8];
	cr_assert_lt(read(pl, buf, sizeof buf), 0);
	cr_assert_eq(errno, EINVAL, "no read handler");
	cr_assert_eq(fx_register("a", efd, pl, "lo"), EINVAL);
	cr_assert_eq(fx_register("a", efd, pl, "low,"), EINVAL);
	cr_assert_eq(fx_register("a", efd, pl, "low,tree"), EINVAL);
	cr_assert_eq(fx_register("a", efd, pl, " low"), EINVAL);
	cr_assert_eq(fx_register("a", efd, pl, NULL), EINVAL, "no level");
	cr_assert_eq(fx_register("a", efd, pl, "low"), 0);
	cr_assert_eq(fx_register("a", efd, pl, "medium,hierarchy"), 0);
	cr_assert_eq(fx_register("a", efd, pl, "critical,local"), 0);
	cr_assert_eq(fx_register("a", efd, pl, "low,local,whatever"), 0, "a third token is ignored");
	cr_assert_eq(fs_evctl_count(fs->evctl, real_ino("a")), 4);
	stub_controller_notify(ctl, real_ino("a"));
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 0, "an OOM onset is no pressure event");
	stub_controller_removed(ctl, real_ino("a"));
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 4, "the rmdir signal, once per registration");
	close(pl);
	close(efd);
}

/* A limit event (memory.events.local of a/b moves: the fixture's file is written, inotify
 * sees it as it sees kernfs' notification) walks up as vmpressure_work_fn: a/b's listener,
 * then a's hierarchy listener; a's default one not (heard below), a's local one never. */
Test(v1notify, limit_events_walk_up_as_v1)
{
	SKIP_UNLESS_READY();
	const char *zero = "max 0\nhigh 0\noom 0\noom_kill 0\n";
	put("a/memory.events.local", zero);
	put("a/b/memory.events.local", zero);
	put("a/b/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	int child = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int crit = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int def = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int hier = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int loc = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int plb = open_in_mnt("a/b/memory.pressure_level", O_RDONLY);
	int pla = open_in_mnt("a/memory.pressure_level", O_RDONLY);
	cr_assert_eq(fx_register("a/b", child, plb, "low"), 0);
	cr_assert_eq(fx_register("a/b", crit, plb, "critical"), 0);
	cr_assert_eq(fx_register("a", def, pla, "low"), 0);
	cr_assert_eq(fx_register("a", hier, pla, "low,hierarchy"), 0);
	cr_assert_eq(fx_register("a", loc, pla, "low,local"), 0);
	g_usleep(300000); /* the levels thread arms its watches */
	fx_rewrite("a/b/memory.events.local", "max 3\nhigh 0\noom 0\noom_kill 0\n");
	cr_assert_eq(fx_wait_signal(child, 1000), 1, "a limit hit of a/b: low");
	cr_assert_eq(fx_wait_signal(hier, 500), 1, "hierarchy: always");
	cr_assert_eq(fx_drain(crit), 0, "a limit hit is no critical event");
	cr_assert_eq(fx_drain(def), 0, "default: heard below");
	cr_assert_eq(fx_drain(loc), 0, "local: not its own limit");
	fx_rewrite("a/b/memory.events.local", "max 3\nhigh 0\noom 1\noom_kill 1\n");
	cr_assert_eq(fx_wait_signal(crit, 1000), 1, "an OOM of a/b: critical");
	cr_assert_eq(fx_wait_signal(child, 500), 1, "critical reaches low listeners too");
	cr_assert_eq(fx_wait_signal(hier, 500), 1);
	cr_assert_eq(fx_drain(def) + fx_drain(loc), 0);
	fx_rewrite("a/memory.events.local", "max 1\nhigh 0\noom 0\noom_kill 0\n");
	cr_assert_eq(fx_wait_signal(def, 1000), 1, "a's own limit: its default listener");
	cr_assert_eq(fx_wait_signal(loc, 500), 1, "and its local one");
	cr_assert_eq(fx_wait_signal(hier, 500), 1);
	cr_assert_eq(fx_drain(child), 0, "nothing goes down the tree");
	close(pla);
	close(plb);
	close(loc);
	close(hier);
	close(def);
	close(crit);
	close(child);
}

/* Issue 10's bounds count every kind of listener together: a process at its 256 (thresholds
 * and pressure levels) gets ENOMEM for one more of any kind, and room again once its
 * listeners are gone; 256 thresholds sampled cost one wake-up per period, not 256. */
Test(v1notify, bounds_count_every_kind, .timeout = 60)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	int pl = open_in_mnt("a/memory.pressure_level", O_RDONLY);
	int oc = open_in_mnt("a/memory.oom_control", O_RDONLY);
	for (int i = 0; i < 200; i++)
		cr_assert_eq(fx_register("a", efd, u, "1G"), 0, "threshold %d", i);
	for (int i = 0; i < 56; i++)
		cr_assert_eq(fx_register("a", efd, pl, "low"), 0, "level %d", i);
	cr_assert_eq(fx_register("a", efd, oc, NULL), ENOMEM, "an OOM listener beyond the 256");
	cr_assert_eq(fx_register("a", efd, u, "2G"), ENOMEM);
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 256);
	put("a/memory.current", "2147483648\n");
	cr_assert_eq(fx_wait_signal(efd, 1000), 200, "each threshold crossed once, in one period");
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_register("a/b", efd, open_in_mnt("a/b/memory.oom_control", O_RDONLY), NULL), 0,
		     "room again once they are gone");
	close(oc);
	close(pl);
	close(u);
	close(efd);
}

/* voluntary context switches of our thread called name */
static long switches_of(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *t;
	long n = -1;
	while (d && (t = readdir(d))) {
		char path[300];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
		g_autofree char *comm = NULL;
		if (!g_file_get_contents(path, &comm, NULL, NULL) || strncmp(comm, name, strlen(name)) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", t->d_name);
		g_autofree char *st = NULL;
		if (!g_file_get_contents(path, &st, NULL, NULL))
			continue;
		char *v = strstr(st, "voluntary_ctxt_switches:");
		if (v)
			n = strtol(v + strlen("voluntary_ctxt_switches:"), NULL, 10);
	}
	if (d)
		closedir(d);
	return n;
}

Test(v1notify, sampler_sleeps_while_nothing_is_registered)
{
	SKIP_UNLESS_READY();
	long a = -1;
	for (int i = 0; i < 100 && a < 0; i++) { /* the thread names itself once it runs */
		g_usleep(10000);
		a = switches_of("oomd-fs-levels");
	}
	cr_assert_geq(a, 0, "the levels thread is there");
	g_usleep(200000); /* its first look at the (empty) set of listeners */
	a = switches_of("oomd-fs-levels");
	g_usleep(1000000);
	cr_assert_eq(switches_of("oomd-fs-levels"), a, "no wake-up in 1 s with nothing registered");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	cr_assert_eq(fx_register("a", efd, u, "1G"), 0);
	long b = switches_of("oomd-fs-levels");
	g_usleep(1000000);
	long woke = switches_of("oomd-fs-levels") - b;
	cr_assert(woke >= 5 && woke <= 15, "about one sample per %d ms: %ld in 1 s", OD_THR_PERIOD_MS, woke);
	stub_controller_removed(ctl, real_ino("a"));
	fs_evctl_sync(fs->evctl);
	g_usleep(300000);
	long c = switches_of("oomd-fs-levels");
	g_usleep(1000000);
	cr_assert_eq(switches_of("oomd-fs-levels"), c, "asleep again once the last threshold went");
	close(u);
	close(efd);
}

/* The default (v2) layout serves memory.usage_in_bytes and memory.pressure_level too: the
 * same registrations work there; memsw is the v1 layout's only. */
static void init_v2(void)
{
	fx_v1_layout = false;
	fx_setup();
	if (!skipped) {
		put("a/memory.current", "4194304\n");
		put("a/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	}
}

TestSuite(v1notify_v2, .init = init_v2, .fini = fx_teardown, .timeout = 30);

Test(v1notify_v2, thresholds_and_levels_in_the_default_layout)
{
	SKIP_UNLESS_READY();
	g_autofree char *u = slurp("a/memory.usage_in_bytes");
	cr_assert_str_eq(u, "4194304\n");
	cr_assert_eq(poke("a/memory.usage_in_bytes", "0"), EINVAL, "read-only, as in v1");
	g_autofree char *msw = in_mnt("a/memory.memsw.usage_in_bytes");
	cr_assert_neq(access(msw, F_OK), 0, "no memsw in the default layout");
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int ufd = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	int cur = open_in_mnt("a/memory.current", O_RDONLY);
	int pl = open_in_mnt("a/memory.pressure_level", O_RDONLY);
	cr_assert_eq(fx_register("a", efd, cur, "16M"), EINVAL, "memory.current is no control file");
	cr_assert_eq(fx_register("a", efd, ufd, "16M"), 0);
	cr_assert_eq(fx_register("a", efd, pl, "critical,hierarchy"), 0);
	put("a/memory.current", "33554432\n");
	cr_assert_eq(fx_wait_signal(efd, 1000), 1, "crossed upwards");
	close(pl);
	close(cur);
	close(ufd);
	close(efd);
}
