/* status_fmt.c — the replies of the status socket: gathered once per request from
 * the controller's snapshot, the audit's copies and the FUSE counters, then
 * rendered as text for people, JSON (json-glib) for scripts, or OpenMetrics text. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-glib/json-glib.h>

typedef struct {
	od_status_data *d;
	od_audit *a;
	size_t listeners; /* over every known cgroup */
} gather_ctx;

static void gather_cb(void *ud, uint64_t id, const char *path, const oe_view *v)
{
	gather_ctx *g = ud;
	od_status_data *d = g->d;
	size_t nl = od_audit_listeners(g->a, id);
	g->listeners += nl;
	d->known++;
	d->managed += v->managed;
	d->held += v->in_hold;
	if (v->in_hold && !v->disable && v->deadline_ns != OE_NO_DEADLINE &&
	    d->now - v->deadline_ns > 1000000000LL)
		d->overdue++;
	if (!v->managed && !v->in_hold && !v->under_oom && !v->frozen)
		return;
	od_status_cg c = { .id = id, .path = g_strdup(path), .v = *v, .listeners = nl };
	g_array_append_val(d->cgs, c);
}

static gint by_path(gconstpointer a, gconstpointer b)
{
	return strcmp(((const od_status_cg *)a)->path, ((const od_status_cg *)b)->path);
}

void od_status_gather(od_audit *a, const char *mountpoint, oe_kill_mode mode, od_status_data *d)
{
	memset(d, 0, sizeof *d);
	d->cgs = g_array_new(FALSE, FALSE, sizeof(od_status_cg));
	d->now = od_now();
	d->mountpoint = mountpoint;
	d->mode = mode;
	gather_ctx g = { .d = d, .a = a };
	od_controller_snapshot(od_audit_controller(a), 0, gather_cb, &g);
	g_array_sort(d->cgs, by_path);
	d->records = od_audit_records(a);
	od_audit_stats_get(a, &d->st);
	d->nops = od_fs_opcounts(d->ops, G_N_ELEMENTS(d->ops));
	d->listeners_total = g.listeners;
}

void od_status_data_clear(od_status_data *d)
{
	for (guint i = 0; d->cgs && i < d->cgs->len; i++)
		g_free(g_array_index(d->cgs, od_status_cg, i).path);
	g_clear_pointer(&d->cgs, g_array_unref);
	g_clear_pointer(&d->records, g_array_unref);
}

static const char *health(const od_status_data *d)
{
	return d->overdue ? "degraded" : "ok";
}

static const char *state_of(const oe_view *v)
{
	if (v->in_hold)
		return v->frozen ? "held,frozen" : "held";
	if (v->under_oom)
		return "under_oom"; /* an ancestor's hold */
	return "managed";
}

static int64_t left_ms(const od_status_data *d, const oe_view *v)
{
	if (!v->in_hold || v->deadline_ns == OE_NO_DEADLINE)
		return -1;
	return v->deadline_ns > d->now ? (v->deadline_ns - d->now) / 1000000 : 0;
}

static void fmt_limit(char *buf, size_t n, uint64_t v)
{
	if (v == OE_UNLIMITED)
		g_strlcpy(buf, "max", n);
	else
		snprintf(buf, n, "%" PRIu64, v);
}

