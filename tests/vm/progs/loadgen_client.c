/* loadgen_client.c - the client processes of loadgen (loadgen.h; what they do: loadgen.c's
 * header). Each runs in a forked process of its own until over(); its own cgroup cNN is written
 * by nobody else, so whatever it writes there must read back.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loadgen.h"

static void op_read_dir(const char *sdir, const char *rdir)
{
	DIR *d = opendir(sdir);
	if (!d) {
		unexpected(who, "opendir %s: %s", sdir, strerror(errno));
		return;
	}
	atomic_fetch_add(&S->dirs_read, 1);
	static char buf[256 * 1024], rbuf[256 * 1024];
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT && e->d_name[0] == 'x')
				continue; /* another client's churn cgroup, gone since the listing */
			unexpected(who, "stat %s/%s: %s", sdir, e->d_name, strerror(errno));
			continue;
		}
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0444))
			continue;
		char sp[8192], rp[8192];
		snprintf(sp, sizeof sp, "%s/%s", sdir, e->d_name);
		ssize_t r = vp_slurp(sp, buf, sizeof buf);
		if (r >= 0) {
			atomic_fetch_add(&S->files_read, 1);
			continue;
		}
		/* the same error on the real file is the kernel's, not the daemon's */
		snprintf(rp, sizeof rp, "%s/%s", rdir, e->d_name);
		ssize_t rr = vp_slurp(rp, rbuf, sizeof rbuf);
		if (rr == r)
			atomic_fetch_add(&S->expected_errs, 1);
		else
			unexpected(who, "read %s: %s (the real file: %s)", sp, strerror((int)-r),
				   rr >= 0 ? "ok" : strerror((int)-rr));
	}
	closedir(d);
}

struct own {
	char s[4096], r[4096]; /* own cgroup, shadow and real */
	unsigned long long T;
	int D;
	unsigned seq;
};

static void op_knob(struct own *o, unsigned *rs)
{
	char p[4200], v[64], x[80];
	unsigned r = (unsigned)rand_r(rs);
	switch (r % 4) {
	case 0:
		o->T = (unsigned long long)rand_r(rs) % 100000;
		snprintf(p, sizeof p, "%s/memory.oom_delay_millisecs", o->s);
		snprintf(v, sizeof v, "%llu\n", o->T);
		write_check(p, v, v);
		break;
	case 1:
		o->D = rand_r(rs) % 2;
		snprintf(p, sizeof p, "%s/memory.oom_control", o->s);
		snprintf(v, sizeof v, "%d\n", o->D);
		snprintf(x, sizeof x, "oom_kill_disable %d\n", o->D);
		write_check(p, v, x);
		break;
	default:
		snprintf(p, sizeof p, "%s/%s", o->s, r % 4 == 2 ? "memory.high" : "memory.max");
		if (rand_r(rs) % 10 == 0)
			snprintf(v, sizeof v, "max\n");
		else
			snprintf(v, sizeof v, "%lld\n", 64 * MiB + (long long)(rand_r(rs) % 65536) * 4096);
		write_check(p, v, v);
		break;
	}
}

