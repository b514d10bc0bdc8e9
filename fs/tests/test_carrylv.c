/* test_carrylv.c — usage thresholds and pressure levels outlive the server (ec_carry.c):
 * a registration through the mount is recorded with what it listens to; a successor
 * (here the mounted server's own evctl, given the records as after a restart) re-takes
 * each kind from the process holding its eventfd (this one), signals a threshold at the
 * first crossing after the re-take and never for the restart itself, a pressure listener
 * at the next limit event, and counts them in the bounds as live registrations. The
 * fixture of fixture.h, v1 layout; PSI and the real restart: VM scenario f-levels-restart.
 * Root + /dev/fuse. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../ec_private.h"
#include "../fs_private.h"
#include "fixture.h"
#include "oomd/v1events.h"
#include "stub_controller.h"

static const char *zero_events = "max 0\nhigh 0\noom 0\noom_kill 0\n";

static void init_v1(void)
{
	fx_v1_layout = true;
	fx_setup();
	if (!skipped) {
		put("a/memory.current", "20971520\n"); /* 20 MiB: above a 16M threshold */
		put("a/memory.swap.current", "0\n");
		put("a/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
		put("a/memory.events.local", zero_events);
	}
}

TestSuite(carrylv, .init = init_v1, .fini = fx_teardown, .timeout = 60);

static int carry_memfd(fs_carry **c)
{
	int fd = memfd_create("carry", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	*c = fs_carry_map(fd, NULL);
	cr_assert_not_null(*c);
	return fd;
}

static uint64_t eventfd_id_of(int efd)
{
	char p[64];
	g_autofree char *info = NULL;
	snprintf(p, sizeof p, "/proc/self/fdinfo/%d", efd);
	cr_assert(g_file_get_contents(p, &info, NULL, NULL));
	const char *at = strstr(info, "eventfd-id:");
	cr_assert_not_null(at);
	return g_ascii_strtoull(at + 11, NULL, 10);
}

static bool count_is(fs_evctl *e, uint64_t id, size_t n)
{
	for (int i = 0; i < 500; i++) {
		if (fs_evctl_count(e, id) == n)
			return true;
		g_usleep(10000);
	}
	return false;
}

Test(carrylv, registrations_are_recorded_with_what_they_listen_to)
{
	SKIP_UNLESS_READY();
	fs_carry *c;
	int mfd = carry_memfd(&c);
	fs_evctl_carry(fs->evctl, fs, c, false);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	int m = open_in_mnt("a/memory.memsw.usage_in_bytes", O_RDONLY);
	int pl = open_in_mnt("a/memory.pressure_level", O_RDONLY);
	int oc = open_in_mnt("a/memory.oom_control", O_RDONLY);
	cr_assert_eq(fx_register("a", efd, u, "16M"), 0);
	cr_assert_eq(fx_register("a", efd, m, "-1"), 0);
	cr_assert_eq(fx_register("a", efd, pl, "medium,hierarchy"), 0);
	cr_assert_eq(fx_register("a", efd, oc, NULL), 0);
	uint64_t id = real_ino("a"), eid = eventfd_id_of(efd);
	bool seen[4] = { false };
	for (int s = 0; s < FS_CARRY_SLOTS; s++) {
		fs_carried_listener r;
		if (!fs_carry_listener_get(c, s, &r))
			continue;
		cr_assert(r.cgroup == id && r.eventfd_id == eid && r.tgid == getpid() && r.who_known && !r.cg_root);
		cr_assert_eq(s < FS_CARRY_LISTENERS, r.kind == EC_OOM, "slot %d, kind %u", s, r.kind);
		cr_assert_lt(r.kind, 4);
		cr_assert_not(seen[r.kind], "kind %u twice", r.kind);
		seen[r.kind] = true;
		if (r.kind == EC_USAGE)
			cr_assert_eq(r.threshold, 16u << 20);
		if (r.kind == EC_MEMSW)
			cr_assert_eq(r.threshold, UINT64_MAX, "\"-1\": unlimited");
		if (r.kind == EC_PRESSURE)
			cr_assert(r.level == OD_VMP_MEDIUM && r.mode == OD_VMP_HIERARCHY);
	}
	cr_assert(seen[EC_OOM] && seen[EC_USAGE] && seen[EC_MEMSW] && seen[EC_PRESSURE]);
	/* gone with its cgroup: no record left for a successor */
	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(efd), 4, "the rmdir signal");
	for (int s = 0; s < FS_CARRY_SLOTS; s++) {
		fs_carried_listener r;
		cr_assert_not(fs_carry_listener_get(c, s, &r), "slot %d still recorded", s);
	}
	close(oc);
	close(pl);
	close(m);
	close(u);
	close(efd);
	fs_carry_free(c);
	close(mfd);
}