char *od_status_text(const od_status_data *d)
{
	GString *s = g_string_new(NULL);
	int64_t up = (d->now - d->st.started_at) / 1000000000LL;
	g_string_append_printf(s,
			       "oomdelayfs %s, pid %d, up %" PRId64 "s, serving %s, kill mode %s: %s%s\n",
			       OOMD_VERSION, (int)getpid(), up, d->mountpoint ? d->mountpoint : "-",
			       d->mode == OE_KILL_GROUP ? "group" : "kernel", health(d),
			       d->overdue ? " (holds past their deadline by over 1 s)" : "");
	g_string_append_printf(s, "cgroups: %zu known, %zu managed, %zu held; listeners %zu; holds %"
			       PRIu64 " started", d->known, d->managed, d->held, d->listeners_total,
			       d->st.started);
	for (int e = OD_END_RAISE; e < OD_END_N; e++)
		if (d->st.ended[e])
			g_string_append_printf(s, ", %s %" PRIu64, od_end_name(e), d->st.ended[e]);
	g_string_append_printf(s, "; broken promises %" PRIu64 "\n\n", d->st.broken_promises);
	g_string_append_printf(s, "%-40s %12s %8s %2s %-12s %9s %9s %6s\n", "CGROUP", "L", "T(ms)",
			       "D", "STATE", "LEFT(ms)", "LISTENERS", "KILLS");
	for (guint i = 0; i < d->cgs->len; i++) {
		const od_status_cg *c = &g_array_index(d->cgs, od_status_cg, i);
		char l[24], left[24] = "-";
		fmt_limit(l, sizeof l, c->v.limit);
		int64_t ms = left_ms(d, &c->v);
		if (ms >= 0)
			snprintf(left, sizeof left, "%" PRId64, ms);
		g_string_append_printf(s, "%-40s %12s %8" PRIu64 " %2d %-12s %9s %9zu %6" PRIu64 "\n",
				       c->path, l, c->v.delay_ms, c->v.disable, state_of(&c->v), left,
				       c->listeners, c->v.oom_kill);
	}
	if (d->cgs->len == 0)
		g_string_append(s, "(no managed cgroup)\n");
	g_string_append_printf(s, "\n%-6s %-40s %-19s %12s %12s %9s %-11s %9s %10s\n", "HOLD",
			       "CGROUP", "ONSET", "L", "USAGE", "LISTENERS", "END", "HELD(ms)",
			       "LATE(ms)");
	for (guint i = 0; i < d->records->len; i++) {
		const od_hold_record *r = &g_array_index(d->records, od_hold_record, i);
		g_autoptr(GDateTime) t = g_date_time_new_from_unix_local(r->onset_wall_us / G_USEC_PER_SEC);
		g_autofree char *when = t ? g_date_time_format(t, "%F %T") : g_strdup("?");
		char late[24] = "-";
		if (r->end == OD_END_KILL_KERNEL || r->end == OD_END_KILL_GROUP)
			snprintf(late, sizeof late, "%.1f", r->kill_late_ns / 1e6);
		int64_t held = (r->end_ns ? r->end_ns : d->now) - r->onset_ns;
		g_string_append_printf(s, "%-6" PRIu64 " %-40s %-19s %12" PRIu64 " %12" PRIu64
				       " %9u %-11s %9.1f %10s\n", r->hold_id, r->path, when, r->limit,
				       r->usage, r->listeners, od_end_name(r->end), held / 1e6, late);
	}
	return g_string_free(s, FALSE);
}

static void json_record(JsonBuilder *b, const od_hold_record *r, const od_status_data *d)
{
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "hold");
	json_builder_add_int_value(b, (gint64)r->hold_id);
	json_builder_set_member_name(b, "cgroup");
	json_builder_add_string_value(b, r->path);
	json_builder_set_member_name(b, "onset_unix_us");
	json_builder_add_int_value(b, r->onset_wall_us);
	json_builder_set_member_name(b, "limit");
	json_builder_add_int_value(b, (gint64)r->limit);
	json_builder_set_member_name(b, "usage");
	json_builder_add_int_value(b, (gint64)r->usage);
	json_builder_set_member_name(b, "listeners_notified");
	json_builder_add_int_value(b, r->listeners);
	json_builder_set_member_name(b, "end");
	json_builder_add_string_value(b, od_end_name(r->end));
	json_builder_set_member_name(b, "held_ms");
	json_builder_add_double_value(b, ((r->end_ns ? r->end_ns : d->now) - r->onset_ns) / 1e6);
	json_builder_set_member_name(b, "kill_lateness_ms");
	if (r->end == OD_END_KILL_KERNEL || r->end == OD_END_KILL_GROUP)
		json_builder_add_double_value(b, r->kill_late_ns / 1e6);
	else
		json_builder_add_null_value(b);
	json_builder_end_object(b);
}

