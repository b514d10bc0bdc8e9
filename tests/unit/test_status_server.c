/* test_status_server.c — the status server's connections (daemon/status.c) under a local
 * uid that opens many silent connections to the metrics port (issue 21, third round).
 * Before, each listener served one connection at a time for up to 2 s: a scraper waited
 * behind every silent connection ahead of it. Now the connections are served side by
 * side, at most 4 of one peer uid at once: uid 1000's eight silent connections leave
 * root's scrape answered at once, uid 1000's own fifth one is closed unanswered, and a
 * silent one still gets its 404 after its 2 s. Needs root (setuid to 1000); SKIPs without. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_fixture.h"
#include "oomd/audit.h"
#include "oomd/status.h"

static od_audit *audit;
static od_status *st;
static int port;

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof sa;
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static void server_setup(void)
{
	setup(OE_KILL_KERNEL);
	audit = od_audit_new(ctl, OE_KILL_KERNEL);
	port = free_port();
	od_status_opts o = { .metrics_port = port, .mode = OE_KILL_KERNEL, .mountpoint = "/x" };
	GError *e = NULL;
	st = od_status_start(audit, &o, &e);
	cr_assert_not_null(st, "%s", e ? e->message : "?");
}

static void server_teardown(void)
{
	od_status_stop(st);
	od_audit_free(audit);
	teardown();
}

TestSuite(status_server, .init = server_setup, .fini = server_teardown, .timeout = 30);

static int connect_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What the server sends on fd until it closes, or until ms passed. */
static char *read_all(int fd, int ms, gint64 *took_ms)
{
	gint64 t0 = g_get_monotonic_time();
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	GString *s = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		g_string_append_len(s, buf, n);
	*took_ms = (g_get_monotonic_time() - t0) / 1000;
	return g_string_free(s, FALSE);
}

/* One GET /metrics of root's: what came back within ms, and how long it took. */
static char *scrape(int ms, gint64 *took)
{
	int fd = connect_port();
	cr_assert_geq(fd, 0);
	const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	char *got = read_all(fd, ms, took);
	close(fd);
	return got;
}

Test(status_server, silent_connections_of_one_uid_do_not_hold_a_scrape)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to open the connections as uid 1000");
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	if (pid == 0) { /* uid 1000: eight silent connections, then one more to see it refused */
		if (setgid(1000) != 0 || setuid(1000) != 0)
			_exit(2);
		int fds[9];
		for (int i = 0; i < 8; i++)
			fds[i] = connect_port();
		g_usleep(200000); /* accepted by now */
		fds[8] = connect_port();
		gint64 took;
		g_autofree char *got = read_all(fds[8], 1000, &took);
		char verdict = got[0] == '\0' && took < 900 ? 'c' : 'a'; /* closed at once, or answered */
		if (write(ready[1], &verdict, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	char verdict = 0;
	cr_assert_eq(read(ready[0], &verdict, 1), 1, "uid 1000's connections did not come up");
	gint64 took;
	g_autofree char *got = scrape(10000, &took);
	/* a silent connection's own answer, after its time */
	int quiet = connect_port();
	gint64 qtook;
	g_autofree char *q = read_all(quiet, 5000, &qtook);
	close(quiet);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert(g_str_has_prefix(got, "HTTP/1.0 200 OK"), "the scrape got: %.60s", got);
	cr_assert_lt(took, 1000, "root's scrape took %lld ms behind uid 1000's eight silent connections",
		     (long long)took);
	cr_assert_eq(verdict, 'c', "uid 1000's fifth connection at once was not closed unanswered");
	cr_assert(g_str_has_prefix(q, "HTTP/1.0 404"), "a silent connection got: %.60s", q);
	cr_assert(qtook >= 1500 && qtook < 4000, "a silent connection was answered after %lld ms",
		  (long long)qtook);
}

Test(status_server, a_scrape_is_answered)
{
	gint64 took;
	g_autofree char *got = scrape(5000, &took);
	cr_assert(g_str_has_prefix(got, "HTTP/1.0 200 OK"), "the scrape got (%lld ms): %.60s",
		  (long long)took, got);
}
