/* test_controller.c — the controller's threads over a fixture directory laid out like
 * a cgroup (regular files stand in for the kernel's), with no glib main loop running:
 * a deadline is kept by the deadline thread alone, and a hand-back leaves no deadline
 * behind. The kill's timing under real pressure is the VM's job (f-pressure*); here
 * only who acts, and in what order. Each test runs in its own process. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctl_fixture.h"
#include "oomd/controller.h"
#include "oomd/persist.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

Test(controller, group_kill_comes_from_the_deadline_thread_without_a_main_loop, .timeout = 20)
{
	setup(OE_KILL_GROUP);
	od_controller_start_deadlines(ctl);
	int64_t t0 = start_hold();
	g_autofree char *before = get("cgroup.kill");
	cr_assert_str_empty(before, "killed at the hold's start");
	cr_assert(wait_for_kill(5000, "cgroup.kill", "1"), "no cgroup.kill write within 5 s of a 200 ms delay");
	int64_t took = od_now() - t0;
	cr_assert_geq(took, 200 * 1000000LL, "killed %.1f ms after the hold began, before its 200 ms delay",
		      took / 1e6);
	/* Rule 10: the processes cgroup.procs listed count as this cgroup's kills. */
	oe_view v;
	for (int i = 0; i < 200 && !(od_controller_view(ctl, gid, &v) && v.oom_kill == 2); i++)
		g_usleep(5000);
	cr_assert_eq(v.oom_kill, 2, "oom_kill after the group kill: %" G_GUINT64_FORMAT, v.oom_kill);
	teardown();
}

Test(controller, kernel_mode_kill_writes_memory_max_back_to_L, .timeout = 20)
{
	setup(OE_KILL_KERNEL);
	od_controller_start_deadlines(ctl);
	start_hold();
	char want[32];
	snprintf(want, sizeof want, "%" G_GUINT64_FORMAT, L);
	cr_assert(wait_for_kill(5000, "memory.max", want), "memory.max not back to L within 5 s of a 200 ms delay");
	g_autofree char *k = get("cgroup.kill");
	cr_assert_str_empty(k, "kernel mode wrote cgroup.kill");
	teardown();
}

Test(controller, no_deadline_thread_no_kill, .timeout = 20)
{
	/* --release-all and the FUSE tests run without it: a deadline then never acts. */
	setup(OE_KILL_GROUP);
	start_hold();
	g_usleep(400 * 1000);
	g_autofree char *k = get("cgroup.kill");
	cr_assert_str_empty(k, "killed without a deadline thread");
	teardown();
}

Test(controller, hand_back_leaves_no_kill_behind, .timeout = 20)
{
	setup(OE_KILL_GROUP);
	od_controller_start_deadlines(ctl);
	start_hold();
	od_controller_release_all(ctl);
	char want[32];
	snprintf(want, sizeof want, "%" G_GUINT64_FORMAT, L);
	cr_assert(holds("memory.max", want), "memory.max after the hand-back is not L");
	g_usleep(400 * 1000); /* twice the delay: a tick left running would kill by now */
	g_autofree char *k = get("cgroup.kill");
	cr_assert_str_empty(k, "killed after the hand-back");
	cr_assert(holds("memory.max", want), "memory.max changed after the hand-back");
	teardown();
}

static int count_fds(void)
{
	int n = 0;
	GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
	cr_assert_not_null(d);
	while (g_dir_read_name(d))
		n++;
	g_dir_close(d);
	return n;
}

Test(controller, a_removed_cgroup_leaves_no_descriptor, .timeout = 20)
{
	setup(OE_KILL_GROUP);
	od_controller_start_deadlines(ctl);
	start_hold(); /* a held cgroup keeps its files open: they must go too */
	g_usleep(50 * 1000);
	int before = count_fds();
	od_controller_remove(ctl, gid);
	int after = 0;
	for (int i = 0; i < 200 && (after = count_fds()) > before - 8; i++)
		g_usleep(5000); /* an actuator may still hold the last reference */
	cr_assert_leq(after, before - 8, "descriptors %d before the removal, %d after: the cgroup's "
		      "directory and its 7 kept files should be closed", before, after);
	teardown();
}

/* policy and rt_priority (stat fields 41 and 40) of each thread named comm, or -1. */
static int thread_policy(const char *comm, int *prio)
{
	GDir *d = g_dir_open("/proc/self/task", 0, NULL);
	cr_assert_not_null(d);
	int policy = -1;
	const char *t;
	while (policy < 0 && (t = g_dir_read_name(d))) {
		g_autofree char *cp = g_strdup_printf("/proc/self/task/%s/comm", t);
		g_autofree char *sp = g_strdup_printf("/proc/self/task/%s/stat", t);
		g_autofree char *c = NULL, *st = NULL;
		if (!g_file_get_contents(cp, &c, NULL, NULL) || !g_file_get_contents(sp, &st, NULL, NULL))
			continue;
		if (strcmp(g_strstrip(c), comm) != 0)
			continue;
		/* Fields after the comm's closing parenthesis start at field 3. */
		char **f = g_strsplit(strrchr(st, ')') + 2, " ", 0);
		cr_assert_geq(g_strv_length(f), 39);
		*prio = atoi(f[40 - 3]);
		policy = atoi(f[41 - 3]);
		g_strfreev(f);
	}
	g_dir_close(d);
	return policy;
}

