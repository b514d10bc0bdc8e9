/* notify.c — notify.h: the sd_notify protocol (one datagram, KEY=VALUE lines,
 * descriptors by SCM_RIGHTS) written here rather than through libsystemd, whose
 * sd_pid_notify_with_fds sends with a blocking sendmsg: a unix datagram sender
 * sleeps in unix_dgram_sendmsg (unix_wait_for_peer) while the receiver's queue is
 * over net.unix.max_dgram_qlen. Issue 21 (item 1) measured that on 6.12: the
 * supervisor stuck in close() of a descriptor a stranger had sent it, its queue
 * filled, the server's periodic STATUS blocked the main loop and with it the
 * watcher: no kill for any cgroup for as long as the attacker wished.
 *
 * Credentials: the kernel attaches the sender's pid/uid/gid when the receiver has
 * SO_PASSCRED (unix_dgram_sendmsg -> maybe_add_creds), as systemd and the
 * supervisor do; we send none of our own.
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#include "oomd/notify.h"

static GMutex lock;
static bool inited;
static int sock = -1;             /* ours: the supervisor's pair end, or an unbound datagram socket */
static bool paired;               /* sock is connected to the supervisor */
static struct sockaddr_un addr;   /* NOTIFY_SOCKET, when not paired */
static socklen_t addr_len;

/* The supervisor's end, if it passed one: a socket, made close-on-exec. */
static int take_pair(void)
{
	const char *v = getenv(OD_NOTIFY_FD_ENV);
	if (!v)
		return -1;
	char *end;
	long fd = strtol(v, &end, 10);
	unsetenv(OD_NOTIFY_FD_ENV);
	struct stat st;
	if (*v == 0 || *end || fd < 3 || fd > 65535 || fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		g_warning("%s=%s does not name a socket: no supervisor to notify", OD_NOTIFY_FD_ENV, v);
		return -1;
	}
	(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	return (int)fd;
}

/* NOTIFY_SOCKET as an address: "/path" or "@abstract". */
static bool parse_address(const char *e)
{
	size_t n = strlen(e);
	if ((e[0] != '/' && e[0] != '@') || n < 2 || n > sizeof addr.sun_path)
		return false;
	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, e, n);
	if (e[0] == '@')
		addr.sun_path[0] = 0;
	addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (e[0] == '/'));
	return true;
}

static void init_locked(void)
{
	if (inited)
		return;
	inited = true;
	sock = take_pair();
	if (sock >= 0) {
		paired = true;
		return;
	}
	const char *e = getenv("NOTIFY_SOCKET");
	if (!e)
		return;
	if (!parse_address(e)) {
		g_warning("NOTIFY_SOCKET=%s: not a unix socket address; the service manager is not told", e);
		return;
	}
	/* Not connected: systemd re-binds its socket when it re-executes itself. */
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0)
		g_warning("notify socket: %s", g_strerror(errno));
}

bool od_notify_available(void)
{
	g_mutex_lock(&lock);
	init_locked();
	bool r = sock >= 0;
	g_mutex_unlock(&lock);
	return r;
}

static int send_locked(const char *msg, int fd)
{
	struct iovec iov = { (void *)msg, strlen(msg) };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (!paired) {
		m.msg_name = &addr;
		m.msg_namelen = addr_len;
	}
	if (fd >= 0) {
		memset(&ctl, 0, sizeof ctl);
		m.msg_control = &ctl;
		m.msg_controllen = sizeof ctl;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	return sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int od_notify_send(const char *msg, int fd)
{
	g_mutex_lock(&lock);
	init_locked();
	int r = sock >= 0 ? send_locked(msg, fd) : -ENOENT;
	g_mutex_unlock(&lock);
	return r;
}

int od_notify_send_patient(const char *msg, int fd, int wait_ms)
{
	for (int waited = 0;; waited += 10) {
		int r = od_notify_send(msg, fd);
		if (r != -EAGAIN || waited >= wait_ms)
			return r;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}
