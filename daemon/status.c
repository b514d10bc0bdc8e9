/* status.c — implements the server and the client of status.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/status.h"
#include "oomd/options.h"
#include "conffile.h"

#include <errno.h>
#include <fcntl.h>
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

/* ---- the connections: many at once, none able to hold the others ----
 * Each listener's thread keeps up to MAX_CONNS connections, at most PER_UID of one
 * peer uid (root's unbounded but for the total), and moves each along as its data
 * comes: read the request, then write the answer, both without blocking and within
 * one deadline per connection. Before (round two), a listener served one connection
 * at a time for up to 2 s, so a local uid that kept opening silent connections to the
 * metrics port kept a scraper waiting behind them (issue 21, third round). */
#define MAX_CONNS 32
#define PER_UID 4

typedef struct {
	int fd;
	uid_t uid;      /* the peer's; (uid_t)-1: unknown */
	gint64 deadline;
	size_t n;       /* request bytes read */
	char *out;      /* the answer, once the request is complete */
	size_t off, len;
	char req[MAX_REQUEST];
} conn;

/* The uid owning the other end of a loopback TCP connection: the line of /proc/net/tcp
 * (this network namespace's) whose local address is our peer's and remote ours.
 * (uid_t)-1 if none (a peer outside it; the table changed). */
static uid_t tcp_peer_uid(int fd)
{
	struct sockaddr_in me, peer;
	socklen_t lm = sizeof me, lp = sizeof peer;
	if (getsockname(fd, (struct sockaddr *)&me, &lm) != 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &lp) != 0 || peer.sin_family != AF_INET)
		return (uid_t)-1;
	char want_l[32], want_r[32], l[64], r[64], line[512];
	/* the kernel prints the address as the raw 32-bit value, the port in host order */
	snprintf(want_l, sizeof want_l, "%08X:%04X", (unsigned)peer.sin_addr.s_addr, ntohs(peer.sin_port));
	snprintf(want_r, sizeof want_r, "%08X:%04X", (unsigned)me.sin_addr.s_addr, ntohs(me.sin_port));
	FILE *f = fopen("/proc/net/tcp", "re");
	uid_t uid = (uid_t)-1;
	unsigned u;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, " %*d: %63s %63s %*x %*s %*s %*x %u", l, r, &u) == 3 &&
		    strcmp(l, want_l) == 0 && strcmp(r, want_r) == 0) {
			uid = (uid_t)u;
			break;
		}
	if (f)
		fclose(f);
	return uid;
}

static uid_t peer_uid(int fd, bool http)
{
	if (http)
		return tcp_peer_uid(fd);
	struct ucred cr;
	socklen_t len = sizeof cr;
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? cr.uid : (uid_t)-1;
}

/* The answer to what c read (all of it, or what came before its deadline). */
static char *answer(od_status *s, conn *c, bool http)
{
	c->req[c->n] = '\0';
	if (http) {
		bool ok = g_str_has_prefix(c->req, "GET /metrics ") || g_str_has_prefix(c->req, "GET / ");
		g_autofree char *body = ok ? reply(s, "metrics") : g_strdup("not found: GET /metrics\n");
		return g_strdup_printf(
			"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			ok ? "200 OK" : "404 Not Found",
			ok ? "application/openmetrics-text; version=1.0.0; charset=utf-8" : "text/plain",
			strlen(body), body);
	}
	g_strstrip(c->req);
	if (strcmp(c->req, "text") && strcmp(c->req, "json") && strcmp(c->req, "metrics"))
		return g_strdup("error: ask text, json or metrics\n");
	return reply(s, c->req);
}

static void drop(conn *c, int *nc, int i)
{
	close(c[i].fd);
	g_free(c[i].out);
	c[i] = c[--*nc];
}

