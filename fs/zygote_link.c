/* zygote_link.c — zygote_link.h, include/oomd/zygote.h. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zygote_link.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct od_zygote {
	GMutex lock;
	int sock;  /* our end; -1: no zygote */
	int pidfd; /* its pidfd; -1: no zygote */
	pid_t pid;
	gint64 last_warn; /* the rate limit of the one line (under lock) */
};

/* One line per 10 s at most (under z->lock). */
static bool warn_due(od_zygote *z)
{
	gint64 now = g_get_monotonic_time();
	bool due = !z->last_warn || now - z->last_warn >= 10 * G_USEC_PER_SEC;
	if (due)
		z->last_warn = now;
	return due;
}

/* Reaps the zygote behind z->pidfd, SIGKILLing it first if kill (under z->lock). */
static void drop_locked(od_zygote *z, bool kill)
{
	if (z->pidfd >= 0) {
		if (kill)
			(void)pidfd_send_signal(z->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid((idtype_t)P_PIDFD, (id_t)z->pidfd, &si, WEXITED | __WALL) < 0 && errno == EINTR)
			;
		close(z->pidfd);
	}
	if (z->sock >= 0)
		close(z->sock);
	z->sock = z->pidfd = -1;
	z->pid = 0;
}

static int fork_locked(od_zygote *z)
{
	pid_t pid = fs_zygote_fork(&z->sock, &z->pidfd);
	if (pid < 0) {
		z->sock = z->pidfd = -1;
		return -pid;
	}
	z->pid = pid;
	return 0;
}

od_zygote *od_zygote_new(void)
{
	od_zygote *z = g_new0(od_zygote, 1);
	g_mutex_init(&z->lock);
	z->sock = z->pidfd = -1;
	int err = fork_locked(z);
	if (err)
		g_warning("cannot fork the charge zygote: %s; trying again at the first charged call",
			  g_strerror(err));
	return z;
}

void od_zygote_free(od_zygote *z)
{
	if (!z)
		return;
	g_mutex_lock(&z->lock);
	if (z->sock >= 0) {
		close(z->sock); /* EOF: it kills its children in flight and exits */
		z->sock = -1;
	}
	struct pollfd p = { .fd = z->pidfd, .events = POLLIN };
	bool gone = z->pidfd < 0 || poll(&p, 1, 2000) > 0;
	drop_locked(z, !gone);
	g_mutex_unlock(&z->lock);
	g_mutex_clear(&z->lock);
	g_free(z);
}

pid_t fs_zygote_pid(od_zygote *z)
{
	g_mutex_lock(&z->lock);
	pid_t pid = z->pid;
	g_mutex_unlock(&z->lock);
	return pid;
}

/* A copy of the zygote's socket for one call (a restart by another worker closes
 * z->sock meanwhile), the zygote forked again if it died; -1 with *err. */
static int sock_for_call(od_zygote *z, int *err)
{
	g_mutex_lock(&z->lock);
	struct pollfd p = { .fd = z->pidfd, .events = POLLIN };
	if (z->pidfd >= 0 && poll(&p, 1, 0) > 0) {
		if (warn_due(z))
			g_warning("the charge zygote (pid %d) died; forking it again", (int)z->pid);
		drop_locked(z, false);
	}
	*err = 0;
	if (z->sock < 0 && (*err = fork_locked(z)) != 0 && warn_due(z))
		g_warning("cannot fork the charge zygote: %s: a caller's setxattr/mkdir is told to "
			  "try again", g_strerror(*err));
	int fd = z->sock >= 0 ? fcntl(z->sock, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0 && !*err)
		*err = errno;
	g_mutex_unlock(&z->lock);
	return fd;
}

static int ms_left(gint64 end)
{
	gint64 left = end - g_get_monotonic_time();
	return left <= 0 ? 0 : (int)((left + 999) / 1000);
}