Test(controller, deadline_thread_and_kill_actuator_run_at_the_rt_priority, .timeout = 20)
{
	if (geteuid() != 0)
		cr_skip_test("SKIP: SCHED_FIFO needs root (CAP_SYS_NICE)");
	setup(OE_KILL_GROUP);
	g_usleep(50 * 1000); /* the actuators are asleep on their queue before it is set */
	od_controller_set_rt_priority(ctl, 1);
	od_controller_start_deadlines(ctl);
	int pd = -1, pk = -1, prio = -1;
	for (int i = 0; i < 200 && !(pd == SCHED_FIFO && pk == SCHED_FIFO); i++) {
		g_usleep(5000);
		pd = thread_policy("oomd-deadlines", &prio);
		pk = thread_policy("oomd-killer", &prio);
	}
	cr_assert_eq(pd, SCHED_FIFO, "oomd-deadlines: policy %d, not SCHED_FIFO", pd);
	cr_assert_eq(pk, SCHED_FIFO, "oomd-killer: policy %d, not SCHED_FIFO", pk);
	cr_assert_eq(prio, 1, "oomd-killer: real-time priority %d, not 1", prio);
	/* -1 until an actuator has named itself (glib names a thread once it runs: under
	 * load that took longer than the 50 ms above, 1 run in 20) */
	int p2, po = -1;
	for (int i = 0; i < 1000 && po < 0; i++) {
		po = thread_policy("oomd-actuator", &p2);
		if (po < 0)
			g_usleep(5000);
	}
	cr_assert_eq(po, SCHED_OTHER, "the other actuators are not real-time (policy %d)", po);
	teardown();
}

/* ---- one order per cgroup (issue 10) ---------------------------------------- */

/* The notify hook blocks the first actuator that calls it until released: the batch
 * it runs (NOTIFY, PERSIST, FREEZE from the deadline thread's sample) stays queued
 * behind it meanwhile. */
static GMutex hook_lock;
static GCond hook_cond;
static bool hook_entered, hook_released;
static GThread *test_thread;

static void blocking_notify(void *ud, uint64_t id)
{
	(void)ud;
	(void)id;
	if (g_thread_self() == test_thread)
		return;
	g_mutex_lock(&hook_lock);
	if (!hook_entered) {
		hook_entered = true;
		g_cond_broadcast(&hook_cond);
		while (!hook_released)
			g_cond_wait(&hook_cond, &hook_lock);
	}
	g_mutex_unlock(&hook_lock);
}

static gpointer raise_limit(gpointer data)
{
	(void)data;
	return GINT_TO_POINTER(od_controller_write_limit(ctl, gid, 1024 * MiB, -1));
}

Test(controller, a_fuse_workers_thaw_never_overtakes_a_queued_freeze, .timeout = 30)
{
	setup(OE_KILL_KERNEL);
	cr_assert_eq(od_controller_write_delay(ctl, gid, 60000), 0); /* no kill in this test */
	test_thread = g_thread_self();
	od_hooks h = { .notify = blocking_notify };
	od_controller_set_hooks(ctl, &h);
	start_hold();
	od_controller_start_deadlines(ctl);
	/* The deadline thread's next sample (10 ms) finds a new OOM at the cgroup's own
	 * limit (NOTIFY) and usage past the freeze margin (PERSIST, FREEZE): one batch,
	 * handed to the actuators, whose NOTIFY blocks. */
	static const char oom1[] = "low 0\nhigh 3\nmax 1\noom 1\noom_kill 0\noom_group_kill 0\n";
	char cur[32];
	snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L + 16 * MiB);
	/* The OOM first: a sample between two of these writes must not see the usage
	 * (FREEZE) before the OOM (NOTIFY), or the FREEZE would land unblocked. */
	overwrite("memory.events", oom1);
	overwrite("memory.events.local", oom1);
	overwrite("memory.current", cur);
	gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	g_mutex_lock(&hook_lock);
	while (!hook_entered && g_cond_wait_until(&hook_cond, &hook_lock, until))
		;
	bool entered = hook_entered;
	g_mutex_unlock(&hook_lock);
	cr_assert(entered, "the deadline thread's batch never reached an actuator");
	cr_assert(holds("cgroup.freeze", "0"), "frozen before the queued FREEZE ran");

	/* A FUSE worker raises L far above the usage: the hold ends, and its THAW must come
	 * after the FREEZE emitted before it. */
	GThread *w = g_thread_new("fuse-worker", raise_limit, NULL);
	g_usleep(300 * 1000); /* ample for an inline THAW to land, were one allowed */
	g_mutex_lock(&hook_lock);
	hook_released = true;
	g_cond_broadcast(&hook_cond);
	g_mutex_unlock(&hook_lock);
	cr_assert_eq(GPOINTER_TO_INT(g_thread_join(w)), 0, "the limit write failed");

	oe_view v;
	bool thawed = false;
	for (int i = 0; i < 400 && !thawed; i++) {
		g_usleep(5000);
		thawed = od_controller_view(ctl, gid, &v) && !v.in_hold && !v.frozen &&
			 holds("cgroup.freeze", "0");
	}
	g_usleep(100 * 1000); /* nothing may freeze it after the thaw */
	g_autofree char *fz = get("cgroup.freeze");
	cr_assert(thawed && holds("cgroup.freeze", "0"),
		  "cgroup.freeze is %s after the hold ended (engine: in_hold %d, frozen %d): the "
		  "worker's THAW overtook the queued FREEZE", fz, v.in_hold, v.frozen);
	teardown();
}

