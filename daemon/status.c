/* status.c — implements the server and the client of status.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/status.h"
#include "oomd/options.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#define IO_TIMEOUT_S 2
#define MAX_REQUEST 4096

struct od_status {
	od_audit *audit;
	char *path, *mountpoint;
	oe_kill_mode mode;
	int ufd, tfd, wake; /* -1 when absent */
	GThread *thread, *tthread; /* serving ufd, tfd */
};

static int fail_errno(GError **err, const char *what, const char *path)
{
	int e = errno;
	g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "status socket: %s %s: %s", what,
		    path, g_strerror(e));
	return -1;
}

/* Bound in a private directory, given its owner and mode there, then renamed into
 * place: the socket is never reachable with looser permissions (and the process
 * umask, which the FUSE mkdir relies on, is never touched). */
static int bind_unix(const char *path, const char *group, GError **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_autofree char *dir = g_path_get_dirname(path);
	if (g_mkdir_with_parents(dir, 0755) < 0)
		return fail_errno(err, "mkdir", dir);
	gid_t gid = 0;
	if (group) {
		struct group *gr = getgrnam(group);
		if (!gr) {
			g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NOENT,
				    "status socket: no group \"%s\"", group);
			return -1;
		}
		gid = gr->gr_gid;
	}
	/* A live daemon answers on it: do not steal its socket. */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
	if (strlen(path) >= sizeof sa.sun_path) {
		close(probe);
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NAMETOOLONG, "status socket: %s: too long", path);
		return -1;
	}
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(probe);
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_EXIST,
			    "status socket: %s: another daemon answers on it", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	g_autofree char *tmpl = g_build_filename(dir, ".status.XXXXXX", NULL);
	if (!g_mkdtemp_full(tmpl, 0700))
		return fail_errno(err, "mkdtemp", tmpl);
	g_autofree char *tmp = g_build_filename(tmpl, "s", NULL);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un ta = { .sun_family = AF_UNIX };
	g_strlcpy(ta.sun_path, tmp, sizeof ta.sun_path);
	int rc = -1;
	if (fd < 0)
		fail_errno(err, "socket", path);
	else if (strlen(tmp) >= sizeof ta.sun_path)
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_NAMETOOLONG, "status socket: %s: too long", tmp);
	else if (bind(fd, (struct sockaddr *)&ta, sizeof ta) < 0)
		fail_errno(err, "bind", tmp);
	else if (chown(tmp, 0, gid) < 0 || chmod(tmp, group ? 0660 : 0600) < 0)
		fail_errno(err, "chmod", tmp);
	else if (rename(tmp, path) < 0)
		fail_errno(err, "rename to", path);
	else if (listen(fd, 16) < 0)
		fail_errno(err, "listen", path);
	else
		rc = 0;
	unlink(tmp);
	rmdir(tmpl);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int bind_tcp(int port, GError **err)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char what[32];
	snprintf(what, sizeof what, "127.0.0.1:%d", port);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0) {
		fail_errno(err, "listen on", what);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the daemon went away: nothing to tell */
		buf += w;
		n -= (size_t)w;
	}
}

/* Waits for `events` on fd until the connection's deadline: false once it passed. */
static bool wait_io(int fd, short events, gint64 deadline)
{
	for (;;) {
		gint64 left = deadline - g_get_monotonic_time();
		if (left <= 0)
			return false;
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, (int)((left + 999) / 1000));
		if (r < 0 && errno == EINTR)
			continue;
		return r > 0;
	}
}

/* The server's side of a connection is non-blocking and every read and write
 * waits only until one deadline per direction: with a per-call timeout a client
 * trickling a byte now and then (or reading one now and then) would keep the one
 * status thread, and the daemon's stop joining it, for hours. */
static void send_all(int fd, const char *buf, size_t n, gint64 deadline)
{
	while (n > 0 && wait_io(fd, POLLOUT, deadline)) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			return; /* the client went away: nothing to tell */
		buf += w;
		n -= (size_t)w;
	}
}

