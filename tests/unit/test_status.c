/* Unit tests of the status replies (status.h) over hand-made data: the OpenMetrics
 * text (cumulative buckets, _total counters, # EOF last) and the JSON. */
#include <criterion/criterion.h>
#include <string.h>

#include "oomd/status.h"

static od_status_data data(void)
{
	od_status_data d;
	memset(&d, 0, sizeof d);
	d.cgs = g_array_new(FALSE, FALSE, sizeof(od_status_cg));
	d.records = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	d.mountpoint = "/shadow";
	d.st.started = 3;
	d.st.ended[OD_END_RAISE] = 1;
	d.st.ended[OD_END_KILL_KERNEL] = 2;
	d.st.late_n[4] = 1;                /* 0.025 < x <= 0.05 */
	d.st.late_n[OD_LATE_BUCKETS] = 1;  /* over 5 s */
	d.st.late_sum = 6.04;
	od_status_cg c = { .id = 7, .path = g_strdup("/sys/fs/cgroup/a \"b\""),
			   .v = { .limit = 1 << 20, .in_hold = true, .deadline_ns = OE_NO_DEADLINE } };
	g_array_append_val(d.cgs, c);
	od_hold_record r = { .hold_id = 1, .cgroup_id = 7, .end = OD_END_RAISE, .onset_ns = 1,
			     .end_ns = 1000001 };
	g_strlcpy(r.path, "/sys/fs/cgroup/a \"b\"", sizeof r.path);
	g_array_append_val(d.records, r);
	return d;
}

static bool has_line(const char *text, const char *line)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++)
		if (strcmp(*l, line) == 0)
			return true;
	return false;
}

Test(status, metrics)
{
	od_status_data d = data();
	g_autofree char *m = od_status_metrics(&d);
	cr_expect(g_str_has_suffix(m, "\n# EOF\n"), "does not end with # EOF");
	cr_expect(has_line(m, "# TYPE oomdelayfs_holds_started counter"));
	cr_expect(has_line(m, "oomdelayfs_holds_started_total 3"));
	cr_expect(has_line(m, "oomdelayfs_holds_ended_total{how=\"kill-kernel\"} 2"));
	cr_expect(has_line(m, "oomdelayfs_kill_lateness_seconds_bucket{le=\"0.025\"} 0"));
	cr_expect(has_line(m, "oomdelayfs_kill_lateness_seconds_bucket{le=\"0.05\"} 1"));
	cr_expect(has_line(m, "oomdelayfs_kill_lateness_seconds_bucket{le=\"5\"} 1"));
	cr_expect(has_line(m, "oomdelayfs_kill_lateness_seconds_bucket{le=\"+Inf\"} 2"));
	cr_expect(has_line(m, "oomdelayfs_kill_lateness_seconds_count 2"));
	cr_expect(has_line(m, "# UNIT oomdelayfs_kill_lateness_seconds seconds"));
	/* every sample belongs to the family declared last */
	g_auto(GStrv) lines = g_strsplit(m, "\n", -1);
	const char *fam = NULL;
	for (char **l = lines; *l && **l; l++) {
		if (g_str_has_prefix(*l, "# TYPE ")) {
			fam = *l + 7;
			continue;
		}
		if (**l == '#')
			continue;
		cr_assert_not_null(fam, "a sample before any family: %s", *l);
		size_t n = strcspn(fam, " ");
		cr_expect(strncmp(*l, fam, n) == 0, "sample '%s' outside its family '%.*s'", *l, (int)n, fam);
	}
	od_status_data_clear(&d);
}

Test(status, json_escapes)
{
	od_status_data d = data();
	g_autofree char *j = od_status_json(&d);
	cr_expect(strstr(j, "\"path\" : \"/sys/fs/cgroup/a \\\"b\\\"\"") != NULL, "%s", j);
	cr_expect(strstr(j, "\"end\" : \"raise\"") != NULL);
	cr_expect(strstr(j, "\"ms_left\" : null") != NULL);
	g_autofree char *t = od_status_text(&d);
	cr_expect(strstr(t, "raise") != NULL);
	od_status_data_clear(&d);
}
