/* sdjob.c — sdjob.h: GetUnitByPID, Unit.Job, Job.JobType over GDBus, asynchronously
 * on a private GMainContext iterated until the answer or the deadline. Asynchronous
 * rather than the _sync calls: g_dbus_connection_new_for_address_sync has no time-out
 * (a connect or an authentication that hangs would hang the stop); here one timer
 * cancels whatever is under way, and the cancelled operation ends the query. */
#define G_LOG_DOMAIN "oomdelayfs"
#include <stdlib.h>
#include <string.h>
#include <gio/gio.h>

#include "oomd/sdjob.h"

#define SD_NAME "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define PROPS "org.freedesktop.DBus.Properties"

od_sdjob_decision od_sdjob_decide(const char *job_type)
{
	if (job_type && (strcmp(job_type, "restart") == 0 || strcmp(job_type, "try-restart") == 0))
		return OD_SDJOB_RESTART;
	return OD_SDJOB_STOP;
}

bool od_sdjob_under_systemd(void)
{
	const char *inv = getenv("INVOCATION_ID"), *ns = getenv("NOTIFY_SOCKET");
	return inv && *inv && ns && *ns;
}

typedef struct {
	GMainContext *ctx;
	GCancellable *cancel;
	GDBusConnection *conn;
	const char *addr[2];
	const char *dest; /* NULL on the private socket (peer to peer) */
	int which;        /* index into addr being tried */
	pid_t pid;
	gint64 deadline;  /* monotonic, us */
	int timeout_ms;
	bool timed_out, done;
	od_sdjob_decision d;
	char *why;
	GSource *grace;
	char *first; /* why the private socket could not be reached, when the bus is tried */
	guint32 job_id;
} query;

static void finish(query *q, od_sdjob_decision d, char *why)
{
	q->d = d;
	q->why = why;
	q->done = true;
}

