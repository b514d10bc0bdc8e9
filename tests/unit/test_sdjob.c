/* Unit tests of the question the daemon asks systemd on SIGTERM (sdjob.h): the JobType
 * mapping, and od_sdjob_query against a fake systemd: a GDBusServer on a temporary unix
 * socket, in a thread of its own, answering Manager.GetUnitByPID, Unit.Job and
 * Job.JobType as systemd 252 does (and the bus's Hello, for the fallback through a
 * message bus). Failures: no socket, an error reply, a peer that never answers -- each
 * an orderly stop (OD_SDJOB_UNKNOWN) within the time-out, with the reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <gio/gio.h>

#include "oomd/sdjob.h"

static double now_ms(void)
{
	return (double)g_get_monotonic_time() / 1000.0;
}

Test(sdjob, job_type_to_decision)
{
	cr_assert_eq(od_sdjob_decide("restart"), OD_SDJOB_RESTART);
	cr_assert_eq(od_sdjob_decide("try-restart"), OD_SDJOB_RESTART);
	const char *stops[] = { "stop", "start", "reload", "reload-or-start", "verify-active", "nop",
				"restartx", "", NULL };
	for (size_t i = 0; i < G_N_ELEMENTS(stops); i++)
		cr_assert_eq(od_sdjob_decide(stops[i]), OD_SDJOB_STOP, "%s", stops[i] ? stops[i] : "NULL");
}

Test(sdjob, systemd_is_the_manager_only_with_both_variables)
{
	unsetenv("INVOCATION_ID");
	unsetenv("NOTIFY_SOCKET");
	cr_assert_not(od_sdjob_under_systemd());
	setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef", 1);
	cr_assert_not(od_sdjob_under_systemd(), "a server under --supervise has no NOTIFY_SOCKET");
	setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
	cr_assert(od_sdjob_under_systemd());
	setenv("INVOCATION_ID", "", 1);
	cr_assert_not(od_sdjob_under_systemd());
}

/* ---- the fake systemd --------------------------------------------------- */

static const char fake_xml[] =
	"<node>"
	" <interface name='org.freedesktop.systemd1.Manager'>"
	"  <method name='GetUnitByPID'><arg type='u' direction='in'/><arg type='o' direction='out'/></method>"
	" </interface>"
	" <interface name='org.freedesktop.systemd1.Unit'><property name='Job' type='(uo)' access='read'/></interface>"
	" <interface name='org.freedesktop.systemd1.Job'><property name='JobType' type='s' access='read'/></interface>"
	" <interface name='org.freedesktop.DBus'>"
	"  <method name='Hello'><arg type='s' direction='out'/></method>"
	" </interface>"
	"</node>";

#define UNIT_PATH "/org/freedesktop/systemd1/unit/oomdelayfs_2eservice"
#define JOB_PATH "/org/freedesktop/systemd1/job/42"

static struct {
	guint32 pid;          /* the pid GetUnitByPID knows */
	guint32 job_id;       /* 0: no job */
	const char *job_type;
	bool silent;          /* GetUnitByPID never answered */
	GMainContext *ctx;
	GDBusServer *server;
	GDBusNodeInfo *info;
	GPtrArray *conns;
	char *dir, *addr;
	GMutex lock;
	GCond cond;
	bool ready;
} fake;

static void fake_call(GDBusConnection *c, const char *sender, const char *path, const char *iface,
		      const char *method, GVariant *args, GDBusMethodInvocation *inv, gpointer ud)
{
	(void)c, (void)sender, (void)path, (void)iface, (void)ud;
	if (strcmp(method, "Hello") == 0) {
		g_dbus_method_invocation_return_value(inv, g_variant_new("(s)", ":1.7"));
		return;
	}
	guint32 pid;
	g_variant_get(args, "(u)", &pid);
	if (fake.silent) {
		g_object_ref(inv); /* held, never answered */
		return;
	}
	if (pid != fake.pid)
		g_dbus_method_invocation_return_dbus_error(inv, "org.freedesktop.systemd1.NoUnitForPID",
							   "PID 1234 does not belong to any loaded unit.");
	else
		g_dbus_method_invocation_return_value(inv, g_variant_new("(o)", UNIT_PATH));
}

