/* supervisor.c — `oomdelayfs --supervise ...` (supervisor.h): for hosts without
 * systemd, a small parent that does for one server what systemd's fd store and
 * Restart= do, speaking the same protocol, so the server's code is the same under
 * both (fdstore.c, notify.c): it takes FDSTORE=1/FDNAME= (descriptors by
 * SCM_RIGHTS) and FDSTOREREMOVE=1 from its child only (SCM_CREDENTIALS), and hands
 * the kept descriptors to the next server with LISTEN_FDS/LISTEN_FDNAMES/LISTEN_PID.
 * It holds no other state, mounts nothing itself (the first server mounts and gives
 * it the connection), runs no threads.
 *
 * The channel is one end of a datagram socketpair passed to each server
 * (OOMDELAYFS_NOTIFY_FD), never a name: no other process can send to it. Until
 * issue 21 it was an abstract socket (@oomdelayfs-supervisor/<pid>), which anyone
 * in the network namespace could reach: uid 1000 sent it a lingering TCP socket by
 * SCM_RIGHTS, our close() of it blocked this thread, the queue filled, the
 * server's next sd_notify blocked its main loop, and no cgroup was killed. Now a
 * datagram here comes from our server (or a dead one's descriptors still queued),
 * and what it sends is its own /dev/fuse, memfd and directory descriptors, whose
 * close never waits; the server sends without waiting (notify.c), so a supervisor
 * that stopped reading would cost it messages, never its main loop.
 *
 * Server ends: exit 0 (orderly stop: everything handed back, unmounted) -> the
 * supervisor exits 0; SIGTERM/SIGINT to the supervisor are passed on. Any other end
 * (crash, SIGKILL, the watchdog...) -> the server is started again after 200 ms
 * with the kept connection; more than 5 restarts within 30 s and it gives up (the
 * descriptors are closed: the mount goes stale, held cgroups stay bounded at
 * L + ceiling, and `oomdelayfs --release-all` or the next start finishes them).
 * --watchdog-sec N: the server gets WATCHDOG_USEC and WATCHDOG_PID (fdstore.c feeds
 * WATCHDOG=1 while its deadline thread beats); N s without one and it is SIGKILLed,
 * which then counts as a crash. SIGUSR2 (upgrade): passed on; when the server has exited with 75 the supervisor
 * re-executes the binary at the path it was started from (a package upgrade has
 * replaced it by then) with the descriptors, and that one starts the new server.
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>
#include <systemd/sd-daemon.h>

#include "oomd/fdstore.h"
#include "oomd/notify.h"
#include "oomd/options.h"
#include "oomd/supervisor.h"

#define SUP_RESTART_MS 200
#define SUP_BURST 5
#define SUP_BURST_WINDOW_MS 30000

typedef struct {
	const char *name;
	int fd;
} kept_fd;

typedef struct {
	char *self;          /* the binary's path, as started (an upgrade replaces the file) */
	char **self_argv;    /* our own command line, for the re-exec */
	char **server_argv;  /* the same without --supervise */
	kept_fd kept[3];
	int sock, sig;
	int server_end;      /* the socketpair end each server gets (not close-on-exec there) */
	pid_t child;
	bool stopping, upgrading;
	int watchdog_ms;     /* 0: none */
	bool ready;          /* READY=1 from the current server: its watchdog runs (as systemd's) */
	int64_t fed_at;      /* the last WATCHDOG=1 (or the server's start) */
	int64_t restart_at;  /* ms on CLOCK_MONOTONIC, 0: none scheduled */
	int64_t starts[SUP_BURST];
	unsigned nstarts;
} sup;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drop_kept(sup *s)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(s->kept); i++)
		if (s->kept[i].fd >= 0) {
			close(s->kept[i].fd);
			s->kept[i].fd = -1;
		}
}

/* The kept descriptors to 3, 4, ... of this process (for exec), in order; LISTEN_*
 * set for pid. Only in a child, or just before our own exec. */
static void pass_kept(sup *s, pid_t pid)
{
	int moved[G_N_ELEMENTS(s->kept)], n = 0;
	GString *names = g_string_new(NULL);
	/* First out of the way of 3.., then into place (dup2 clears CLOEXEC). */
	for (unsigned i = 0; i < G_N_ELEMENTS(s->kept); i++)
		if (s->kept[i].fd >= 0) {
			moved[n++] = fcntl(s->kept[i].fd, F_DUPFD_CLOEXEC, 64);
			g_string_append_printf(names, "%s%s", names->len ? ":" : "", s->kept[i].name);
		}
	for (int i = 0; i < n; i++) {
		if (moved[i] < 0 || dup2(moved[i], SD_LISTEN_FDS_START + i) < 0)
			g_warning("supervisor: passing a kept descriptor: %s", g_strerror(errno));
		close(moved[i]);
	}
	char v[32];
	snprintf(v, sizeof v, "%d", n);
	setenv("LISTEN_FDS", v, 1);
	snprintf(v, sizeof v, "%d", (int)pid);
	setenv("LISTEN_PID", v, 1);
	setenv("LISTEN_FDNAMES", names->str, 1);
	g_string_free(names, TRUE);
}

