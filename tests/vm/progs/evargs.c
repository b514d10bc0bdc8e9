/* evargs - hostile lines for cgroup.event_control (round three, s-v1stranger).
 *
 *   evargs ECFILE CTLFILE [--file PATH]... TEMPLATE...
 *
 * For each TEMPLATE, one write(2) of it to ECFILE (opened O_WRONLY once per line), with
 * these tokens replaced by descriptor numbers of this process, made fresh for the line:
 *   {E}  an eventfd                         {C}  CTLFILE opened O_RDONLY
 *   {Q}  the eventfd reopened O_PATH        {O}  CTLFILE opened O_PATH
 *   {P}  the read end of a pipe             {X}  a number that was just closed
 *   {F0}, {F1}, ...  the --file PATHs opened O_RDONLY, in order
 *   {Z<n>}  n '0' characters (a leading-zero padded number, an over-long line)
 *   {W}  the eventfd's number + 2^32 (v1 keeps only the low 32 bits)
 * Prints one line per template: "<template> ok" or "<template> <errno name>", in order.
 * Exit: 0 (whatever the writes answered), 1 setup failure, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define MAX_FILES 8

static void die(const char *what)
{
	fprintf(stderr, "evargs: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int must(int fd, const char *what)
{
	if (fd < 0)
		die(what);
	return fd;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fputs("usage: evargs ECFILE CTLFILE [--file PATH]... TEMPLATE...\n", stderr);
		return 2;
	}
	const char *ec = argv[1], *ctl = argv[2];
	const char *files[MAX_FILES];
	int nfiles = 0, i = 3;
	for (; i + 1 < argc && !strcmp(argv[i], "--file"); i += 2) {
		if (nfiles == MAX_FILES)
			return 2;
		files[nfiles++] = argv[i + 1];
	}
	for (; i < argc; i++) {
		const char *t = argv[i];
		int opened[4 + MAX_FILES], nopen = 0;
		int efd = -1, cfd = -1, qfd = -1, ofd = -1, pfd[2] = { -1, -1 }, xfd = -1, ffd[MAX_FILES];
		for (int k = 0; k < nfiles; k++)
			ffd[k] = -1;
		size_t cap = strlen(t) + 64;
		for (const char *z = strstr(t, "{Z"); z; z = strstr(z + 2, "{Z"))
			cap += (size_t)atol(z + 2);
		char *line = malloc(cap), *o = line;
		if (!line)
			die("malloc");
		for (const char *p = t; *p;) {
			char num[32];
			num[0] = 0;
			if (!strncmp(p, "{E}", 3) || !strncmp(p, "{Q}", 3) || !strncmp(p, "{W}", 3)) {
				if (efd < 0)
					efd = opened[nopen++] = must(eventfd(0, EFD_CLOEXEC), "eventfd");
				if (p[1] == 'E')
					snprintf(num, sizeof num, "%d", efd);
				else if (p[1] == 'W')
					snprintf(num, sizeof num, "%llu", (unsigned long long)efd + (1ULL << 32));
				else {
					char self[64];
					snprintf(self, sizeof self, "/proc/self/fd/%d", efd);
					if (qfd < 0)
						qfd = must(open(self, O_PATH | O_CLOEXEC), "O_PATH eventfd");
					snprintf(num, sizeof num, "%d", qfd);
				}
				p += 3;
			} else if (!strncmp(p, "{C}", 3)) {
				if (cfd < 0)
					cfd = must(open(ctl, O_RDONLY | O_CLOEXEC), ctl);
				snprintf(num, sizeof num, "%d", cfd);
				p += 3;
			} else if (!strncmp(p, "{O}", 3)) {
				if (ofd < 0)
					ofd = must(open(ctl, O_PATH | O_CLOEXEC), ctl);
				snprintf(num, sizeof num, "%d", ofd);
				p += 3;
			} else if (!strncmp(p, "{P}", 3)) {
				if (pfd[0] < 0 && pipe2(pfd, O_CLOEXEC) < 0)
					die("pipe");
				snprintf(num, sizeof num, "%d", pfd[0]);
				p += 3;
			} else if (!strncmp(p, "{X}", 3)) {
				if (xfd < 0) {
					/* a high number, closed: the lowest free one would be
					 * taken again by the next token's open */
					int t0 = must(open("/dev/null", O_RDONLY | O_CLOEXEC), "/dev/null");
					xfd = must(fcntl(t0, F_DUPFD_CLOEXEC, 900), "F_DUPFD");
					close(t0);
					close(xfd);
				}
				snprintf(num, sizeof num, "%d", xfd);
				p += 3;
			} else if (!strncmp(p, "{F", 2) && p[2] >= '0' && p[2] <= '9' && p[3] == '}') {
				int k = p[2] - '0';
				if (k >= nfiles)
					return 2;
				if (ffd[k] < 0)
					ffd[k] = must(open(files[k], O_RDONLY | O_CLOEXEC), files[k]);
				snprintf(num, sizeof num, "%d", ffd[k]);
				p += 4;
			} else if (!strncmp(p, "{Z", 2)) {
				char *end;
				long n = strtol(p + 2, &end, 10);
				if (*end != '}')
					return 2;
				memset(o, '0', (size_t)n);
				o += n;
				p = end + 1;
			} else {
				*o++ = *p++;
			}
			size_t nl = strlen(num);
			memcpy(o, num, nl);
			o += nl;
		}
		size_t len = (size_t)(o - line);
		int w = must(open(ec, O_WRONLY | O_CLOEXEC), ec);
		ssize_t n = write(w, line, len);
		int err = n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
		close(w);
		printf("%s %s\n", t, err ? strerrorname_np(err) : "ok");
		fflush(stdout);
		free(line);
		/* the registrations made stay until this process exits (their eventfds closed
		 * here are kept by whoever took them) */
		for (int k = 0; k < nopen; k++)
			close(opened[k]);
		int more[] = { cfd, qfd, ofd, pfd[0], pfd[1] };
		for (size_t k = 0; k < sizeof more / sizeof more[0]; k++)
			if (more[k] >= 0)
				close(more[k]);
		for (int k = 0; k < nfiles; k++)
			if (ffd[k] >= 0)
				close(ffd[k]);
	}
	return 0;
}