#define MEMBER_INT(b, name, v) \
	do { \
		json_builder_set_member_name(b, name); \
		json_builder_add_int_value(b, (gint64)(v)); \
	} while (0)

char *od_status_json(const od_status_data *d)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "daemon");
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "version");
	json_builder_add_string_value(b, OOMD_VERSION);
	MEMBER_INT(b, "pid", getpid());
	MEMBER_INT(b, "uptime_s", (d->now - d->st.started_at) / 1000000000LL);
	json_builder_set_member_name(b, "mountpoint");
	json_builder_add_string_value(b, d->mountpoint);
	json_builder_set_member_name(b, "kill_mode");
	json_builder_add_string_value(b, d->mode == OE_KILL_GROUP ? "group" : "kernel");
	json_builder_set_member_name(b, "health");
	json_builder_add_string_value(b, health(d));
	MEMBER_INT(b, "overdue_holds", d->overdue);
	MEMBER_INT(b, "cgroups", d->known);
	MEMBER_INT(b, "managed", d->managed);
	MEMBER_INT(b, "held", d->held);
	MEMBER_INT(b, "listeners", d->listeners_total);
	MEMBER_INT(b, "holds_started", d->st.started);
	json_builder_set_member_name(b, "holds_ended");
	json_builder_begin_object(b);
	for (int e = OD_END_RAISE; e < OD_END_N; e++)
		MEMBER_INT(b, od_end_name(e), d->st.ended[e]);
	json_builder_end_object(b);
	MEMBER_INT(b, "broken_promises", d->st.broken_promises);
	json_builder_end_object(b);

	json_builder_set_member_name(b, "cgroups");
	json_builder_begin_array(b);
	for (guint i = 0; i < d->cgs->len; i++) {
		const od_status_cg *c = &g_array_index(d->cgs, od_status_cg, i);
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "path");
		json_builder_add_string_value(b, c->path);
		MEMBER_INT(b, "id", c->id);
		json_builder_set_member_name(b, "limit");
		if (c->v.limit == OE_UNLIMITED)
			json_builder_add_string_value(b, "max");
		else
			json_builder_add_int_value(b, (gint64)c->v.limit);
		MEMBER_INT(b, "delay_ms", c->v.delay_ms);
		json_builder_set_member_name(b, "oom_kill_disable");
		json_builder_add_boolean_value(b, c->v.disable);
		json_builder_set_member_name(b, "state");
		json_builder_add_string_value(b, state_of(&c->v));
		json_builder_set_member_name(b, "ms_left");
		int64_t ms = left_ms(d, &c->v);
		if (ms >= 0)
			json_builder_add_int_value(b, ms);
		else
			json_builder_add_null_value(b);
		MEMBER_INT(b, "listeners", c->listeners);
		MEMBER_INT(b, "oom_kill", c->v.oom_kill);
		json_builder_end_object(b);
	}
	json_builder_end_array(b);

	json_builder_set_member_name(b, "holds");
	json_builder_begin_array(b);
	for (guint i = 0; i < d->records->len; i++)
		json_record(b, &g_array_index(d->records, od_hold_record, i), d);
	json_builder_end_array(b);
	json_builder_end_object(b);

	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	json_generator_set_root(gen, root);
	json_generator_set_pretty(gen, TRUE);
	char *out = json_generator_to_data(gen, NULL);
	char *nl = g_strconcat(out, "\n", NULL);
	g_free(out);
	return nl;
}

static void family(GString *s, const char *name, const char *type, const char *unit, const char *help)
{
	g_string_append_printf(s, "# TYPE %s %s\n", name, type);
	if (unit)
		g_string_append_printf(s, "# UNIT %s %s\n", name, unit);
	g_string_append_printf(s, "# HELP %s %s\n", name, help);
}

