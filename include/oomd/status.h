/* status.h — `oomdelayfs status`: the daemon's side (a UNIX socket under
 * /run/oomdelayfs, and optionally an HTTP listener on 127.0.0.1 for a scraper) and
 * the client's side (the `status` subcommand). The client only asks the socket; it
 * never walks the cgroup tree.
 *
 * Protocol: the client connects, sends one line ("text", "json" or "metrics") and
 * reads the answer to EOF. The server is one thread per listener (the UNIX
 * socket's, the metrics port's: a local uid trickling to the port cannot starve
 * root's socket), each serving one connection at a time with one 2 s deadline to
 * read the request and one to send the reply, so a stuck client cannot hold it; it reads the controller through od_controller_snapshot (the
 * engine's lock only to copy the views) and the audit's copies.
 */
#ifndef OOMD_STATUS_H
#define OOMD_STATUS_H

#include <stdint.h>
#include <glib.h>
#include "oomd/audit.h"
#include "oomd/fsstats.h"

/* ---- what a reply is made of (status_fmt.c) ---- */
typedef struct {
	uint64_t id;
	char *path;
	oe_view v;
	size_t listeners;
} od_status_cg;

typedef struct {
	GArray *cgs;     /* od_status_cg, the managed or held cgroups, by path */
	GArray *records; /* od_hold_record, see od_audit_records */
	od_audit_stats st;
	od_fs_opcount ops[64];
	size_t nops;
	int64_t now;
	size_t known, managed, held, overdue; /* overdue: held 1 s past a deadline with D = 0 */
	size_t listeners_total; /* over every known cgroup */
	const char *mountpoint;
	oe_kill_mode mode;
} od_status_data;

void od_status_gather(od_audit *a, const char *mountpoint, oe_kill_mode mode, od_status_data *d);
void od_status_data_clear(od_status_data *d);
/* Each returns a newly allocated reply (g_free). */
char *od_status_text(const od_status_data *d);
char *od_status_json(const od_status_data *d);
char *od_status_metrics(const od_status_data *d);

/* ---- the server (status.c) ---- */
typedef struct {
	const char *socket_path; /* NULL or "": none */
	const char *group;       /* NULL: root only */
	int metrics_port;        /* 0: none */
	const char *mountpoint;
	oe_kill_mode mode;
} od_status_opts;

typedef struct od_status od_status;

/* Binds the socket (mode 0600, or 0660 root:group; its directory is made 0755 if
 * missing and otherwise left alone: the shadow mount may live there) and the optional
 * listener, and starts the thread. NULL with *err set. */
od_status *od_status_start(od_audit *a, const od_status_opts *o, GError **err);
void od_status_stop(od_status *s); /* joins the thread, removes the socket */

/* ---- the client: `oomdelayfs status [--json|--metrics] [--socket PATH]` ---- */
/* argv[0] is "status". Returns the exit status: 0, 1 (daemon not reachable), 2 (usage). */
int od_status_client_main(int argc, char **argv);

#endif
