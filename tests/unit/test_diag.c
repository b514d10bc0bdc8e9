/* test_diag.c — the late tick's figures (daemon/diag.c, built with -Ddiagnostics=true
 * only): what the late line adds, from a hand-made hold, action and tick. */
#include <criterion/criterion.h>
#include <string.h>
#include <glib.h>

#include "oomd/controller.h"
#include "oomd/diag.h"

Test(diag, late_line_names_the_longest_hold_and_the_slowest_action)
{
	od_diag *d = od_diag_new();
	od_diag_deadline_thread(d);
	od_diag_lock_taken(d, "short", "the main loop");
	od_diag_lock_released(d);
	od_diag_lock_taken(d, "user write", "a FUSE worker");
	g_usleep(20000);
	od_diag_lock_released(d);
	od_diag_tick_locked(d);
	od_diag_action(d, false, od_diag_clock() - 900000000, "PERSIST", 7); /* not the deadline thread's */
	od_diag_action(d, true, od_diag_clock() - 5000000, "SAMPLE", 42);
	od_diag_action(d, true, od_diag_clock() - 1000000, "KILL_KERNEL", 43);
	cr_assert_str_empty(od_diag_tick_done(d, false, 0, 0, 0), "nothing when not late");
	/* the slowest action was taken and reset by the call above */
	od_diag_action(d, true, od_diag_clock() - 5000000, "SAMPLE", 42);
	const char *s = od_diag_tick_done(d, true, 1000000000, 1001000000, 1003000000);
	cr_assert(strstr(s, " (woken 1.0 ms after it was due, then 2.0 ms for the engine's lock"), "%s", s);
	cr_assert(strstr(s, "by user write on a FUSE worker; it ran "), "%s", s);
	cr_assert(strstr(s, "its slowest action since then: SAMPLE of cgroup 42, 5."), "%s", s);
	cr_assert(strstr(s, "since the previous tick the deadline thread ran "), "schedstat: %s", s);
	od_diag_free(d);
}

Test(diag, a_quiet_tick_names_no_hold)
{
	od_diag *d = od_diag_new();
	od_diag_tick_locked(d);
	const char *s = od_diag_tick_done(d, true, 0, 0, 0);
	cr_assert(strstr(s, "was 0.0 ms, by none on none)"), "%s", s);
	cr_assert(strstr(s, "slowest action since then: none"), "%s", s);
	od_diag_free(d);
}
