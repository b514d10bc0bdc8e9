/* test_ctl_race.c — issue 19, failure 5: a limit and a delay written through the shadow
 * are in force, the real memory.max including the ceiling, when the writes return, and
 * stay so, whatever the watcher's loop does with the same cgroup meanwhile. The loop's
 * part is played by a thread that does what the watcher does for a cgroup made through
 * the shadow (add_child with the cgroup known: od_controller_add_from_loop, then
 * od_controller_real_max_changed and od_controller_sample, and the inotify echoes of
 * memory.max), over and over, while this thread makes the cgroup and writes as a FUSE
 * worker does (op_mkdir's od_controller_add, then the two writes). A race, not a replay:
 * many rounds, each on a new cgroup. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_fixture.h"
#include "oomd/controller.h"

#define ROUNDS 300
#define CEIL (64 * MiB)

typedef struct {
	uint64_t parent;
	int fd; /* the round's cgroup, O_PATH */
	uint64_t id;
	gint round;  /* the round the loop should work on (-1: stop, -2: between rounds) */
	gint busy;   /* rounds the loop worked on */
} loop_ctx;

static void put_in(const char *dir, const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(p, content, -1, NULL), "fixture %s", p);
}

/* One whole value, as a read of cgroupfs sees it (ctl_fixture.c, knob_lock): the
 * loop's re-asserts may be writing the same file meanwhile. */
static char *get_in(const char *dir, const char *name)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	return knob_read(p);
}

/* A cgroup directory of the fixture, as the kernel makes it (memory.max "max"). */
static char *make_cgroup(int i)
{
	char *dir = g_strdup_printf("%s/n%d", fixture, i);
	cr_assert_eq(g_mkdir(dir, 0755), 0);
	put_in(dir, "memory.max", "max\n");
	put_in(dir, "memory.high", "max\n");
	put_in(dir, "memory.current", "4096\n");
	put_in(dir, "memory.events", events0);
	put_in(dir, "memory.events.local", events0);
	put_in(dir, "cgroup.events", "populated 1\nfrozen 0\n");
	put_in(dir, "cgroup.freeze", "0\n");
	return dir;
}

static gpointer loop_main(gpointer data)
{
	loop_ctx *l = data;
	int seen = -2;
	for (;;) {
		int r = g_atomic_int_get(&l->round);
		if (r == -1)
			return NULL;
		if (r == seen || r == -2) { /* -2: between rounds */
			/* the echoes of the worker's memory.max writes, read late */
			uint64_t id = __atomic_load_n(&l->id, __ATOMIC_ACQUIRE);
			if (id)
				od_controller_real_max_changed(ctl, id);
			g_thread_yield();
			continue;
		}
		seen = r;
		int fd = __atomic_load_n(&l->fd, __ATOMIC_ACQUIRE);
		uint64_t id = 0;
		/* IN_CREATE: the watcher's add (known or not), then the catch-up of a known one */
		if (od_controller_add_from_loop(ctl, l->parent, fd, &id) == 0) {
			od_controller_real_max_changed(ctl, id);
			od_controller_sample(ctl, id);
		}
		g_atomic_int_inc(&l->busy);
	}
}

Test(ctl_race, shadow_writes_are_in_force_when_they_return_whatever_the_loop_does, .timeout = 120)
{
	setup(OE_KILL_KERNEL);
	struct stat st;
	cr_assert_eq(fstat(root_fd, &st), 0);
	loop_ctx l = { .parent = st.st_ino, .fd = -1, .round = -2 };
	GThread *t = g_thread_new("loop", loop_main, &l);
	char want_max[32], want_high[32];
	g_snprintf(want_max, sizeof want_max, "%" G_GUINT64_FORMAT, L + CEIL);
	g_snprintf(want_high, sizeof want_high, "%" G_GUINT64_FORMAT, L);
	int wrong_at_return = 0, wrong_later = 0;
	for (int i = 0; i < ROUNDS; i++) {
		g_autofree char *dir = make_cgroup(i);
		int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		__atomic_store_n(&l.id, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&l.fd, fd, __ATOMIC_RELEASE);
		g_atomic_int_set(&l.round, i); /* the loop hears of the mkdir from now on */
		if (i % 3 == 1)
			g_usleep(50); /* now and then the loop's add goes first */
		uint64_t id = 0;
		cr_assert_eq(od_controller_add(ctl, l.parent, fd, &id), 0); /* op_mkdir */
		__atomic_store_n(&l.id, id, __ATOMIC_RELEASE);
		cr_assert_eq(od_controller_write_limit(ctl, id, L, -1), 0);
		cr_assert_eq(od_controller_write_delay(ctl, id, 1500), 0);
		/* Prefixes, as holds() in ctl_fixture.c compares. */
		g_autofree char *m = get_in(dir, "memory.max");
		g_autofree char *h = get_in(dir, "memory.high");
		if (!g_str_has_prefix(m, want_max) || !g_str_has_prefix(h, want_high)) {
			wrong_at_return++;
			cr_log_error("round %d: memory.max %s, memory.high %s as the writes returned", i, m, h);
		}
		/* what the loop still does with this round's cgroup must not undo them */
		while (g_atomic_int_get(&l.busy) <= i)
			g_usleep(100);
		g_usleep(200);
		g_atomic_int_set(&l.round, -2);
		oe_view v;
		cr_assert(od_controller_view(ctl, id, &v));
		cr_assert(v.managed);
		cr_assert_eq(v.limit, L, "round %d: L became %" G_GUINT64_FORMAT, i, v.limit);
		cr_assert_eq(v.real_max, L + CEIL);
		g_free(m);
		m = get_in(dir, "memory.max");
		if (!g_str_has_prefix(m, want_max)) {
			wrong_later++;
			cr_log_error("round %d: memory.max %s after the loop's catch-up", i, m);
		}
		__atomic_store_n(&l.id, 0, __ATOMIC_RELEASE);
		od_controller_remove(ctl, id);
		close(fd);
	}
	g_atomic_int_set(&l.round, -1);
	g_thread_join(t);
	cr_assert_eq(wrong_at_return + wrong_later, 0,
		     "%d of %d rounds: real knobs not L + ceiling and L as the writes returned; %d: "
		     "undone afterwards", wrong_at_return, ROUNDS, wrong_later);
	teardown();
}
