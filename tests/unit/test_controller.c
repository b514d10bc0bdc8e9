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

#include "oomd/controller.h"

#define MiB ((uint64_t)1024 * 1024)
#define L (32 * MiB)

static char fixture[64];
static int root_fd = -1, g_fd = -1;
static od_controller *ctl;
static uint64_t gid;

static void put(const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, "g", name, NULL);
	cr_assert(g_file_set_contents(p, content, -1, NULL), "fixture %s", p);
}

static char *get(const char *name)
{
	g_autofree char *p = g_build_filename(fixture, "g", name, NULL);
	char *s = NULL;
	cr_assert(g_file_get_contents(p, &s, NULL, NULL), "read %s", p);
	return g_strstrip(s);
}

static const char events0[] = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n";
static const char events1[] = "low 0\nhigh 3\nmax 1\noom 0\noom_kill 0\noom_group_kill 0\n";

static void setup(oe_kill_mode mode)
{
	strcpy(fixture, "/tmp/oomd-ctl-XXXXXX");
	cr_assert_not_null(g_mkdtemp(fixture));
	g_autofree char *g = g_build_filename(fixture, "g", NULL);
	cr_assert_eq(g_mkdir(g, 0755), 0);
	put("memory.max", "max\n");
	put("memory.high", "max\n");
	put("memory.current", "4096\n");
	put("memory.events", events0);
	put("memory.events.local", events0);
	put("cgroup.events", "populated 1\nfrozen 0\n");
	put("cgroup.procs", "101\n102\n");
	put("cgroup.kill", "");
	put("cgroup.freeze", "0\n");
	root_fd = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g_fd = open(g, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(root_fd >= 0 && g_fd >= 0);

	oe_config cfg;
	oe_config_defaults(&cfg);
	cfg.kill_mode = mode;
	ctl = od_controller_new(root_fd, &cfg);
	cr_assert_not_null(ctl);
	uint64_t rid;
	cr_assert_eq(od_controller_add(ctl, 0, root_fd, &rid), 0);
	cr_assert_eq(od_controller_add(ctl, rid, g_fd, &gid), 0);
	cr_assert_eq(od_controller_write_limit(ctl, gid, L), 0);
	cr_assert_eq(od_controller_write_delay(ctl, gid, 200), 0);
	/* Managed: the real memory.max is L plus the ceiling, written inline (this thread). */
	g_autofree char *max = get("memory.max");
	cr_assert_gt(g_ascii_strtoull(max, NULL, 10), L, "memory.max %s", max);
}

/* Usage over L and a max event: the sample from this thread starts a hold. */
static int64_t start_hold(void)
{
	char cur[32];
	snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L + MiB);
	put("memory.current", cur);
	put("memory.events", events1);
	put("memory.events.local", events1);
	int64_t t0 = od_now();
	od_controller_sample(ctl, gid);
	oe_view v;
	cr_assert(od_controller_view(ctl, gid, &v));
	cr_assert(v.in_hold, "no hold after a sample over L");
	return t0;
}

/* A knob's value as written last. The kernel replaces a cgroup file's value on each
 * write; a regular file keeps the tail of a longer value written before it (the
 * daemon writes without O_TRUNC, as cgroupfs needs none), so only the written
 * digits are compared. */
static bool holds(const char *file, const char *want)
{
	g_autofree char *s = get(file);
	return *want ? g_str_has_prefix(s, want) : *s == '\0';
}

static bool wait_for_kill(int64_t limit_ms, const char *file, const char *want)
{
	for (int64_t t = 0; t < limit_ms; t += 5) {
		if (holds(file, want))
			return true;
		g_usleep(5000);
	}
	return false;
}

static void teardown(void)
{
	od_controller_free(ctl);
	close(g_fd);
	close(root_fd);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", fixture);
	cr_expect_eq(system(cmd), 0);
}

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
	int p2;
	cr_assert_eq(thread_policy("oomd-actuator", &p2), SCHED_OTHER, "the other actuators are not real-time");
	teardown();
}

/* The watchdog is fed only while the deadline thread beats (fdstore.c): with a
 * heartbeat it wakes without any deadline; without one it sleeps. */
Test(controller, the_deadline_thread_beats_for_the_watchdog, .timeout = 20)
{
	setup(OE_KILL_GROUP);
	od_controller_set_heartbeat(ctl, 20);
	od_controller_start_deadlines(ctl);
	uint64_t b0 = od_controller_beats(ctl);
	g_usleep(400 * 1000);
	uint64_t b1 = od_controller_beats(ctl);
	cr_assert_geq(b1 - b0, 5, "%" G_GUINT64_FORMAT " beats in 400 ms at a 20 ms heartbeat", b1 - b0);
	od_controller_set_heartbeat(ctl, 0); /* the next wake-up is the last until a deadline */
	g_usleep(100 * 1000);
	uint64_t b2 = od_controller_beats(ctl);
	g_usleep(300 * 1000);
	cr_assert_eq(od_controller_beats(ctl), b2, "beats without a heartbeat or a deadline");
	teardown();
}