static void histogram(GString *s, const char *name, const double *bounds, int nb,
		      const uint64_t *n, double sum)
{
	uint64_t cum = 0;
	for (int i = 0; i < nb; i++) {
		cum += n[i];
		g_string_append_printf(s, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, bounds[i], cum);
	}
	cum += n[nb];
	g_string_append_printf(s, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
	g_string_append_printf(s, "%s_sum %.9g\n%s_count %" PRIu64 "\n", name, sum, name, cum);
}

char *od_status_metrics(const od_status_data *d)
{
	GString *s = g_string_new(NULL);
	family(s, "oomdelayfs_holds_started", "counter", NULL, "Holds begun (a managed cgroup over its limit L).");
	g_string_append_printf(s, "oomdelayfs_holds_started_total %" PRIu64 "\n", d->st.started);
	family(s, "oomdelayfs_holds_ended", "counter", NULL,
	       "Holds ended, by how: raise (L raised), exit, move, kill-kernel, kill-group, removed.");
	for (int e = OD_END_RAISE; e < OD_END_N; e++)
		g_string_append_printf(s, "oomdelayfs_holds_ended_total{how=\"%s\"} %" PRIu64 "\n",
				       od_end_name(e), d->st.ended[e]);
	family(s, "oomdelayfs_broken_promises", "counter", NULL,
	       "OOM kills in a held cgroup before its deadline or under oom_kill_disable.");
	g_string_append_printf(s, "oomdelayfs_broken_promises_total %" PRIu64 "\n", d->st.broken_promises);
	family(s, "oomdelayfs_kill_lateness_seconds", "histogram", "seconds",
	       "From a hold's deadline to the end of the write that killed.");
	histogram(s, "oomdelayfs_kill_lateness_seconds", od_late_bounds, OD_LATE_BUCKETS,
		  d->st.late_n, d->st.late_sum);
	family(s, "oomdelayfs_detection_overshoot_bytes", "histogram", "bytes",
	       "How far usage was over L when a hold's onset was read.");
	histogram(s, "oomdelayfs_detection_overshoot_bytes", od_over_bounds, OD_OVER_BUCKETS,
		  d->st.over_n, d->st.over_sum);
	family(s, "oomdelayfs_listeners", "gauge", NULL, "cgroup.event_control listeners registered.");
	g_string_append_printf(s, "oomdelayfs_listeners %zu\n", d->listeners_total);
	family(s, "oomdelayfs_listener_signals", "counter", NULL,
	       "Notifications of a held cgroup's listeners (one per cgroup notified).");
	g_string_append_printf(s, "oomdelayfs_listener_signals_total %" PRIu64 "\n", d->st.notifications);
	family(s, "oomdelayfs_cgroups", "gauge", NULL, "cgroups known, managed (T > 0 or D = 1, L set) and held.");
	g_string_append_printf(s, "oomdelayfs_cgroups{state=\"known\"} %zu\n", d->known);
	g_string_append_printf(s, "oomdelayfs_cgroups{state=\"managed\"} %zu\n", d->managed);
	g_string_append_printf(s, "oomdelayfs_cgroups{state=\"held\"} %zu\n", d->held);
	family(s, "oomdelayfs_overdue_holds", "gauge", NULL,
	       "Holds more than 1 s past their deadline with oom_kill_disable 0 (the daemon is unhealthy).");
	g_string_append_printf(s, "oomdelayfs_overdue_holds %zu\n", d->overdue);
	family(s, "oomdelayfs_fuse_requests", "counter", NULL, "FUSE requests served, by operation.");
	for (size_t i = 0; i < d->nops; i++)
		g_string_append_printf(s, "oomdelayfs_fuse_requests_total{op=\"%s\"} %" PRIu64 "\n",
				       d->ops[i].op, d->ops[i].n);
	g_string_append(s, "# EOF\n");
	return g_string_free(s, FALSE);
}
