/* options.h — the command line of oomdelayfs (GOptionContext), its configuration
 * file (GKeyFile: every option is a key, the command line wins) and its exit codes.
 * Called once, from main, before any thread. */
#ifndef OOMD_OPTIONS_H
#define OOMD_OPTIONS_H

#include <stdbool.h>
#include <glib.h>
#include "oomd/engine.h"

#define OD_CONFIG_DEFAULT "/etc/oomdelayfs/oomdelayfs.conf"
#define OD_STATUS_SOCKET_DEFAULT "/run/oomdelayfs/status.sock"
/* The mount point when neither the command line nor the file names one; the daemon
 * makes it (and /run/oomdelayfs) itself (startup.h: od_make_mountpoint). */
#define OD_MOUNTPOINT_DEFAULT "/run/oomdelayfs/shadow"
#define OD_RUNTIME_DIR "/run/oomdelayfs"

/* Exit codes (documented in --help). */
enum {
	OD_EXIT_OK = 0,         /* clean stop (SIGINT/SIGTERM, unmounted) or --release-all done */
	OD_EXIT_FAILURE = 1,    /* a failure while running */
	OD_EXIT_USAGE = 2,      /* bad command line or configuration file */
	OD_EXIT_NOT_ROOT = 3,   /* not running as root */
	OD_EXIT_MOUNTPOINT = 4, /* mountpoint missing, not a directory, or busy */
	OD_EXIT_CGROUP = 5,     /* no cgroup2 mount, or the memory controller is not enabled */
	OD_EXIT_FUSE = 6,       /* FUSE unavailable (/dev/fuse) or the mount failed */
	OD_EXIT_HANDOVER = 75,  /* SIGUSR2: stopped serving, the mount left to a successor */
};

typedef struct {
	char *mountpoint;   /* NULL with --release-all; else given or OD_MOUNTPOINT_DEFAULT */
	bool mountpoint_default; /* neither the command line nor the file named one */
	char *cgroup_root;  /* NULL: found from the mount table */
	oe_config cfg;
	bool allow_other;   /* false with --no-allow-other */
	unsigned max_threads; /* 0: the shadow tree's default */
	bool release_all;
	bool supervise;     /* --supervise: keep the connection, run the server as a child */
	int watchdog_sec;   /* --watchdog-sec N: the supervisor's watchdog (0: none) */
	bool debug;
	bool version;
	bool foreground;    /* accepted; the daemon always stays in the foreground */
	bool v1_layout;     /* --layout v1: serve the cgroup-v1 memory layout */
	uint64_t protect_min; /* --protect SIZE: own cgroup with memory.min; 0 = stay put */
	int nice;             /* --nice N: niceness of the watcher and kill path (default -20) */
	int rt_priority;      /* --rt-priority N: SCHED_FIFO of the deadline thread and the
			       * kill actuator (default 1; 0 = none) */
	char *config;         /* --config FILE (NULL: OD_CONFIG_DEFAULT, if it exists) */
	bool config_given;    /* --config given: the file must exist */
	bool no_config;       /* --no-config */
	char *status_socket;  /* "" = none */
	char *status_group;   /* NULL: root only */
	int metrics_port;     /* 0: no HTTP listener */
} od_options;

/* Parses argv (GOptionContext), then the configuration file for what argv did not
 * give. Returns OD_EXIT_OK, or OD_EXIT_USAGE with *err set: a file's error reads
 * "FILE:LINE: KEY: why". */
int od_options_parse(od_options *o, int argc, char **argv, GError **err);
void od_options_clear(od_options *o);

/* "64M", "8m", "1G", "4096": memparse syntax, bytes. Exposed for tests/fuzzing. */
bool od_options_parse_size(const char *s, uint64_t *out);

#endif
