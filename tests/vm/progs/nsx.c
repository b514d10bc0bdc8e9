/* nsx — namespaces and descriptors for the migration scenarios (s-procs, s-ctr).
 *
 *   nsx write FILE VALUE
 *       open FILE for writing and write VALUE; prints "ok" or the errno's name
 *   nsx openas UID GID FILE VALUE
 *       open FILE for writing with euid/egid UID/GID (no groups, so no
 *       capabilities), become root again, then write VALUE through that
 *       descriptor as root: the CVE-2021-4197 shape. Prints as `write`.
 *   nsx stealfd PID FD VALUE
 *       take descriptor FD of process PID (pidfd_getfd) and write VALUE to it
 *   nsx threads FILE
 *       start a second thread, write its tid to FILE, sleep forever
 *   nsx ctr [-U UID] REALCG BOXDIR CMD [ARGS...]
 *       a container: move into the real cgroup REALCG, then unshare the cgroup,
 *       pid and mount namespaces (with -U: first become UID, then also a user
 *       namespace mapping root to UID), bind BOXDIR over /sys/fs/cgroup, mount
 *       a /proc of the new pid namespace and run CMD as its pid 1's child.
 *
 * Exit status: 0 ok (a write that failed is reported on stdout, exit 0),
 * 1 setup failure (message on stderr), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "nsx: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fputs("usage: nsx write FILE VALUE | openas UID GID FILE VALUE | stealfd PID FD VALUE\n"
	      "       | threads FILE\n"
	      "       | ctr [-U UID] REALCG BOXDIR CMD [ARGS...]\n", stderr);
	exit(2);
}

static void report(int fd, const char *value)
{
	if (fd < 0) {
		printf("%s\n", strerrorname_np(errno));
		return;
	}
	ssize_t n = write(fd, value, strlen(value));
	printf("%s\n", n < 0 ? strerrorname_np(errno) : "ok");
}

static void put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) < 0)
		die(path);
	close(fd);
}

static int ctr(int argc, char **argv)
{
	long uid = -1;
	if (argc > 2 && strcmp(argv[0], "-U") == 0) {
		uid = strtol(argv[1], NULL, 10);
		argc -= 2;
		argv += 2;
	}
	if (argc < 3)
		usage();
	char path[4096], self[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", argv[0]);
	snprintf(self, sizeof self, "%d\n", (int)getpid());
	put(path, self); /* as root, in the real tree: the container's cgroup */
	int flags = CLONE_NEWCGROUP | CLONE_NEWPID | CLONE_NEWNS;
	if (uid >= 0) {
		if (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
		    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0)
			die("become the container's uid");
		/* setresuid made us undumpable: our uid_map and gid_map would be root's */
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			die("PR_SET_DUMPABLE");
		flags |= CLONE_NEWUSER;
	}
	if (unshare(flags) < 0)
		die("unshare");
	if (uid >= 0) {
		char map[64];
		snprintf(map, sizeof map, "0 %ld 1\n", uid);
		put("/proc/self/setgroups", "deny");
		put("/proc/self/uid_map", map);
		put("/proc/self/gid_map", map);
	}
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			die("make / private");
		if (mount(argv[1], "/sys/fs/cgroup", NULL, MS_BIND | MS_REC, NULL) < 0)
			die("bind the box over /sys/fs/cgroup");
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			die("mount /proc");
		execvp(argv[2], argv + 2);
		die(argv[2]);
	}
	int st;
	if (waitpid(child, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void *second(void *arg)
{
	FILE *f = fopen(arg, "w");
	if (!f)
		die(arg);
	fprintf(f, "%d\n", (int)gettid());
	fclose(f);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	const char *cmd = argv[1];
	if (strcmp(cmd, "write") == 0 && argc == 4) {
		report(open(argv[2], O_WRONLY | O_CLOEXEC), argv[3]);
	} else if (strcmp(cmd, "openas") == 0 && argc == 6) {
		gid_t gid = (gid_t)strtoul(argv[3], NULL, 10);
		uid_t uid = (uid_t)strtoul(argv[2], NULL, 10);
		if (setgroups(0, NULL) < 0 || setegid(gid) < 0 || seteuid(uid) < 0)
			die("become the opener");
		int fd = open(argv[4], O_WRONLY | O_CLOEXEC);
		int err = errno;
		if (seteuid(0) < 0 || setegid(0) < 0)
			die("become root again");
		errno = err;
		report(fd, argv[5]);
	} else if (strcmp(cmd, "stealfd") == 0 && argc == 5) {
		int pidfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
		if (pidfd < 0)
			die("pidfd_open");
		int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(argv[3]), 0);
		if (fd < 0)
			die("pidfd_getfd");
		report(fd, argv[4]);
	} else if (strcmp(cmd, "threads") == 0 && argc == 3) {
		pthread_t t;
		if ((errno = pthread_create(&t, NULL, second, argv[2])) != 0)
			die("pthread_create");
		for (;;)
			pause();
	} else if (strcmp(cmd, "ctr") == 0) {
		return ctr(argc - 2, argv + 2);
	} else {
		usage();
	}
	return 0;
}
