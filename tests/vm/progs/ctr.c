/* ctr — a minimal container for the survival scenarios (f-ctr-restart):
 *   ctr CGROUP_DIR VIEW_DIR CMD [ARGS...]
 * Moves itself into the real cgroup CGROUP_DIR, unshares the mount, pid and cgroup
 * namespaces (so the cgroup namespace's root is that cgroup), and in the new pid
 * namespace bind-mounts VIEW_DIR (its shadow subtree) over /sys/fs/cgroup, as LXC
 * and LXCFS do, then runs CMD. Exits with CMD's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "ctr: %s: %s\n", what, strerror(errno));
	return 125;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: ctr CGROUP_DIR VIEW_DIR CMD [ARGS...]\n");
		return 2;
	}
	char procs[4096];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", argv[1]);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		return die(procs);
	close(fd);
	if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWCGROUP) < 0)
		return die("unshare");
	pid_t pid = fork();
	if (pid < 0)
		return die("fork");
	if (pid == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(die("mount --make-rprivate /"));
		if (mount(argv[2], "/sys/fs/cgroup", NULL, MS_BIND, NULL) < 0)
			_exit(die("bind mount over /sys/fs/cgroup"));
		execvp(argv[3], argv + 3);
		_exit(die(argv[3]));
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