static void failed(query *q, const char *what, GError *e)
{
	/* our timer's cancel, or the call's own time-out (the same deadline): one message */
	bool late = q->timed_out || g_error_matches(e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
	g_autofree char *msg = late ? g_strdup_printf("no answer within %d ms", q->timeout_ms)
				    : g_strdup(e->message);
	finish(q, OD_SDJOB_UNKNOWN, g_strdup_printf("%s%s%s: %s", q->first ? q->first : "",
						    q->first ? "; " : "", what, msg));
	g_error_free(e);
}

static int remaining_ms(query *q)
{
	gint64 left = (q->deadline - g_get_monotonic_time()) / 1000;
	return left < 1 ? 1 : (int)left;
}

static void call(query *q, const char *path, const char *iface, const char *method, GVariant *args,
		 const GVariantType *reply, GAsyncReadyCallback cb)
{
	g_dbus_connection_call(q->conn, q->dest, path, iface, method, args, reply,
			       G_DBUS_CALL_FLAGS_NO_AUTO_START, remaining_ms(q), q->cancel, cb, q);
}

static GVariant *prop_get(query *q, GAsyncResult *res, const char *what)
{
	GError *e = NULL;
	GVariant *r = g_dbus_connection_call_finish(q->conn, res, &e);
	if (!r) {
		failed(q, what, e);
		return NULL;
	}
	GVariant *v = NULL;
	g_variant_get(r, "(v)", &v);
	g_variant_unref(r);
	return v;
}

static void on_type(GObject *src, GAsyncResult *res, gpointer ud)
{
	(void)src;
	query *q = ud;
	GVariant *v = prop_get(q, res, "JobType");
	if (!v)
		return;
	if (!g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) {
		finish(q, OD_SDJOB_UNKNOWN, g_strdup_printf("JobType is of type %s", g_variant_get_type_string(v)));
	} else {
		const char *t = g_variant_get_string(v, NULL);
		finish(q, od_sdjob_decide(t), g_strdup_printf("job %u (%s)", q->job_id, t));
	}
	g_variant_unref(v);
}

static void on_job(GObject *src, GAsyncResult *res, gpointer ud)
{
	(void)src;
	query *q = ud;
	GVariant *v = prop_get(q, res, "the unit's Job");
	if (!v)
		return;
	if (!g_variant_is_of_type(v, G_VARIANT_TYPE("(uo)"))) {
		finish(q, OD_SDJOB_UNKNOWN, g_strdup_printf("the unit's Job is of type %s", g_variant_get_type_string(v)));
	} else {
		const char *job = NULL;
		g_variant_get(v, "(u&o)", &q->job_id, &job);
		if (q->job_id == 0)
			finish(q, OD_SDJOB_STOP, g_strdup("no job queued for the unit"));
		else
			call(q, job, PROPS, "Get", g_variant_new("(ss)", SD_NAME ".Job", "JobType"),
			     G_VARIANT_TYPE("(v)"), on_type);
	}
	g_variant_unref(v);
}

static void on_unit(GObject *src, GAsyncResult *res, gpointer ud)
{
	(void)src;
	query *q = ud;
	GError *e = NULL;
	GVariant *r = g_dbus_connection_call_finish(q->conn, res, &e);
	if (!r) {
		failed(q, "GetUnitByPID", e);
		return;
	}
	const char *unit = NULL;
	g_variant_get(r, "(&o)", &unit);
	call(q, unit, PROPS, "Get", g_variant_new("(ss)", SD_NAME ".Unit", "Job"), G_VARIANT_TYPE("(v)"), on_job);
	g_variant_unref(r);
}

static void connect_next(query *q);

static void on_connected(GObject *src, GAsyncResult *res, gpointer ud)
{
	(void)src;
	query *q = ud;
	GError *e = NULL;
	q->conn = g_dbus_connection_new_for_address_finish(res, &e);
	if (!q->conn) {
		/* The bus only when the private socket cannot be reached (not root, or a
		 * systemd without it); an answer there that fails would fail on the bus too. */
		if (q->which == 0 && q->addr[1] && !q->timed_out) {
			q->first = g_strdup_printf("%s: %s", q->addr[0], e->message);
			g_error_free(e);
			q->which = 1;
			connect_next(q);
		} else {
			failed(q, q->addr[q->which], e);
		}
		return;
	}
	call(q, SD_PATH, SD_NAME ".Manager", "GetUnitByPID", g_variant_new("(u)", (guint32)q->pid),
	     G_VARIANT_TYPE("(o)"), on_unit);
}

static void connect_next(query *q)
{
	GDBusConnectionFlags f = G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT;
	if (q->which == 1)
		f |= G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION;
	q->dest = q->which == 1 ? SD_NAME : NULL;
	g_dbus_connection_new_for_address(q->addr[q->which], f, NULL, q->cancel, on_connected, q);
}

/* The cancelled operation's own report, or this, OD_SDJOB_GRACE_MS later: an operation
 * that does not heed its cancellable is abandoned (its callback would run only in our
 * context, which nobody iterates again). */
#define OD_SDJOB_GRACE_MS 100
static gboolean on_grace(gpointer ud)
{
	query *q = ud;
	if (!q->done)
		finish(q, OD_SDJOB_UNKNOWN, g_strdup_printf("%s%sno answer within %d ms", q->first ? q->first : "",
							    q->first ? "; " : "", q->timeout_ms));
	return G_SOURCE_REMOVE;
}

static gboolean on_deadline(gpointer ud)
{
	query *q = ud;
	q->timed_out = true;
	g_cancellable_cancel(q->cancel); /* the operation under way ends with G_IO_ERROR_CANCELLED */
	q->grace = g_timeout_source_new(OD_SDJOB_GRACE_MS);
	g_source_set_callback(q->grace, on_grace, q, NULL);
	g_source_attach(q->grace, q->ctx);
	return G_SOURCE_REMOVE;
}

od_sdjob_decision od_sdjob_query(const char *private_address, const char *bus_address, pid_t pid,
				 int timeout_ms, char **why)
{
	g_autofree char *bus = NULL;
	if (!bus_address) {
		GError *e = NULL;
		bus = g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SYSTEM, NULL, &e);
		if (!bus)
			g_error_free(e); /* then the private socket alone */
	}
	query q = { .ctx = g_main_context_new(), .cancel = g_cancellable_new(), .pid = pid,
		    .timeout_ms = timeout_ms, .deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000 };
	q.addr[0] = private_address;
	q.addr[1] = !bus_address ? bus : *bus_address ? bus_address : NULL;
	g_main_context_push_thread_default(q.ctx);
	GSource *timer = g_timeout_source_new((guint)timeout_ms);
	g_source_set_callback(timer, on_deadline, &q, NULL);
	g_source_attach(timer, q.ctx);
	connect_next(&q);
	while (!q.done)
		g_main_context_iteration(q.ctx, TRUE);
	g_source_destroy(timer);
	g_source_unref(timer);
	if (q.grace) {
		g_source_destroy(q.grace);
		g_source_unref(q.grace);
	}
	g_free(q.first);
	if (q.conn) /* private: closed when the last reference (GDBus's worker's) goes */
		g_object_unref(q.conn);
	g_main_context_pop_thread_default(q.ctx);
	g_main_context_unref(q.ctx);
	g_object_unref(q.cancel);
	*why = q.why;
	return q.d;
}
