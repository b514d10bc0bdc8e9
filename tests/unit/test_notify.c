/* Unit tests of the sd_notify sender (notify.h) over a socketpair standing in for
 * the supervisor: the passed end is taken (close-on-exec, variable removed), and a
 * receiver that stops reading costs the message, never a wait (issue 21, item 1:
 * libsystemd's blocking sendmsg stopped the main loop, and the watcher with it). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "oomd/notify.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

Test(notify, a_full_receiver_costs_the_message_not_a_wait, .timeout = 20)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	char v[16];
	snprintf(v, sizeof v, "%d", sv[1]);
	setenv(OD_NOTIFY_FD_ENV, v, 1);
	unsetenv("NOTIFY_SOCKET");
	cr_assert(od_notify_available());
	cr_assert_null(getenv(OD_NOTIFY_FD_ENV), "the variable is removed: nothing we start inherits it");
	cr_assert_eq(fcntl(sv[1], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

	cr_assert_eq(od_notify_send("READY=1", -1), 0);
	char buf[64];
	ssize_t n = recv(sv[0], buf, sizeof buf - 1, 0);
	cr_assert_eq(n, 7);
	buf[n] = 0;
	cr_assert_str_eq(buf, "READY=1");

	/* Fill the receiver's queue without reading it. */
	int sent = 0, r;
	while ((r = od_notify_send("STATUS=filling", -1)) == 0)
		sent++;
	cr_assert_eq(r, -EAGAIN, "a full queue: %s", strerror(-r));
	cr_assert_gt(sent, 0);
	double t0 = now_ms();
	for (int i = 0; i < 100; i++)
		cr_assert_eq(od_notify_send("WATCHDOG=1", -1), -EAGAIN);
	cr_assert_lt(now_ms() - t0, 1000.0, "100 sends into a full queue took %.0f ms", now_ms() - t0);
	t0 = now_ms();
	cr_assert_eq(od_notify_send_patient("FDSTORE=1", -1, 100), -EAGAIN);
	double waited = now_ms() - t0;
	cr_assert(waited >= 90 && waited < 1000, "the patient send waited %.0f ms, not about 100", waited);

	/* Once it reads again, messages go through (a descriptor too). */
	while (recv(sv[0], buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(od_notify_send("FDSTORE=1\nFDNAME=fuse", p[0]), 0);
}
