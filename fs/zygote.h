/* zygote.h — the charge zygote: a small process that makes the charged calls'
 * children (zygote.c). Issue 21: "every allocation a caller causes is charged to
 * that caller" and "no control channel of ours is reachable".
 *
 * Why a process of its own: a charged call runs in a child placed in the caller's
 * cgroup (clone3 CLONE_INTO_CGROUP, charge.h). Made by the daemon, that child was
 * born with a copy of the daemon's descriptor table, /dev/fuse included (and with
 * CLONE_FILES it would share it). A child born into a cgroup its tenant froze
 * never runs until the thaw (cgroup_post_fork sets the frozen cgroup's trap before
 * the child reaches user space), so nothing it would do (close_range) helps: if the
 * daemon then died with no service manager holding the connection, the frozen
 * child kept /dev/fuse open, the mount was not aborted (callers hung instead of
 * ENOTCONN) and a restarted daemon found it busy (s-charge-orphan, on main).
 * Now the children are the zygote's, whose table holds only its end of the
 * daemon's socket, the pidfds of the calls in flight, and per call the caller's
 * cgroup, the call's descriptors and the socket its answer goes back on.
 *
 * The zygote is forked at start (daemon/main.c, before the kept descriptors are
 * served, before any thread, before mlockall: the copy is small), and again by a
 * worker if it died (zygote_link.c). It closes every inherited descriptor but its
 * socket, ignores the stop signals (a group SIGTERM reaches the daemon, which
 * ends it), sets its oom_score_adj to -1000 (its children share its memory: an OOM
 * victim takes every process sharing its mm along, __oom_kill_process) and serves
 * until the daemon's end of the socket closes: then it SIGKILLs the children in
 * flight (a frozen task dies on SIGKILL), reaps them and exits. Why no
 * PR_SET_PDEATHSIG: it is sent when the forking *thread* exits (a worker that
 * restarted the zygote), and a SIGKILL from it would race the clean-up; the
 * socket's EOF comes first anyway (do_exit closes the files, exit_files, before
 * exit_notify signals the children).
 *
 * The zygote's code after the fork makes system calls only: no malloc, no stdio,
 * no glib (it may be a copy of the multi-threaded daemon, whose locks are held by
 * threads that do not exist in the copy). One request at a time is read; the
 * children run concurrently, each with its own mapping (stack, its call's
 * payload), each killed at its own deadline; one call never waits for another's.
 *
 * Wire (SOCK_SEQPACKET, one message a request): fs_zreq, then the payload bytes;
 * SCM_RIGHTS: the answer socket, the cgroup (if has_cg), then the call's
 * descriptors (FS_ARG_FD, FS_ARG_FD_PATH: their index). The answer, fs_zrep, goes
 * back on the answer socket, which the zygote then closes.
 */
#ifndef OOMD_FS_ZYGOTE_H
#define OOMD_FS_ZYGOTE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One argument of a charged system call, as the child is to see it. */
typedef enum {
	FS_ARG_INT,     /* v as is */
	FS_ARG_FD,      /* descriptor v (ours), passed to the child */
	FS_ARG_BUF,     /* len bytes at buf (input only: the child gets a copy) */
	FS_ARG_FD_PATH, /* "/proc/self/fd/N", N the child's number of our descriptor v */
} fs_arg_kind;

typedef struct {
	fs_arg_kind kind;
	long v;
	const void *buf;
	size_t len;
} fs_charge_arg;

#define FS_INT(x) { FS_ARG_INT, (long)(x), NULL, 0 }
#define FS_FD(fd) { FS_ARG_FD, (long)(fd), NULL, 0 }
#define FS_FD_PATH(fd) { FS_ARG_FD_PATH, (long)(fd), NULL, 0 }
#define FS_BUF(p, n) { FS_ARG_BUF, 0, (p), (n) }
#define FS_STR(s) { FS_ARG_BUF, 0, (s), strlen(s) + 1 }

/* One system call: its number and arguments. */
typedef struct {
	long nr;
	fs_charge_arg arg[6];
} fs_charged_syscall;

#define FS_ZYGOTE_MAGIC 0x6f6f6d7aU /* "oomz": version 1 of the wire */
#define FS_ZYGOTE_MAX_PAYLOAD (64 * 1024 + 4096) /* a setxattr value (XATTR_SIZE_MAX) and its name */
#define FS_ZYGOTE_MAX_FDS 8
#define FS_ZYGOTE_MAX_JOBS 256 /* calls in flight; past it "not now" */

typedef struct {
	uint32_t magic;
	int32_t timeout_ms;
	int32_t has_cg;
	uint32_t payload_len;
	int64_t nr;
	struct {
		uint32_t kind;
		uint32_t off, len; /* FS_ARG_BUF: its bytes in the payload */
		int64_t v;         /* FS_ARG_INT: the value; FD kinds: the index in SCM_RIGHTS */
	} arg[6];
} fs_zreq;

typedef struct {
	int32_t err;     /* 0 or errno (charge.h: fs_charge_run's answer) */
	uint8_t placed;  /* false: the cgroup takes no process (EOPNOTSUPP, EBUSY from clone3) */
	uint8_t killed;  /* the child outlived its time-out and was SIGKILLed */
} fs_zrep;

/* Forks the zygote: its pid, *sock our end of its socket (SOCK_CLOEXEC), *pidfd its
 * pidfd; -errno on failure. In the child it never returns. Its exit signal is 0:
 * no SIGCHLD, and no waitpid(-1) of ours (supervisor.c's) reaps it by mistake; reap
 * it through the pidfd (waitid P_PIDFD, __WALL). Any thread; blocks for one fork. */
pid_t fs_zygote_fork(int *sock, int *pidfd);

#endif
