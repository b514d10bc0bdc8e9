/* ctl_post (daemon/ctl_post.h): the deadline thread's and the kill actuator's log lines are
 * written by the loop, in the order they were posted, never by the poster; a poster that finds
 * every slot taken neither blocks nor overwrites a line, and the loop says how many it lost;
 * what is still posted when the controller goes is written then. */
#include <criterion/criterion.h>
#include <string.h>
#include <glib.h>

#include "ctl_post.h"

static GPtrArray *logged; /* the messages the writer saw, in order */
static GThread *loop_thread;

static GLogWriterOutput writer(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer ud)
{
	(void)level;
	(void)ud;
	for (gsize i = 0; i < n; i++)
		if (!strcmp(fields[i].key, "MESSAGE"))
			g_ptr_array_add(logged, g_strdup(fields[i].value));
	/* only the loop's thread may write: the posters never do */
	cr_expect_eq(g_thread_self(), loop_thread, "a line was written by a poster's thread");
	return G_LOG_WRITER_HANDLED;
}

static od_controller *setup(void)
{
	logged = g_ptr_array_new_with_free_func(g_free);
	loop_thread = g_thread_self();
	g_log_set_writer_func(writer, NULL, NULL);
	od_controller *c = g_new0(od_controller, 1);
	cr_assert_eq(ctl_post_init(c), 0);
	return c;
}

static void run_loop(void)
{
	while (g_main_context_iteration(NULL, FALSE))
		;
}

static gpointer post_three(gpointer data)
{
	for (int i = 0; i < 3; i++)
		ctl_post_line(data, false, "kill line %d", i);
	return NULL;
}

Test(post, lines_from_another_thread_are_written_by_the_loop_in_order)
{
	od_controller *c = setup();
	g_thread_join(g_thread_new("poster", post_three, c));
	cr_expect_eq(logged->len, 0, "written before the loop ran");
	run_loop();
	cr_assert_eq(logged->len, 3);
	for (int i = 0; i < 3; i++) {
		g_autofree char *want = g_strdup_printf("kill line %d", i);
		cr_expect_str_eq(g_ptr_array_index(logged, i), want);
	}
	ctl_post_free(c);
	cr_expect_eq(logged->len, 3, "a line written twice");
	g_free(c);
}

Test(post, a_full_ring_loses_the_new_line_and_says_so)
{
	od_controller *c = setup();
	for (int i = 0; i < CTL_POST_SLOTS + 5; i++)
		ctl_post_line(c, false, "line %d", i);
	run_loop();
	cr_assert_eq(logged->len, CTL_POST_SLOTS + 1);
	for (int i = 0; i < CTL_POST_SLOTS; i++) {
		g_autofree char *want = g_strdup_printf("line %d", i);
		cr_expect_str_eq(g_ptr_array_index(logged, i), want, "the lines posted first are kept");
	}
	cr_expect(strstr(g_ptr_array_index(logged, CTL_POST_SLOTS), "5 log lines"),
		  "the loss is not said: %s", (char *)g_ptr_array_index(logged, CTL_POST_SLOTS));
	/* the slots are free again */
	ctl_post_line(c, true, "after");
	run_loop();
	cr_expect_str_eq(g_ptr_array_index(logged, logged->len - 1), "after");
	ctl_post_free(c);
	g_free(c);
}

Test(post, what_is_still_posted_is_written_when_the_controller_goes)
{
	od_controller *c = setup();
	ctl_post_line(c, false, "the last kill's line");
	ctl_post_free(c);
	cr_assert_eq(logged->len, 1);
	cr_expect_str_eq(g_ptr_array_index(logged, 0), "the last kill's line");
	g_free(c);
}
