/* test_ctl_hooks.c — removing a set of hooks: od_controller_remove_hooks waits for a
 * call of the set that is running, and no call of it starts once it has returned (its
 * context is freed right after, as the shells do); the other sets keep being called. */
#include <criterion/criterion.h>
#include <glib.h>
#include <sys/stat.h>

#include "ctl_fixture.h"

/* ---- one call in flight ---- */

typedef struct {
	gint calls;
} hook_ctx;

static GMutex lock;
static GCond cond;
static bool entered, released, returned;
static gint calls_after_free; /* calls of a set whose context is freed: must stay 0 */
static bool ctx_freed;

static void blocking_removed(void *ud, uint64_t id)
{
	(void)id;
	hook_ctx *h = ud;
	g_mutex_lock(&lock);
	if (ctx_freed) {
		g_atomic_int_inc(&calls_after_free);
		g_mutex_unlock(&lock);
		return;
	}
	g_atomic_int_inc(&h->calls);
	entered = true;
	g_cond_broadcast(&cond);
	while (!released)
		g_cond_wait(&cond, &lock);
	returned = true;
	g_mutex_unlock(&lock);
}

static void count_removed(void *ud, uint64_t id)
{
	(void)id;
	g_atomic_int_inc(&((hook_ctx *)ud)->calls);
}

static gpointer remove_gid(gpointer data)
{
	od_controller_remove(ctl, *(uint64_t *)data);
	return NULL;
}

typedef struct {
	od_hooks_reg *reg;
	gint done;
	bool hook_had_returned;
} removal;

static gpointer remove_set(gpointer data)
{
	removal *r = data;
	od_controller_remove_hooks(ctl, r->reg);
	g_mutex_lock(&lock);
	r->hook_had_returned = returned;
	g_mutex_unlock(&lock);
	g_atomic_int_set(&r->done, 1);
	return NULL;
}

Test(hooks, removal_waits_for_the_call_in_flight_and_no_call_follows, .timeout = 20)
{
	setup(OE_KILL_KERNEL);
	hook_ctx *a = g_new0(hook_ctx, 1), b = { 0 };
	removal r = { 0 };
	od_hooks ha = { .removed = blocking_removed, .ud = a }, hb = { .removed = count_removed, .ud = &b };
	r.reg = od_controller_set_hooks(ctl, &ha);
	od_controller_set_hooks(ctl, &hb);

	uint64_t id = gid;
	GThread *t1 = g_thread_new("remover", remove_gid, &id); /* calls a's hook, which blocks */
	gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	g_mutex_lock(&lock);
	while (!entered && g_cond_wait_until(&cond, &lock, until))
		;
	bool in_flight = entered;
	g_mutex_unlock(&lock);
	cr_assert(in_flight, "the removed hook was not called within 5 s");

	GThread *t2 = g_thread_new("unhook", remove_set, &r);
	g_usleep(200 * 1000);
	cr_assert_eq(g_atomic_int_get(&r.done), 0, "the removal returned while its hook was running");
	g_mutex_lock(&lock);
	released = true;
	g_cond_broadcast(&cond);
	g_mutex_unlock(&lock);
	g_thread_join(t2);
	cr_assert(r.hook_had_returned, "the removal returned before the call in flight did");
	g_thread_join(t1);
	g_mutex_lock(&lock);
	ctx_freed = true; /* the caller may free the context now */
	g_mutex_unlock(&lock);
	g_free(a);

	/* Again: a's set is gone, b's is still called. */
	struct stat st;
	cr_assert_eq(fstat(root_fd, &st), 0);
	cr_assert_eq(od_controller_add(ctl, st.st_ino, g_fd, &id), 0);
	int b_before = g_atomic_int_get(&b.calls);
	od_controller_remove(ctl, id);
	cr_assert_eq(g_atomic_int_get(&calls_after_free), 0, "a removed set's hook was called");
	cr_assert_eq(g_atomic_int_get(&b.calls), b_before + 1, "the remaining set was not called");
	teardown();
}

/* ---- many calls in flight, from FUSE workers ---- */

static gint after_removal, late_calls, stop_writers;

static void counting_changed(void *ud, uint64_t id)
{
	(void)id;
	if (g_atomic_int_get(&after_removal))
		g_atomic_int_inc(&late_calls);
	g_usleep(200); /* widen the window a removal must wait through */
	g_atomic_int_inc(&((hook_ctx *)ud)->calls);
}

static gpointer writer(gpointer data)
{
	(void)data;
	for (uint64_t i = 0; !g_atomic_int_get(&stop_writers); i++)
		cr_assert_eq(od_controller_write_disable(ctl, gid, i & 1), 0);
	return NULL;
}

Test(hooks, no_call_starts_after_a_removal_under_concurrent_calls, .timeout = 30)
{
	setup(OE_KILL_KERNEL);
	hook_ctx *a = g_new0(hook_ctx, 1), b = { 0 };
	od_hooks ha = { .control_changed = counting_changed, .ud = a };
	od_hooks hb = { .control_changed = count_removed, .ud = &b };
	od_hooks_reg *ra = od_controller_set_hooks(ctl, &ha);
	od_controller_set_hooks(ctl, &hb);
	GThread *w[3];
	for (size_t i = 0; i < G_N_ELEMENTS(w); i++)
		w[i] = g_thread_new("fuse-worker", writer, NULL);
	for (int i = 0; i < 1000 && g_atomic_int_get(&a->calls) < 50; i++)
		g_usleep(2000);
	cr_assert_geq(g_atomic_int_get(&a->calls), 50, "writes of oom_kill_disable made no CHANGED calls");
	od_controller_remove_hooks(ctl, ra);
	g_atomic_int_set(&after_removal, 1);
	int final = g_atomic_int_get(&a->calls);
	g_free(a);
	int b_at_removal = g_atomic_int_get(&b.calls);
	for (int i = 0; i < 1000 && g_atomic_int_get(&b.calls) < b_at_removal + 50; i++)
		g_usleep(2000);
	g_atomic_int_set(&stop_writers, 1);
	for (size_t i = 0; i < G_N_ELEMENTS(w); i++)
		g_thread_join(w[i]);
	cr_assert_eq(g_atomic_int_get(&late_calls), 0, "%d calls of a removed set (%d before)",
		     g_atomic_int_get(&late_calls), final);
	cr_assert_geq(g_atomic_int_get(&b.calls), b_at_removal + 50, "the remaining set stopped being called");
	teardown();
}
