/* notifyx - the sd_notify channel from outside, for s-notify (issue 21, item 1).
 *
 *   notifyx send ADDR
 *       what uid 1000 did to the supervisor's old abstract socket: one datagram
 *       "FDSTORE=1\nFDNAME=fuse" carrying a descriptor (SCM_RIGHTS) to ADDR ("@name" or a
 *       path), without waiting; prints "ok" or the errno's name (exit 0 either way)
 *   notifyx sink ADDR READYFILE
 *       a service manager that stops reading: binds ADDR with SO_PASSCRED, reads (and
 *       closes what it is sent) until a datagram holds READY=1, then fills its own receive
 *       queue from a second socket until EAGAIN, writes "full N" to READYFILE and never
 *       reads again; a sender that waits for room waits for ever
 *
 * Exit status: 0 ok, 1 failure (message on stderr), 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>


static socklen_t address(const char *s, struct sockaddr_un *a)
{
	size_t n = strlen(s);
	if (n < 2 || n >= sizeof a->sun_path || (s[0] != '@' && s[0] != '/')) {
		fprintf(stderr, "notifyx: bad address %s\n", s);
		exit(2);
	}
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, s, n);
	if (s[0] == '@')
		a->sun_path[0] = 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (s[0] == '/'));
}

static int cmd_send(const char *addr)
{
	struct sockaddr_un a;
	socklen_t al = address(addr, &a);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int p[2];
	if (s < 0 || pipe(p) < 0) {
		perror("notifyx: socket/pipe");
		return 1;
	}
	const char *msg = "FDSTORE=1\nFDNAME=fuse";
	struct iovec iov = { (void *)msg, strlen(msg) };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct msghdr m = { .msg_name = &a, .msg_namelen = al, .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = &ctl, .msg_controllen = sizeof ctl };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &p[0], sizeof(int));
	if (sendmsg(s, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		printf("%s\n", strerrorname_np(errno));
	else
		printf("ok\n");
	return 0;
}

static int cmd_sink(const char *addr, const char *ready)
{
	struct sockaddr_un a;
	socklen_t al = address(addr, &a);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0 ||
	    bind(s, (struct sockaddr *)&a, al) < 0) {
		perror("notifyx: sink socket");
		return 1;
	}
	for (;;) {
		char buf[4096];
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(16 * sizeof(int))];
		} ctl;
		struct iovec iov = { buf, sizeof buf - 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
				    .msg_controllen = sizeof ctl };
		ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			perror("notifyx: recvmsg");
			return 1;
		}
		buf[n] = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
					close(fd);
				}
		if (strstr(buf, "READY=1"))
			break;
	}
	int f = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	long sent = 0;
	while (sendto(f, "x", 1, MSG_DONTWAIT, (struct sockaddr *)&a, al) == 1)
		sent++;
	if (errno != EAGAIN) {
		perror("notifyx: filling the queue");
		return 1;
	}
	FILE *r = fopen(ready, "w");
	if (!r || fprintf(r, "full %ld\n", sent) < 0 || fclose(r) != 0) {
		perror("notifyx: ready file");
		return 1;
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "send"))
		return cmd_send(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "sink"))
		return cmd_sink(argv[2], argv[3]);
	fputs("usage: notifyx send ADDR | sink ADDR READYFILE\n", stderr);
	return 2;
}
