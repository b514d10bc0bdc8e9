/* fdstore.c — sd_notify plumbing (fdstore.h): the same messages reach systemd or
 * the supervisor (supervisor.c, through the socketpair end it passed us), both
 * sent by notify.c, which never waits for the receiver; descriptors come back
 * with LISTEN_FDS (read through libsystemd).
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "oomd/fdstore.h"
#include "oomd/notify.h"

static const char *const names[] = { "fuse", "state", "root" };

static int *slot(od_kept_fds *k, unsigned i)
{
	int *s[] = { &k->fuse_fd, &k->state_fd, &k->root_fd };
	return s[i];
}

void od_fdstore_take(od_kept_fds *k)
{
	*k = (od_kept_fds){ -1, -1, -1 };
	char **got = NULL;
	int n = sd_listen_fds_with_names(1, &got); /* sets FD_CLOEXEC on each */
	if (n < 0)
		g_warning("descriptors passed by the service manager: %s", g_strerror(-n));
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		unsigned j = 0;
		while (j < G_N_ELEMENTS(names) && !(got && got[i] && strcmp(got[i], names[j]) == 0))
			j++;
		if (j == G_N_ELEMENTS(names) || *slot(k, j) >= 0) {
			g_warning("a passed descriptor named '%s' is not ours: closed",
				  got && got[i] ? got[i] : "?");
			close(fd);
			continue;
		}
		*slot(k, j) = fd;
	}
	g_strfreev(got);
}

bool od_fdstore_keep(const od_kept_fds *k)
{
	if (!od_notify_available())
		return false;
	/* Whatever is left under our names belongs to a dead connection (systemd drops
	 * only the /dev/fuse descriptor by itself, on its EPOLLERR): a later start must
	 * not pair the new connection with an old INIT record. */
	od_fdstore_drop();
	od_kept_fds c = *k;
	for (unsigned i = 0; i < G_N_ELEMENTS(names); i++) {
		int fd = *slot(&c, i);
		if (fd < 0)
			continue;
		g_autofree char *msg = g_strdup_printf("FDSTORE=1\nFDNAME=%s", names[i]);
		/* Start-up, before READY=1: a manager slow to read gets a second. */
		int r = od_notify_send_patient(msg, fd, 1000);
		if (r < 0) {
			g_warning("keeping the '%s' descriptor in the service manager: %s "
				  "(FileDescriptorStoreMax= in the unit?)", names[i], g_strerror(-r));
			return false;
		}
	}
	return true;
}

void od_fdstore_drop(void)
{
	for (unsigned i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *msg = g_strdup_printf("FDSTOREREMOVE=1\nFDNAME=%s", names[i]);
		(void)od_notify_send(msg, -1);
	}
}

void od_notify_ready(const char *status)
{
	g_autofree char *msg = g_strdup_printf("READY=1\nSTATUS=%s", status);
	(void)od_notify_send(msg, -1);
}

void od_notify_status(const char *status)
{
	g_autofree char *msg = g_strdup_printf("STATUS=%s", status);
	(void)od_notify_send(msg, -1);
}

void od_notify_stopping(void)
{
	(void)od_notify_send("STOPPING=1", -1);
}

int od_watchdog_period_ms(void)
{
	uint64_t usec = 0;
	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return 0;
	return (int)MAX(usec / 1000, 4);
}

typedef struct {
	uint64_t (*beats)(void *ud);
	void *ud;
	uint64_t last;
	bool warned;
} watchdog;

static gboolean feed(gpointer data)
{
	watchdog *w = data;
	uint64_t b = w->beats(w->ud);
	if (b != w->last) {
		w->last = b;
		w->warned = false;
		(void)od_notify_send("WATCHDOG=1", -1);
	} else if (!w->warned) {
		/* No ping: the manager restarts us when the period runs out. */
		g_warning("watchdog: the deadline thread has not beaten for half a period; not feeding");
		w->warned = true;
	}
	return G_SOURCE_CONTINUE;
}

void od_watchdog_start(int period_ms, uint64_t (*beats)(void *ud), void *ud)
{
	if (period_ms <= 0)
		return;
	watchdog *w = g_new0(watchdog, 1); /* lives as long as the process */
	w->beats = beats;
	w->ud = ud;
	w->last = beats(ud);
	(void)od_notify_send("WATCHDOG=1", -1);
	g_timeout_add_full(G_PRIORITY_HIGH, (guint)period_ms / 2, feed, w, g_free);
	g_message("watchdog: WATCHDOG=1 every %d ms while the deadline thread beats", period_ms / 2);
}