/* The fixture's directories have no kernfs handles: carried ids are opened by path. */
static int open_fixture_cgroup(void *ud, uint64_t id)
{
	(void)ud;
	const char *cgs[] = { "a", "a/b" };
	for (size_t i = 0; i < G_N_ELEMENTS(cgs); i++)
		if (real_ino(cgs[i]) == id) {
			g_autofree char *p = g_build_filename(fixture, cgs[i], NULL);
			return open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
	return -1;
}

Test(carrylv, a_successor_retakes_each_kind_without_a_spurious_crossing)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	fs_carry *c;
	int mfd = carry_memfd(&c);
	int thr = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), sw = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int lvl = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), oom = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fs_carried_listener base = { .cgroup = id, .starttime = ec_proc_starttime(getpid()), .tgid = getpid(),
				     .uid = getuid(), .who_known = true, .principal = 0, .root = true };
	fs_carried_listener r = base;
	r.eventfd_id = eventfd_id_of(thr);
	r.kind = EC_USAGE;
	r.threshold = 16u << 20; /* usage 20 MiB: above it before and after the restart */
	cr_assert_geq(fs_carry_listener_put(c, &r), FS_CARRY_LISTENERS);
	r.eventfd_id = eventfd_id_of(sw);
	r.kind = EC_MEMSW;
	r.threshold = 32u << 20;
	cr_assert_geq(fs_carry_listener_put(c, &r), FS_CARRY_LISTENERS);
	r = base;
	r.eventfd_id = eventfd_id_of(lvl);
	r.kind = EC_PRESSURE;
	r.level = OD_VMP_LOW;
	r.mode = OD_VMP_LOCAL;
	cr_assert_geq(fs_carry_listener_put(c, &r), FS_CARRY_LISTENERS);
	r = base;
	r.eventfd_id = eventfd_id_of(oom);
	cr_assert_geq(fs_carry_listener_put(c, &r), 0);

	fs->evctl->open_cgroup = open_fixture_cgroup;
	cr_assert_eq(fs_evctl_carry(fs->evctl, fs, c, true), 4);
	cr_assert(count_is(fs->evctl, id, 4), "re-taken: %zu", fs_evctl_count(fs->evctl, id));
	cr_assert_eq(fx_wait_signal(thr, 400) + fx_wait_signal(sw, 100), 0, "a restart is no crossing");
	fx_rewrite("a/memory.current", "41943040\n"); /* 40 MiB */
	cr_assert_eq(fx_wait_signal(sw, 1000), 1, "the memsw threshold crossed upwards");
	cr_assert_eq(fx_drain(thr), 0, "16M: still above");
	fx_rewrite("a/memory.current", "8388608\n"); /* 8 MiB */
	cr_assert_eq(fx_wait_signal(thr, 1000), 1, "16M crossed downwards");
	cr_assert_eq(fx_wait_signal(sw, 500), 1, "32M crossed downwards");
	g_usleep(200000); /* the levels thread watches a's limit events */
	fx_rewrite("a/memory.events.local", "max 1\nhigh 0\noom 0\noom_kill 0\n");
	cr_assert_eq(fx_wait_signal(lvl, 1000), 1, "a's own limit: its local low listener");
	stub_controller_notify(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(oom), 1, "the OOM listener");
	cr_assert_eq(fx_drain(thr) + fx_drain(sw) + fx_drain(lvl), 0, "an onset is the OOM listeners' only");

	/* the bounds count them as live registrations: 256 for root on one cgroup, as for one
	 * process (ec_bounds.h) */
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int u = open_in_mnt("a/memory.usage_in_bytes", O_RDONLY);
	for (int i = 0; i < EC_MAX_PER_PROCESS - 4; i++)
		cr_assert_eq(fx_register("a", efd, u, "1G"), 0, "registration %d", i);
	cr_assert_eq(fx_register("a", efd, u, "1G"), ENOMEM, "the 4 carried count");
	cr_assert_eq(fs_evctl_count(fs->evctl, id), EC_MAX_PER_PROCESS);

	stub_controller_removed(ctl, id);
	fs_evctl_sync(fs->evctl);
	cr_assert_eq(fx_drain(thr) + fx_drain(sw) + fx_drain(lvl) + fx_drain(oom), 4, "each hears the rmdir");
	close(u);
	close(efd);
	close(oom);
	close(lvl);
	close(sw);
	close(thr);
	fs_carry_free(c);
	close(mfd);
}

/* A record whose eventfd nobody holds is dropped and frees its slot; one of a cgroup gone
 * meanwhile gets v1's last signal. */
Test(carrylv, a_lost_eventfd_is_dropped_a_removed_cgroup_signalled)
{
	SKIP_UNLESS_READY();
	uint64_t id = real_ino("a");
	fs_carry *c;
	int mfd = carry_memfd(&c);
	int held = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fs_carried_listener r = { .cgroup = id, .eventfd_id = eventfd_id_of(held) + 1000000, .tgid = getpid(),
				  .starttime = ec_proc_starttime(getpid()), .uid = getuid(), .who_known = true,
				  .root = true, .kind = EC_PRESSURE, .level = OD_VMP_CRITICAL };
	int lost = fs_carry_listener_put(c, &r);
	r.cgroup = id + 424242; /* no such cgroup any more */
	r.eventfd_id = eventfd_id_of(held);
	r.kind = EC_USAGE;
	r.threshold = 1u << 20;
	int gone = fs_carry_listener_put(c, &r);
	fs->evctl->open_cgroup = open_fixture_cgroup;
	cr_assert_eq(fs_evctl_carry(fs->evctl, fs, c, true), 2);
	cr_assert_eq(fx_wait_signal(held, 2000), 1, "the removed cgroup's threshold: its last signal");
	fs_carried_listener x;
	for (int i = 0; i < 200 && (fs_carry_listener_get(c, lost, &x) || fs_carry_listener_get(c, gone, &x)); i++)
		g_usleep(10000);
	cr_assert_not(fs_carry_listener_get(c, lost, &x), "the lost one's slot is freed");
	cr_assert_not(fs_carry_listener_get(c, gone, &x), "so is the signalled one's");
	cr_assert_eq(fs_evctl_count(fs->evctl, id), 0);
	close(held);
	fs_carry_free(c);
	close(mfd);
}