/* The request: header and payload in one buffer, its descriptors in fds. */
static int send_request(int sock, int reply, int cg, const fs_charged_syscall *sc, int timeout_ms,
			gint64 end)
{
	fs_zreq q = { .magic = FS_ZYGOTE_MAGIC, .timeout_ms = timeout_ms, .has_cg = cg >= 0,
		      .nr = sc->nr };
	int fds[FS_ZYGOTE_MAX_FDS];
	int nfds = 0, base;
	fds[nfds++] = reply;
	if (cg >= 0)
		fds[nfds++] = cg;
	base = nfds;
	size_t payload = 0;
	for (int i = 0; i < 6; i++) {
		const fs_charge_arg *a = &sc->arg[i];
		q.arg[i].kind = a->kind;
		if (a->kind == FS_ARG_BUF) {
			if (a->len > FS_ZYGOTE_MAX_PAYLOAD - payload)
				return E2BIG;
			q.arg[i].off = (uint32_t)payload;
			q.arg[i].len = (uint32_t)a->len;
			payload += a->len;
		} else if (a->kind == FS_ARG_FD || a->kind == FS_ARG_FD_PATH) {
			if (nfds == FS_ZYGOTE_MAX_FDS)
				return EINVAL;
			q.arg[i].v = nfds - base;
			fds[nfds++] = (int)a->v;
		} else {
			q.arg[i].v = a->v;
		}
	}
	q.payload_len = (uint32_t)payload;
	g_autofree char *buf = g_malloc(sizeof q + payload);
	memcpy(buf, &q, sizeof q);
	for (int i = 0; i < 6; i++)
		if (sc->arg[i].kind == FS_ARG_BUF && sc->arg[i].len)
			memcpy(buf + sizeof q + q.arg[i].off, sc->arg[i].buf, sc->arg[i].len);
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * FS_ZYGOTE_MAX_FDS)];
	} cm;
	memset(&cm, 0, sizeof cm);
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof q + payload };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	for (;;) {
		if (sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return errno == EPIPE || errno == ECONNREFUSED ? EAGAIN : errno;
		struct pollfd p = { .fd = sock, .events = POLLOUT };
		int ms = ms_left(end);
		if (ms == 0 || (poll(&p, 1, ms) < 0 && errno != EINTR))
			return EAGAIN;
	}
}

int fs_zygote_call(od_zygote *z, int cg, const fs_charged_syscall *sc, int timeout_ms, bool *placed,
		   bool *killed)
{
	*placed = true;
	*killed = false;
	int err;
	int sock = sock_for_call(z, &err);
	if (sock < 0)
		return EAGAIN;
	int rp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp) < 0) {
		err = errno;
		close(sock);
		return err;
	}
	gint64 end = g_get_monotonic_time() + (gint64)(timeout_ms + FS_ZYGOTE_GRACE_MS) * 1000;
	err = send_request(sock, rp[1], cg, sc, timeout_ms, end);
	close(sock);
	close(rp[1]); /* the zygote holds its copy: its answer, or EOF if it dies */
	fs_zrep r;
	ssize_t n = -1;
	while (!err) {
		struct pollfd p = { .fd = rp[0], .events = POLLIN };
		int ms = ms_left(end);
		int pr = ms ? poll(&p, 1, ms) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr > 0)
			n = recv(rp[0], &r, sizeof r, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN) && pr > 0)
			continue;
		break;
	}
	close(rp[0]);
	if (err)
		return err;
	if (n != (ssize_t)sizeof r) {
		g_mutex_lock(&z->lock);
		if (warn_due(z))
			g_warning("the charge zygote (pid %d) did not answer a charged call within %d ms%s: "
				  "the caller is told to try again (EBUSY, EAGAIN)", (int)z->pid,
				  timeout_ms + FS_ZYGOTE_GRACE_MS, n == 0 ? " (it closed the call)" : "");
		g_mutex_unlock(&z->lock);
		return EAGAIN;
	}
	*placed = r.placed;
	*killed = r.killed;
	return r.err;
}