static GVariant *fake_get(GDBusConnection *c, const char *sender, const char *path, const char *iface,
			  const char *prop, GError **err, gpointer ud)
{
	(void)c, (void)sender, (void)path, (void)iface, (void)err, (void)ud;
	if (strcmp(prop, "Job") == 0)
		return g_variant_new("(uo)", fake.job_id, fake.job_id ? JOB_PATH : "/");
	return g_variant_new_string(fake.job_type);
}

static const GDBusInterfaceVTable fake_vtable = { fake_call, fake_get, NULL, { 0 } };

static void reg(GDBusConnection *c, const char *path, const char *iface)
{
	GError *e = NULL;
	guint id = g_dbus_connection_register_object(c, path, g_dbus_node_info_lookup_interface(fake.info, iface),
						     &fake_vtable, NULL, NULL, &e);
	cr_assert_neq(id, 0, "%s", e ? e->message : "");
}

static gboolean on_new_connection(GDBusServer *s, GDBusConnection *c, gpointer ud)
{
	(void)s, (void)ud;
	g_ptr_array_add(fake.conns, g_object_ref(c));
	reg(c, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager");
	reg(c, "/org/freedesktop/DBus", "org.freedesktop.DBus");
	reg(c, UNIT_PATH, "org.freedesktop.systemd1.Unit");
	if (fake.job_id)
		reg(c, JOB_PATH, "org.freedesktop.systemd1.Job");
	return TRUE;
}

static gpointer fake_thread(gpointer ud)
{
	(void)ud;
	g_main_context_push_thread_default(fake.ctx);
	GError *e = NULL;
	g_autofree char *guid = g_dbus_generate_guid();
	fake.server = g_dbus_server_new_sync(fake.addr, G_DBUS_SERVER_FLAGS_NONE, guid, NULL, NULL, &e);
	cr_assert_not_null(fake.server, "%s", e ? e->message : "");
	g_signal_connect(fake.server, "new-connection", G_CALLBACK(on_new_connection), NULL);
	g_dbus_server_start(fake.server);
	g_mutex_lock(&fake.lock);
	fake.ready = true;
	g_cond_signal(&fake.cond);
	g_mutex_unlock(&fake.lock);
	for (;;)
		g_main_context_iteration(fake.ctx, TRUE);
	return NULL;
}

static void fake_start(guint32 job_id, const char *job_type)
{
	fake.pid = (guint32)getpid();
	fake.job_id = job_id;
	fake.job_type = job_type;
	fake.ctx = g_main_context_new();
	fake.conns = g_ptr_array_new();
	fake.info = g_dbus_node_info_new_for_xml(fake_xml, NULL);
	fake.dir = g_dir_make_tmp("sdjob-XXXXXX", NULL);
	cr_assert_not_null(fake.dir);
	fake.addr = g_strdup_printf("unix:path=%s/private", fake.dir);
	g_thread_unref(g_thread_new("fake-systemd", fake_thread, NULL));
	g_mutex_lock(&fake.lock);
	while (!fake.ready)
		g_cond_wait(&fake.cond, &fake.lock);
	g_mutex_unlock(&fake.lock);
}

/* After each test with the fake (.fini): the socket and its directory. */
static void fake_clean(void)
{
	if (!fake.dir)
		return;
	g_autofree char *sock = g_strdup_printf("%s/private", fake.dir);
	unlink(sock);
	rmdir(fake.dir);
}

/* A missing socket in the temporary directory: ENOENT on connect. */
static char *missing(void)
{
	return g_strdup_printf("unix:path=%s/none", fake.dir ? fake.dir : "/nonexistent-oomd");
}

/* ---- the answers -------------------------------------------------------- */

/* The fake answers job_id (0: none) of job_type: the query decides d, saying why. */
static void expect(guint32 job_id, const char *job_type, od_sdjob_decision d, const char *why)
{
	fake_start(job_id, job_type);
	g_autofree char *got = NULL;
	cr_assert_eq(od_sdjob_query(fake.addr, "", getpid(), 2000, &got), d, "%s", got);
	cr_assert_str_eq(got, why);
}

Test(sdjob, a_restart_job_is_a_hand_over, .timeout = 20, .fini = fake_clean)
{
	expect(42, "restart", OD_SDJOB_RESTART, "job 42 (restart)");
}

Test(sdjob, a_try_restart_job_is_a_hand_over, .timeout = 20, .fini = fake_clean)
{
	expect(43, "try-restart", OD_SDJOB_RESTART, "job 43 (try-restart)");
}

Test(sdjob, a_stop_job_is_a_stop, .timeout = 20, .fini = fake_clean)
{
	expect(44, "stop", OD_SDJOB_STOP, "job 44 (stop)");
}

Test(sdjob, no_job_is_a_stop, .timeout = 20, .fini = fake_clean)
{
	expect(0, NULL, OD_SDJOB_STOP, "no job queued for the unit"); /* `systemctl kill`, kill -TERM */
}

Test(sdjob, the_bus_when_the_private_socket_is_missing, .timeout = 20, .fini = fake_clean)
{
	fake_start(45, "restart");
	g_autofree char *none = missing(), *why = NULL;
	cr_assert_eq(od_sdjob_query(none, fake.addr, getpid(), 2000, &why), OD_SDJOB_RESTART, "%s", why);
	cr_assert_str_eq(why, "job 45 (restart)");
}

/* ---- the failures: each an orderly stop, at once or within the time-out ---------- */

Test(sdjob, no_socket_at_all_is_unknown_at_once, .timeout = 20)
{
	g_autofree char *dir = g_dir_make_tmp("sdjob-XXXXXX", NULL);
	g_autofree char *a = g_strdup_printf("unix:path=%s/private", dir);
	g_autofree char *b = g_strdup_printf("unix:path=%s/system_bus_socket", dir);
	g_autofree char *why = NULL;
	double t0 = now_ms();
	cr_assert_eq(od_sdjob_query(a, b, getpid(), 2000, &why), OD_SDJOB_UNKNOWN);
	double took = now_ms() - t0;
	cr_assert_lt(took, 500.0, "%.0f ms", took);
	cr_assert_not_null(strstr(why, "/private: "), "both failures named: %s", why);
	cr_assert_not_null(strstr(why, "/system_bus_socket: "), "%s", why);
	cr_assert_not_null(strstr(why, "No such file"), "GLib's message kept: %s", why);
	rmdir(dir);
}

Test(sdjob, an_unknown_pid_is_unknown, .timeout = 20, .fini = fake_clean)
{
	fake_start(42, "restart");
	g_autofree char *why = NULL;
	cr_assert_eq(od_sdjob_query(fake.addr, "", getpid() + 1, 2000, &why), OD_SDJOB_UNKNOWN, "%s", why);
	cr_assert_not_null(strstr(why, "GetUnitByPID: "), "%s", why);
	cr_assert_not_null(strstr(why, "does not belong to any loaded unit"), "%s", why);
}

Test(sdjob, a_systemd_that_does_not_answer_costs_the_time_out, .timeout = 20, .fini = fake_clean)
{
	fake_start(42, "restart");
	fake.silent = true;
	g_autofree char *why = NULL;
	double t0 = now_ms();
	cr_assert_eq(od_sdjob_query(fake.addr, "", getpid(), 300, &why), OD_SDJOB_UNKNOWN, "%s", why);
	double took = now_ms() - t0;
	cr_assert(took >= 290.0 && took < 800.0, "%.0f ms", took);
	cr_assert_not_null(strstr(why, "no answer within 300 ms"), "%s", why);
}

/* A socket that is listened on but never accepted: connect() succeeds (the backlog),
 * the authentication waits for an answer that never comes. */
Test(sdjob, a_peer_that_never_authenticates_costs_the_time_out, .timeout = 20)
{
	g_autofree char *dir = g_dir_make_tmp("sdjob-XXXXXX", NULL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/private", dir);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_geq(s, 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(s, 8), 0);
	g_autofree char *a = g_strdup_printf("unix:path=%s", sa.sun_path);
	g_autofree char *why = NULL;
	double t0 = now_ms();
	cr_assert_eq(od_sdjob_query(a, "", getpid(), 300, &why), OD_SDJOB_UNKNOWN, "%s", why);
	double took = now_ms() - t0;
	cr_assert(took >= 290.0 && took < 800.0, "%.0f ms", took);
	cr_assert_not_null(strstr(why, "no answer within 300 ms"), "%s", why);
	close(s);
	unlink(sa.sun_path);
	rmdir(dir);
}