static void start_server(sup *s)
{
	s->restart_at = 0;
	int64_t t = now_ms();
	s->starts[s->nstarts++ % SUP_BURST] = t;
	pid_t pid = fork();
	if (pid < 0) {
		g_warning("supervisor: fork: %s; trying again", g_strerror(errno));
		s->restart_at = t + SUP_RESTART_MS;
		return;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Out of the range pass_kept fills (3, 4, 5), without close-on-exec. */
		int end = fcntl(s->server_end, F_DUPFD, 16);
		if (s->kept[0].fd >= 0)
			pass_kept(s, getpid());
		char v[32];
		snprintf(v, sizeof v, "%d", end);
		setenv(OD_NOTIFY_FD_ENV, v, 1);
		unsetenv("NOTIFY_SOCKET");
		if (s->watchdog_ms) {
			snprintf(v, sizeof v, "%lld", (long long)s->watchdog_ms * 1000);
			setenv("WATCHDOG_USEC", v, 1);
			snprintf(v, sizeof v, "%d", (int)getpid());
			setenv("WATCHDOG_PID", v, 1);
		}
		execv(s->self, s->server_argv);
		fprintf(stderr, "oomdelayfs supervisor: exec %s: %s\n", s->self, strerror(errno));
		_exit(127);
	}
	s->child = pid;
	s->ready = false;
	s->fed_at = now_ms();
	g_message("supervisor: server started (pid %d, %s)", (int)pid,
		  s->kept[0].fd >= 0 ? "takes the kept FUSE connection over" : "mounts afresh");
}

static void reexec(sup *s)
{
	g_message("supervisor: upgrade: executing %s with the kept FUSE connection", s->self);
	pass_kept(s, getpid());
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execv(s->self, s->self_argv);
	g_critical("supervisor: upgrade: exec %s: %s; the connection is lost", s->self, g_strerror(errno));
	exit(OD_EXIT_FAILURE);
}

static void on_child_end(sup *s, int status)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	s->child = 0;
	if (s->upgrading && code == OD_EXIT_HANDOVER)
		reexec(s); /* does not return */
	if (s->stopping || code == 0) {
		g_message("supervisor: server stopped (status %d)%s", code,
			  s->stopping ? "" : " by itself (unmounted from outside?)");
		drop_kept(s);
		exit(code == 0 ? OD_EXIT_OK : code);
	}
	if (code >= OD_EXIT_USAGE && code <= OD_EXIT_FUSE && s->kept[0].fd < 0) {
		/* A start-up check failed before the mount: a restart would fail the same way. */
		g_critical("supervisor: the server failed to start (status %d); giving up", code);
		exit(code);
	}
	if (s->nstarts >= SUP_BURST &&
	    now_ms() - s->starts[s->nstarts % SUP_BURST] < SUP_BURST_WINDOW_MS) {
		g_critical("supervisor: %d starts within %d s; giving up (the mount goes stale; "
			   "`oomdelayfs --release-all` hands the cgroups back)", SUP_BURST,
			   SUP_BURST_WINDOW_MS / 1000);
		drop_kept(s);
		exit(OD_EXIT_FAILURE);
	}
	g_warning("supervisor: server ended (%s %d); starting it again in %d ms",
		  WIFEXITED(status) ? "status" : "signal",
		  WIFEXITED(status) ? code : WTERMSIG(status), SUP_RESTART_MS);
	s->upgrading = false;
	s->restart_at = now_ms() + SUP_RESTART_MS;
}

static kept_fd *kept_slot(sup *s, const char *name)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(s->kept); i++)
		if (strcmp(s->kept[i].name, name) == 0)
			return &s->kept[i];
	return NULL;
}

/* One datagram of the sd_notify protocol; false when none is waiting. Only the
 * current server is heard. */
static bool on_notify(sup *s)
{
	char buf[4096];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(8 * sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof buf - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl };
	ssize_t n = recvmsg(s->sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return false;
	buf[n] = 0;
	int fds[8], nfds = 0;
	pid_t from = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k && nfds < 8; i++)
				memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		} else if (c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred u;
			memcpy(&u, CMSG_DATA(c), sizeof u);
			from = u.pid;
		}
	}
	if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		from = 0; /* not a message of ours: more descriptors or bytes than we take */
	bool store = false, remove = false;
	const char *name = NULL;
	g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
	for (char **l = lines; from && from == s->child && *l; l++) {
		if (strcmp(*l, "FDSTORE=1") == 0)
			store = true;
		else if (strcmp(*l, "FDSTOREREMOVE=1") == 0)
			remove = true;
		else if (g_str_has_prefix(*l, "FDNAME="))
			name = *l + 7;
		else if (strcmp(*l, "READY=1") == 0) {
			g_message("supervisor: server %d ready", (int)from);
			s->ready = true;
			s->fed_at = now_ms();
		} else if (strcmp(*l, "WATCHDOG=1") == 0) {
			s->fed_at = now_ms();
		}
	}
	kept_fd *k = name ? kept_slot(s, name) : NULL;
	if (k && remove && k->fd >= 0) {
		close(k->fd);
		k->fd = -1;
	}
	if (k && store && nfds == 1) {
		if (k->fd >= 0)
			close(k->fd);
		k->fd = fds[0];
		nfds = 0;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return true;
}