/* Reads until `end` appears, EOF, the deadline or MAX_REQUEST bytes. */
static size_t read_request(int fd, char *buf, const char *end, gint64 deadline)
{
	size_t n = 0;
	buf[0] = '\0';
	while (n < MAX_REQUEST - 1 && wait_io(fd, POLLIN, deadline)) {
		ssize_t r = read(fd, buf + n, MAX_REQUEST - 1 - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, end))
			break;
	}
	buf[n] = '\0';
	return n;
}

static char *reply(od_status *s, const char *what)
{
	od_status_data d;
	od_status_gather(s->audit, s->mountpoint, s->mode, &d);
	char *out = strcmp(what, "json") == 0	 ? od_status_json(&d)
		    : strcmp(what, "metrics") == 0 ? od_status_metrics(&d)
						   : od_status_text(&d);
	od_status_data_clear(&d);
	return out;
}

static void serve(od_status *s, int lfd, bool http)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	char req[MAX_REQUEST];
	read_request(fd, req, http ? "\r\n\r\n" : "\n",
		     g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC);
	if (http) {
		bool ok = g_str_has_prefix(req, "GET /metrics ") || g_str_has_prefix(req, "GET / ");
		g_autofree char *body = ok ? reply(s, "metrics") : g_strdup("not found: GET /metrics\n");
		g_autofree char *head = g_strdup_printf(
			"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			ok ? "200 OK" : "404 Not Found",
			ok ? "application/openmetrics-text; version=1.0.0; charset=utf-8" : "text/plain",
			strlen(body));
		gint64 deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC;
		send_all(fd, head, strlen(head), deadline);
		send_all(fd, body, strlen(body), deadline);
	} else {
		g_strstrip(req);
		if (strcmp(req, "text") && strcmp(req, "json") && strcmp(req, "metrics")) {
			const char *e = "error: ask text, json or metrics\n";
			send_all(fd, e, strlen(e), g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC);
		} else {
			g_autofree char *out = reply(s, req);
			send_all(fd, out, strlen(out), g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC);
		}
	}
	close(fd);
}

/* One thread per listener: the metrics port is open to every local uid, and a
 * client that trickles there (2 s per connection, as many connections as it
 * likes) must not starve root's status socket (SECURITY.md, issue 21). */
static void listen_loop(od_status *s, int lfd, bool http)
{
	struct pollfd p[2] = { { .fd = s->wake, .events = POLLIN }, { .fd = lfd, .events = POLLIN } };
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			g_warning("status socket: poll: %s; no more status", g_strerror(errno));
			return;
		}
		if (p[0].revents)
			return; /* the wake eventfd is never read: it stays readable for both */
		if (p[1].revents & POLLIN)
			serve(s, lfd, http);
	}
}

static gpointer unix_main(gpointer data)
{
	od_status *s = data;
	listen_loop(s, s->ufd, false);
	return NULL;
}

static gpointer tcp_main(gpointer data)
{
	od_status *s = data;
	listen_loop(s, s->tfd, true);
	return NULL;
}

od_status *od_status_start(od_audit *a, const od_status_opts *o, GError **err)
{
	od_status *s = g_new0(od_status, 1);
	s->audit = a;
	s->mode = o->mode;
	s->mountpoint = g_strdup(o->mountpoint);
	s->ufd = s->tfd = -1;
	/* without it od_status_stop could never wake the thread it joins */
	s->wake = eventfd(0, EFD_CLOEXEC);
	if (s->wake < 0) {
		fail_errno(err, "eventfd for", o->socket_path ? o->socket_path : "");
		goto fail;
	}
	if (o->socket_path && *o->socket_path) {
		s->ufd = bind_unix(o->socket_path, o->group, err);
		if (s->ufd < 0)
			goto fail;
		s->path = g_strdup(o->socket_path);
	}
	if (o->metrics_port > 0 && (s->tfd = bind_tcp(o->metrics_port, err)) < 0)
		goto fail;
	if (s->ufd >= 0)
		s->thread = g_thread_new("oomd-status", unix_main, s);
	if (s->tfd >= 0)
		s->tthread = g_thread_new("oomd-metrics", tcp_main, s);
	return s;
fail:
	od_status_stop(s);
	return NULL;
}