/* Reads what c has; true when the request is complete (its end, EOF, full). */
static bool read_some(conn *c, const char *end)
{
	for (;;) {
		ssize_t r = read(c->fd, c->req + c->n, MAX_REQUEST - 1 - c->n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno != EAGAIN;
		if (r == 0)
			return true;
		c->n += (size_t)r;
		c->req[c->n] = '\0';
		if (strstr(c->req, end) || c->n == MAX_REQUEST - 1)
			return true;
	}
}

/* Writes what c can take; true when all is written or the client went away. */
static bool write_some(conn *c)
{
	while (c->off < c->len) {
		ssize_t w = send(c->fd, c->out + c->off, c->len - c->off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno != EAGAIN;
		c->off += (size_t)w;
	}
	return true;
}

static void start_answer(od_status *s, conn *c, bool http)
{
	c->out = answer(s, c, http);
	c->len = strlen(c->out);
	c->off = 0;
	c->deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC;
}

static void accept_some(int lfd, bool http, conn *c, int *nc)
{
	while (*nc < MAX_CONNS) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		uid_t uid = peer_uid(fd, http);
		int mine = 0;
		for (int i = 0; i < *nc; i++)
			mine += c[i].uid == uid;
		if (uid != 0 && mine >= PER_UID) {
			close(fd); /* its own earlier ones are still being served */
			continue;
		}
		c[*nc] = (conn){ .fd = fd, .uid = uid,
				 .deadline = g_get_monotonic_time() + IO_TIMEOUT_S * G_USEC_PER_SEC };
		(*nc)++;
	}
}

/* One thread per listener: the metrics port is open to every local uid, and nothing
 * its clients do may starve root's status socket (SECURITY.md, issue 21). */
static void listen_loop(od_status *s, int lfd, bool http)
{
	conn *c = g_new0(conn, MAX_CONNS);
	int nc = 0;
	/* accept_some takes what is pending and stops at EAGAIN */
	if (fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) != 0)
		g_warning("status socket: O_NONBLOCK: %s", g_strerror(errno));
	struct pollfd p[2 + MAX_CONNS];
	const char *end = http ? "\r\n\r\n" : "\n";
	for (;;) {
		gint64 now = g_get_monotonic_time(), next = G_MAXINT64;
		for (int i = nc - 1; i >= 0; i--) {
			if (c[i].deadline > now) {
				next = MIN(next, c[i].deadline);
			} else if (!c[i].out) { /* its time to ask is up: answer what it asked */
				start_answer(s, &c[i], http);
				next = MIN(next, c[i].deadline);
			} else {
				drop(c, &nc, i); /* it does not read its answer */
			}
		}
		p[0] = (struct pollfd){ .fd = s->wake, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = lfd, .events = nc < MAX_CONNS ? POLLIN : 0 };
		for (int i = 0; i < nc; i++)
			p[2 + i] = (struct pollfd){ .fd = c[i].fd, .events = c[i].out ? POLLOUT : POLLIN };
		int wait_ms = next == G_MAXINT64 ? -1 : (int)MIN((next - now + 999) / 1000, 60000);
		if (poll(p, (nfds_t)(2 + nc), wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			g_warning("status socket: poll: %s; no more status", g_strerror(errno));
			break;
		}
		if (p[0].revents)
			break; /* the wake eventfd is never read: it stays readable for both */
		for (int i = nc - 1; i >= 0; i--) { /* backwards: drop moves the last one here */
			if (!p[2 + i].revents)
				continue;
			if (!c[i].out && read_some(&c[i], end))
				start_answer(s, &c[i], http);
			if (c[i].out && write_some(&c[i]))
				drop(c, &nc, i);
		}
		if (p[1].revents & POLLIN)
			accept_some(lfd, http, c, &nc);
	}
	while (nc > 0)
		drop(c, &nc, nc - 1);
	g_free(c);
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
	g_autofree char *text = NULL;
	gsize len;
	bool missing;
	g_autoptr(GKeyFile) kf = g_key_file_new();
	/* read as the daemon reads it: a FIFO there must not hang the client (conffile.h) */
	if (!od_conf_read(OD_CONFIG_DEFAULT, &text, &len, &missing, NULL) ||
	    !g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, NULL))
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