/* ---- honest errors (issue 10) ---------------------------------------------- */

Test(controller, a_failed_kernel_write_returns_its_errno, .timeout = 20)
{
	setup(OE_KILL_KERNEL);
	/* memory.max that cannot be opened for writing: a directory (EISDIR). */
	g_autofree char *mx = g_build_filename(fixture, "g", "memory.max", NULL);
	cr_assert_eq(g_unlink(mx), 0);
	cr_assert_eq(g_mkdir(mx, 0755), 0);
	int r = od_controller_write_limit(ctl, gid, 2 * L, -1);
	cr_assert_eq(r, EISDIR, "write_limit returned %d (%s), the kernel write failed with EISDIR",
		     r, g_strerror(r));
	cr_assert_eq(g_rmdir(mx), 0);
	put("memory.max", "max\n");
	cr_assert_eq(od_controller_write_limit(ctl, gid, 2 * L, -1), 0, "the same write once it can land");
	teardown();
}

Test(controller, a_limit_write_goes_through_the_writers_open_file, .timeout = 20)
{
	/* The FUSE open of memory.max opened the real file: the engine's write of it is
	 * made through that descriptor, and only for that knob of that cgroup. Here the
	 * descriptor is another file, so where each write landed shows. */
	setup(OE_KILL_KERNEL);
	g_autofree char *other = g_build_filename(fixture, "g", "other", NULL);
	cr_assert(g_file_set_contents(other, "", 0, NULL));
	int fd = open(other, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	put("memory.max", "max\n");
	cr_assert_eq(od_controller_write_limit(ctl, gid, 3 * L, fd), 0);
	g_autofree char *via = knob_read(other);
	g_autofree char *mx = get("memory.max");
	/* a cgroup with a delay is held by the daemon: memory.max = L + the ceiling */
	guint64 wrote = g_ascii_strtoull(via, NULL, 10);
	cr_assert_geq(wrote, 3 * L, "the limit did not go through the writer's descriptor: \"%s\"", via);
	cr_assert_str_eq(mx, "max", "memory.max was opened and written besides (%s)", mx);
	char want[32];
	/* without a descriptor, by name as before */
	cr_assert_eq(od_controller_write_high(ctl, gid, 2 * L, -1), 0);
	g_autofree char *hi = get("memory.high");
	snprintf(want, sizeof want, "%" G_GUINT64_FORMAT, 2 * L);
	cr_assert_str_eq(hi, want, "memory.high not written by name without a descriptor");
	close(fd);
	teardown();
}

static bool set_immutable(int fd, bool on)
{
	int flags = 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return false;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
}

Test(controller, a_failed_state_write_stops_the_raise_it_protects, .timeout = 20)
{
	setup(OE_KILL_KERNEL);
	/* A second cgroup, unmanaged, whose state cannot be stored (an immutable
	 * directory refuses setxattr with EPERM). */
	g_autofree char *d = g_build_filename(fixture, "h", NULL);
	cr_assert_eq(g_mkdir(d, 0755), 0);
	static const char *files[][2] = {
		{ "memory.max", "33554432\n" }, { "memory.high", "max\n" }, { "memory.current", "4096\n" },
		{ "memory.events", events0 },    { "memory.events.local", events0 },
		{ "cgroup.events", "populated 1\nfrozen 0\n" }, { "cgroup.freeze", "0\n" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *p = g_build_filename(d, files[i][0], NULL);
		cr_assert(g_file_set_contents(p, files[i][1], -1, NULL));
	}
	int hfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(hfd, 0);
	uint64_t rid = 0, hid;
	struct stat st;
	cr_assert_eq(fstat(root_fd, &st), 0);
	rid = st.st_ino;
	cr_assert_eq(od_controller_add(ctl, rid, hfd, &hid), 0);
	if (!set_immutable(hfd, true))
		cr_skip_test("SKIP: FS_IMMUTABLE_FL on %s: %s", d, g_strerror(errno));
	int r = od_controller_write_delay(ctl, hid, 5000);
	set_immutable(hfd, false);
	cr_assert_eq(r, EPERM, "write_delay returned %d (%s): the state write failed with EPERM", r,
		     g_strerror(r));
	g_autofree char *p = g_build_filename(d, "memory.max", NULL);
	g_autofree char *mx = NULL;
	cr_assert(g_file_get_contents(p, &mx, NULL, NULL));
	cr_assert_eq(g_ascii_strtoull(mx, NULL, 10), L, "memory.max raised to %s without its state",
		     g_strstrip(mx));
	/* Once state can be stored, the next write stores it and raises. */
	cr_assert_eq(od_controller_write_delay(ctl, hid, 5000), 0);
	oe_persisted ps;
	cr_assert_eq(od_persist_load(hfd, &ps), 0, "no state after a successful write");
	cr_assert_eq(ps.delay_ms, 5000);
	g_free(mx);
	mx = NULL;
	cr_assert(g_file_get_contents(p, &mx, NULL, NULL));
	cr_assert_gt(g_ascii_strtoull(mx, NULL, 10), L, "memory.max not raised once its state was stored");
	close(hfd);
	teardown();
}

/* ---- state no one can forge (issue 10) ------------------------------------- */

Test(controller, legacy_user_state_is_removed_and_never_adopted, .timeout = 20)
{
	setup(OE_KILL_KERNEL);
	g_autofree char *d = g_build_filename(fixture, "u", NULL);
	cr_assert_eq(g_mkdir(d, 0755), 0);
	int ufd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(ufd, 0);
	static const char forged[] = "oomdelayfs-state 1 limit=max high=max delay=0 disable=1 "
				     "hold=1 spent=0 frozen=0 deadline=none gkills=0";
	cr_assert_eq(fsetxattr(ufd, OD_PERSIST_XATTR_LEGACY, forged, strlen(forged), 0), 0);
	oe_persisted p;
	cr_assert_eq(od_persist_load(ufd, &p), -ENODATA, "a user.* state was read as state");
	char buf[8];
	cr_assert_lt(fgetxattr(ufd, OD_PERSIST_XATTR_LEGACY, buf, sizeof buf), 0,
		     "the legacy attribute is still there");
	cr_assert_eq(errno, ENODATA);
	close(ufd);
	teardown();
}

/* The watchdog is fed only while the deadline thread beats (fdstore.c): with a
 * heartbeat it wakes without any deadline; without one it sleeps. Counted, not
 * timed: on a loaded 2-core host the thread got 1 wake-up in 400 ms at a 20 ms
 * heartbeat, so the test waits (up to 10 s) for 5 beats, and then, with the
 * heartbeat off, allows the at most 2 beats of the loop in ctl_deadline.c (the poll
 * under way ends, and the next pass counts once before blocking in read) over a
 * wait twice as long as those 5 beats took, in which a thread still beating would
 * have beaten about 10 times whatever the load. */
Test(controller, the_deadline_thread_beats_for_the_watchdog, .timeout = 30)
{
	setup(OE_KILL_GROUP);
	od_controller_set_heartbeat(ctl, 20);
	od_controller_start_deadlines(ctl);
	uint64_t b0 = od_controller_beats(ctl);
	int64_t t0 = od_now(), t = t0;
	while (od_controller_beats(ctl) - b0 < 5 && t - t0 < 10 * 1000000000LL) {
		g_usleep(5 * 1000);
		t = od_now();
	}
	uint64_t b1 = od_controller_beats(ctl);
	cr_assert_geq(b1 - b0, 5, "%" G_GUINT64_FORMAT " beats in %.0f ms at a 20 ms heartbeat",
		      b1 - b0, (t - t0) / 1e6);
	od_controller_set_heartbeat(ctl, 0);
	uint64_t b2 = od_controller_beats(ctl);
	g_usleep((gulong)MAX(2 * (t - t0) / 1000, 300 * 1000));
	cr_assert_leq(od_controller_beats(ctl) - b2, 2,
		      "%" G_GUINT64_FORMAT " beats in %.0f ms without a heartbeat or a deadline",
		      od_controller_beats(ctl) - b2, MAX(2 * (t - t0), 300000000LL) / 1e6);
	teardown();
}