static void on_signal(sup *s)
{
	struct signalfd_siginfo si;
	while (read(s->sig, &si, sizeof si) == sizeof si) {
		if (si.ssi_signo == SIGCHLD) {
			/* What the server stored before it died counts: read it first. */
			while (on_notify(s))
				;
			int st;
			pid_t p;
			while ((p = waitpid(-1, &st, WNOHANG)) > 0)
				if (p == s->child)
					on_child_end(s, st);
		} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			s->stopping = true;
			if (s->child) {
				kill(s->child, SIGTERM);
			} else {
				g_warning("supervisor: stopped while no server runs: the mount goes stale");
				drop_kept(s);
				exit(OD_EXIT_FAILURE);
			}
		} else if (si.ssi_signo == SIGUSR2) {
			if (s->kept[0].fd < 0) {
				g_warning("supervisor: SIGUSR2 ignored: no FUSE connection is kept yet");
				continue;
			}
			s->upgrading = true;
			if (s->child)
				kill(s->child, SIGUSR2);
			else
				reexec(s);
		}
	}
}

/* The server's channel: a datagram socketpair, ours nonblocking with SO_PASSCRED
 * (the kernel stamps each datagram with its sender's pid, checked in on_notify). */
static bool open_socket(sup *s)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	s->sock = sv[0];
	s->server_end = sv[1];
	int one = 1;
	if (fcntl(s->sock, F_SETFL, O_NONBLOCK) < 0 ||
	    setsockopt(s->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
		return false;
	return true;
}

/* A server that stopped feeding the watchdog is killed; its end restarts it. */
static void check_watchdog(sup *s)
{
	if (!s->watchdog_ms || !s->child || !s->ready || s->stopping || s->upgrading)
		return;
	int64_t quiet = now_ms() - s->fed_at;
	if (quiet < s->watchdog_ms)
		return;
	g_warning("supervisor: watchdog: no WATCHDOG=1 from server %d for %lld ms; killing it",
		  (int)s->child, (long long)quiet);
	kill(s->child, SIGKILL);
	s->fed_at = now_ms(); /* once */
}

int od_supervise(int argc, char **argv, int watchdog_sec)
{
	sup s = { .kept = { { "fuse", -1 }, { "state", -1 }, { "root", -1 } }, .sock = -1,
		  .server_end = -1, .watchdog_ms = watchdog_sec * 1000 };
	s.self = g_file_read_link("/proc/self/exe", NULL);
	if (!s.self) {
		g_printerr("oomdelayfs: --supervise: cannot read /proc/self/exe\n");
		return OD_EXIT_FAILURE;
	}
	s.self_argv = g_new0(char *, argc + 1);
	s.server_argv = g_new0(char *, argc + 1);
	for (int i = 0, j = 0; i < argc; i++) {
		s.self_argv[i] = argv[i];
		if (strcmp(argv[i], "--supervise") != 0)
			s.server_argv[j++] = argv[i];
	}
	/* After an upgrade our predecessor passed the connection on like systemd does. */
	od_kept_fds k;
	od_fdstore_take(&k);
	s.kept[0].fd = k.fuse_fd;
	s.kept[1].fd = k.state_fd;
	s.kept[2].fd = k.root_fd;
	unsetenv("NOTIFY_SOCKET"); /* ours is for the server; we answer to nobody */

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s.sig = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sig < 0 || !open_socket(&s)) {
		g_printerr("oomdelayfs: --supervise: signalfd or notify socket: %s\n", g_strerror(errno));
		return OD_EXIT_FAILURE;
	}
	g_message("supervisor: pid %d, binary %s", (int)getpid(), s.self);
	start_server(&s);
	for (;;) {
		struct pollfd p[2] = { { s.sig, POLLIN, 0 }, { s.sock, POLLIN, 0 } };
		int timeout = -1;
		if (s.restart_at)
			timeout = (int)MAX(s.restart_at - now_ms(), 0);
		else if (s.watchdog_ms && s.child && s.ready)
			timeout = (int)CLAMP(s.fed_at + s.watchdog_ms - now_ms(), 0, s.watchdog_ms);
		int r = poll(p, 2, timeout);
		if (r < 0 && errno != EINTR) {
			g_critical("supervisor: poll: %s", g_strerror(errno));
			return OD_EXIT_FAILURE;
		}
		/* Descriptors first: a server that stored them and died at once must not
		 * be restarted without them. */
		if (p[1].revents & POLLIN)
			while (on_notify(&s))
				;
		if (p[0].revents & POLLIN)
			on_signal(&s);
		check_watchdog(&s);
		if (s.restart_at && now_ms() >= s.restart_at && !s.child)
			start_server(&s);
	}
}