static void op_churn(struct own *o)
{
	char sp[4200], f[4300], b[256];
	snprintf(sp, sizeof sp, "%s/x%u", o->s, o->seq++);
	if (mkdir(sp, 0755) < 0) {
		unexpected(who, "mkdir %s: %s", sp, strerror(errno));
		return;
	}
	atomic_fetch_add(&S->mkdirs, 1);
	snprintf(f, sizeof f, "%s/memory.oom_delay_millisecs", sp);
	ssize_t r = vp_slurp(f, b, sizeof b);
	if (r < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	else if (strtoull(b, NULL, 10) != o->T)
		unexpected(who, "%s reads %.30s, not the parent's T %llu (rule 7)", f, b, o->T);
	snprintf(f, sizeof f, "%s/memory.oom_control", sp);
	r = vp_slurp(f, b, sizeof b);
	if (r < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	else if (vp_keyval(b, "oom_kill_disable") != o->D)
		unexpected(who, "%s: oom_kill_disable %lld, not the parent's D %d (rule 7)", f,
			   vp_keyval(b, "oom_kill_disable"), o->D);
	else
		atomic_fetch_add(&S->inherit_checks, 1);
	snprintf(f, sizeof f, "%s/memory.stat", sp);
	if ((r = vp_slurp(f, b, sizeof b)) < 0)
		unexpected(who, "read %s: %s", f, strerror((int)-r));
	if (rmdir(sp) < 0)
		unexpected(who, "rmdir %s: %s", sp, strerror(errno));
	else
		atomic_fetch_add(&S->rmdirs, 1);
}

static void op_listen(const char *cg, unsigned *rs)
{
	int wait_ms = 20 + rand_r(rs) % 180;
	pid_t pid = fork();
	if (pid < 0) {
		unexpected(who, "fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		char p[4200], l[64];
		int efd = eventfd(0, EFD_CLOEXEC);
		snprintf(p, sizeof p, "%s/memory.oom_control", cg);
		int cfd = open(p, O_RDONLY | O_CLOEXEC);
		if (efd < 0 || cfd < 0) {
			fprintf(stderr, "loadgen: listener: eventfd/open %s: %s\n", p, strerror(errno));
			_exit(2);
		}
		snprintf(l, sizeof l, "%d %d", efd, cfd);
		snprintf(p, sizeof p, "%s/cgroup.event_control", cg);
		int e = vp_put(p, l);
		if (e) {
			fprintf(stderr, "loadgen: listener: write '%s' to %s: %s\n", l, p, strerror(-e));
			_exit(2);
		}
		struct pollfd pf = { .fd = efd, .events = POLLIN };
		int n = poll(&pf, 1, wait_ms);
		uint64_t c = 0;
		if (n > 0 && read(efd, &c, sizeof c) != sizeof c)
			c = 0;
		_exit(c ? 1 : 0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) <= 1) {
		atomic_fetch_add(&S->listeners, 1);
		if (WEXITSTATUS(st) == 1)
			atomic_fetch_add(&S->notified, 1);
	} else {
		unexpected(who, "listener on %s failed (status 0x%x)", cg, st);
	}
}

void client(int id)
{
	snprintf(who, sizeof who, "client %d", id);
	unsigned rs = (unsigned)(id * 7919 + getpid());
	struct own o = { .T = 0, .D = 0 };
	snprintf(o.s, sizeof o.s, "%s/c%02d", sbase, id);
	snprintf(o.r, sizeof o.r, "%s/c%02d", rbase, id);
	while (!over()) {
		int r = rand_r(&rs) % 100;
		char sd[4096], rd[4096];
		if (r < 30) {
			int t = rand_r(&rs) % 4;
			if (t == 0) {
				snprintf(sd, sizeof sd, "%s", o.s);
				snprintf(rd, sizeof rd, "%s", o.r);
			} else if (t == 1) {
				snprintf(sd, sizeof sd, "%s", sbase);
				snprintf(rd, sizeof rd, "%s", rbase);
			} else if (t == 2) {
				int c = rand_r(&rs) % nclients;
				snprintf(sd, sizeof sd, "%s/c%02d", sbase, c);
				snprintf(rd, sizeof rd, "%s/c%02d", rbase, c);
			} else {
				int h = nhogs ? rand_r(&rs) % nhogs : 0;
				snprintf(sd, sizeof sd, "%s/h%d", sbase, h);
				snprintf(rd, sizeof rd, "%s/h%d", rbase, h);
			}
			op_read_dir(sd, rd);
		} else if (r < 65) {
			op_knob(&o, &rs);
		} else if (r < 85) {
			op_churn(&o);
		} else {
			if (nhogs && rand_r(&rs) % 2) {
				snprintf(sd, sizeof sd, "%s/h%d", sbase, rand_r(&rs) % nhogs);
				op_listen(sd, &rs);
			} else {
				op_listen(o.s, &rs);
			}
		}
	}
}