void od_status_stop(od_status *s)
{
	if (!s)
		return;
	if (s->thread || s->tthread) {
		uint64_t one = 1;
		if (write(s->wake, &one, sizeof one) < 0)
			g_warning("status socket: cannot stop its threads: %s", g_strerror(errno));
		if (s->thread)
			g_thread_join(s->thread);
		if (s->tthread)
			g_thread_join(s->tthread);
	}
	if (s->ufd >= 0) {
		close(s->ufd);
		unlink(s->path);
	}
	if (s->tfd >= 0)
		close(s->tfd);
	if (s->wake >= 0)
		close(s->wake);
	g_free(s->path);
	g_free(s->mountpoint);
	g_free(s);
}

/* ---- the client ---- */

/* The socket the daemon was configured with, if the file names one. */
static char *configured_socket(void)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	if (!g_key_file_load_from_file(kf, OD_CONFIG_DEFAULT, G_KEY_FILE_NONE, NULL))
		return NULL;
	return g_key_file_get_string(kf, "oomdelayfs", "status-socket", NULL);
}

int od_status_client_main(int argc, char **argv)
{
	gboolean json = FALSE, metrics = FALSE;
	g_autofree char *path = NULL;
	GOptionEntry entries[] = {
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON, for scripts", NULL },
		{ "metrics", 0, 0, G_OPTION_ARG_NONE, &metrics, "OpenMetrics text", NULL },
		{ "socket", 0, 0, G_OPTION_ARG_FILENAME, &path,
		  "The daemon's status socket (default: status-socket in " OD_CONFIG_DEFAULT
		  ", else " OD_STATUS_SOCKET_DEFAULT ")", "PATH" },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- ask the running oomdelayfs");
	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_summary(ctx,
		"Every managed cgroup with L, T, D, its hold and time left, listeners and kills;\n"
		"the records of the last holds; the daemon's health. The daemon answers over its\n"
		"UNIX socket (root, or the members of its status-group).\n"
		"Exit status: 0, 1 if the daemon cannot be reached, 2 for a bad command line.");
	GError *err = NULL;
	if (!g_option_context_parse(ctx, &argc, &argv, &err) || argc > 1 || (json && metrics)) {
		g_printerr("oomdelayfs status: %s\n",
			   err ? err->message : "--json and --metrics are one or the other; no argument");
		g_clear_error(&err);
		return OD_EXIT_USAGE;
	}
	if (!path)
		path = configured_socket();
	if (!path || !*path) {
		g_free(path);
		path = g_strdup(OD_STATUS_SOCKET_DEFAULT);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		g_printerr("oomdelayfs status: %s: path too long\n", path);
		return OD_EXIT_USAGE;
	}
	g_strlcpy(sa.sun_path, path, sizeof sa.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		g_printerr("oomdelayfs status: cannot reach the daemon at %s: %s%s\n", path,
			   g_strerror(e),
			   e == EACCES ? " (root only, or the daemon's status-group)"
				       : " (is oomdelayfs running?)");
		if (fd >= 0)
			close(fd);
		return OD_EXIT_FAILURE;
	}
	const char *req = json ? "json\n" : metrics ? "metrics\n" : "text\n";
	write_all(fd, req, strlen(req));
	shutdown(fd, SHUT_WR);
	char buf[8192];
	ssize_t n;
	size_t total = 0;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		total += (size_t)n;
	}
	close(fd);
	if (n < 0 || total == 0) {
		g_printerr("oomdelayfs status: no answer from %s%s%s\n", path, n < 0 ? ": " : "",
			   n < 0 ? g_strerror(errno) : "");
		return OD_EXIT_FAILURE;
	}
	return OD_EXIT_OK;
}
