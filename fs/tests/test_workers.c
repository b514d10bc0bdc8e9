/* test_workers.c — the FUSE workers (fuse_io.h): a handler that keeps its worker (here a
 * delay write the stub controller holds, as the kernel holds a memory.max write in reclaim)
 * keeps no other caller waiting while a worker is left; nor does the handler of a request
 * that is quick as a rule and stalls (a read of memory.oom_control whose view the stub
 * holds, as a preempted vCPU or an allocation in reclaim holds one). Every idle worker reads
 * /dev/fuse; designs with one reader must pass these too: the hand-off of 2026-12-06 and the
 * reading turn of 2026-12-07 (docs/DESIGN.md) hung here without their hand-off and their
 * watcher's steal. The fixture serves with 4 workers at most. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "stub_controller.h"

TestSuite(workers, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

static gpointer read_many(gpointer d)
{
	int n = GPOINTER_TO_INT(d), bad = 0;
	for (int i = 0; i < n; i++) {
		g_autofree char *v = slurp("a/memory.events");
		bad += !v || strcmp(v, "oom 0\noom_kill 0\n") != 0;
	}
	return GINT_TO_POINTER(bad);
}

static gpointer write_delay(gpointer d)
{
	return GINT_TO_POINTER(poke(d, "700\n"));
}

/* Concurrent callers, so that libfuse starts every worker it may before the handlers are
 * held (with workers idle, libfuse starts no new one when a request is taken). */
static void warm_up(void)
{
	GThread *t[8];
	for (int i = 0; i < 8; i++)
		t[i] = g_thread_new("reader", read_many, GINT_TO_POINTER(200));
	for (int i = 0; i < 8; i++)
		cr_assert_eq(GPOINTER_TO_INT(g_thread_join(t[i])), 0, "a read through the mount failed");
}

typedef struct {
	GMutex lock;
	GCond cond;
	bool done;
	int bad;
	gint64 slowest;
} timed_reads;

static gpointer timed_reader(gpointer d)
{
	timed_reads *r = d;
	int bad = 0;
	gint64 slowest = 0;
	for (int i = 0; i < 50; i++) {
		gint64 t0 = g_get_monotonic_time();
		g_autofree char *v = slurp("a/memory.events");
		slowest = MAX(slowest, g_get_monotonic_time() - t0);
		bad += !v || strcmp(v, "oom 0\noom_kill 0\n") != 0;
	}
	g_mutex_lock(&r->lock);
	r->done = true;
	r->bad = bad;
	r->slowest = slowest;
	g_cond_signal(&r->cond);
	g_mutex_unlock(&r->lock);
	return NULL;
}

/* Whether count() reaches n within 10 s (the held handlers reached). */
static bool held_within(int (*count)(void), int n)
{
	for (int i = 0; i < 1000; i++) {
		if (count() >= n)
			return true;
		g_usleep(10000);
	}
	return false;
}

/* Starts the timed reads and waits at most 10 s for them; whether they were done. The
 * caller lets its held handlers go, then calls timed_end. */
static bool timed_begin(timed_reads *r, GThread **t)
{
	*r = (timed_reads){ .done = false };
	g_mutex_init(&r->lock);
	g_cond_init(&r->cond);
	*t = g_thread_new("timed", timed_reader, r);
	gint64 until = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	g_mutex_lock(&r->lock);
	while (!r->done && g_cond_wait_until(&r->cond, &r->lock, until))
		;
	bool done = r->done;
	g_mutex_unlock(&r->lock);
	return done;
}

/* Joins the timed reader first: an assertion leaves the test, and the reader writes to r. */
static void timed_end(timed_reads *r, GThread *t, bool done, const char *beside)
{
	g_thread_join(t);
	cr_assert(done, "50 reads beside %s not answered within 10 s", beside);
	cr_assert_eq(r->bad, 0, "%d reads beside %s failed", r->bad, beside);
	/* generous: a loaded CI host is slow */
	cr_expect_lt(r->slowest, 2 * G_TIME_SPAN_SECOND, "slowest read %" G_GINT64_FORMAT " µs", r->slowest);
	g_mutex_clear(&r->lock);
	g_cond_clear(&r->cond);
}

/* Holds n delay writes in their handlers, then reads beside them; the reads must all be
 * answered within 10 s, the writes must succeed once let go. */
static void reads_beside_held_writes(int n)
{
	SKIP_UNLESS_READY();
	warm_up();
	stub_controller_hold_delay_writes(true);
	GThread *w[4];
	const char *file[2] = { "a/memory.oom_delay_millisecs", "a/b/memory.oom_delay_millisecs" };
	for (int i = 0; i < n; i++)
		w[i] = g_thread_new("writer", write_delay, (gpointer)file[i % 2]);
	bool all_held = held_within(stub_controller_delay_writes_held, n);
	int held = stub_controller_delay_writes_held();
	timed_reads r;
	GThread *t;
	bool done = timed_begin(&r, &t);
	/* the legitimate writes go on as soon as they are let go, whatever happened above */
	stub_controller_hold_delay_writes(false);
	for (int i = 0; i < n; i++)
		cr_expect_eq(GPOINTER_TO_INT(g_thread_join(w[i])), 0, "a held delay write failed once let go");
	timed_end(&r, t, done, "the held writes"); /* joins the reader: r lives on this stack */
	cr_assert(all_held, "%d of %d delay writes reached their handler within 10 s", held, n);
	g_autofree char *v = slurp("a/memory.oom_delay_millisecs");
	cr_assert_str_eq(v, "700\n");
}

Test(workers, a_held_handler_keeps_nobody_waiting)
{
	reads_beside_held_writes(1);
}

/* 2 of the 4 workers held (a uid's charged calls take at most half the workers: charge.c):
 * the other two read */
Test(workers, two_held_handlers_leave_the_others_reading)
{
	reads_beside_held_writes(2);
}

/* A read held in its handler: the other callers are answered all the same, the held read
 * once let go. */
static gpointer read_control(gpointer d)
{
	(void)d;
	return slurp("a/memory.oom_control");
}

Test(workers, a_stalled_quick_handler_keeps_nobody_waiting)
{
	SKIP_UNLESS_READY();
	warm_up();
	g_autofree char *before = slurp("a/memory.oom_control");
	cr_assert(before && strstr(before, "under_oom 0"), "memory.oom_control: %s", before ? before : "(unreadable)");
	stub_controller_hold_views(true);
	GThread *held = g_thread_new("held", read_control, NULL);
	bool is_held = held_within(stub_controller_views_held, 1);
	timed_reads r;
	GThread *t;
	bool done = timed_begin(&r, &t);
	stub_controller_hold_views(false);
	g_autofree char *after = g_thread_join(held);
	timed_end(&r, t, done, "a held read"); /* joins the reader: r lives on this stack */
	cr_assert(is_held, "the read of memory.oom_control never reached its handler");
	cr_assert(after, "the held read, let go, failed");
	cr_assert_str_eq(after, before, "the held read, let go");
}

/* Quick requests from many callers at once are all answered (libfuse starts workers up to
 * its maximum). */
Test(workers, many_callers_at_once)
{
	SKIP_UNLESS_READY();
	GThread *t[16];
	for (int i = 0; i < 16; i++)
		t[i] = g_thread_new("reader", read_many, GINT_TO_POINTER(300));
	int bad = 0;
	for (int i = 0; i < 16; i++)
		bad += GPOINTER_TO_INT(g_thread_join(t[i]));
	cr_assert_eq(bad, 0, "%d of 4,800 reads failed", bad);
}
