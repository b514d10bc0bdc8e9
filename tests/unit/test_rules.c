/* test_rules.c — the engine's rule index (core/engine.c, "Rule index:") against the
 * rules of docs/SEMANTICS.md, the RULE n markers in core/ and the rule<n> suites of
 * the engine's unit tests, with the checker of rulecheck.h. meson passes the files:
 * OOMD_RULES_SEMANTICS (a path), OOMD_RULES_CORE and OOMD_RULES_TESTS (paths joined
 * with ':'), so that the check reads what is built. The suite rules_broken runs the
 * same checker on broken copies of those texts, each of which it must refuse.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "rulecheck.h"

static char *semantics;
static GArray *core_files;  /* rc_file, names and texts owned */
static GArray *test_files;
static bool found_any;

static GArray *load_list(const char *env)
{
	const char *v = getenv(env);
	cr_assert(v && *v, "%s is not set (meson sets it)", env);
	GArray *a = g_array_new(FALSE, TRUE, sizeof(rc_file));
	g_auto(GStrv) paths = g_strsplit(v, ":", -1);
	for (char **p = paths; *p; p++) {
		char *text = NULL;
		g_autoptr(GError) err = NULL;
		cr_assert(g_file_get_contents(*p, &text, NULL, &err), "%s: %s", *p, err->message);
		rc_file f = { g_strdup(*p), text };
		g_array_append_val(a, f);
	}
	return a;
}

static void load(void)
{
	const char *s = getenv("OOMD_RULES_SEMANTICS");
	cr_assert(s && *s, "OOMD_RULES_SEMANTICS is not set (meson sets it)");
	cr_assert(g_file_get_contents(s, &semantics, NULL, NULL), "cannot read %s", s);
	core_files = load_list("OOMD_RULES_CORE");
	test_files = load_list("OOMD_RULES_TESTS");
}

static unsigned check(GString *errors)
{
	return rc_check(semantics, (rc_file *)(void *)core_files->data, core_files->len,
			(rc_file *)(void *)test_files->data, test_files->len, errors);
}

/* Replaces the first match of the regex `re` (every match if `all`) in the first file
 * of `a` that has one. The proof is void if the broken copy is not broken, so a miss
 * fails the test. */
static void mutate(GArray *a, const char *re, const char *with, bool all)
{
	g_autoptr(GRegex) r = g_regex_new(re, G_REGEX_MULTILINE, 0, NULL);
	cr_assert_not_null(r, "bad regex %s", re);
	for (guint i = 0; i < a->len; i++) {
		rc_file *f = &g_array_index(a, rc_file, i);
		g_autoptr(GMatchInfo) mi = NULL;
		if (!g_regex_match(r, f->text, 0, &mi))
			continue;
		int s, e;
		g_match_info_fetch_pos(mi, 0, &s, &e);
		/* The old text is left: each test is a process of its own. */
		f->text = all ? g_regex_replace_literal(r, f->text, -1, 0, with, 0, NULL)
			      : g_strdup_printf("%.*s%s%s", s, f->text, with, f->text + e);
		if (!all)
			return;
		found_any = true;
	}
	cr_assert(all && found_any, "the broken copy could not be made: no match for %s", re);
}

/* The checker refuses the broken texts, for the reason `want` names. */
static void refused(const char *want)
{
	g_autoptr(GString) errors = g_string_new(NULL);
	unsigned n = check(errors);
	cr_assert_gt(n, 0, "the checker passed a broken copy (wanted: %s)", want);
	cr_assert(strstr(errors->str, want), "wanted a problem containing \"%s\"; got:\n%s", want,
		  errors->str);
}

TestSuite(rules, .init = load);
TestSuite(rules_broken, .init = load);

Test(rules, index_matches_markers_and_tests)
{
	cr_assert_geq(core_files->len, 6, "core files: %u", core_files->len);
	cr_assert_geq(test_files->len, 5, "test files: %u", test_files->len);
	g_autoptr(GString) errors = g_string_new(NULL);
	unsigned n = check(errors);
	cr_assert_eq(n, 0, "%u problems:\n%s", n, errors->str);
}

Test(rules_broken, a_rule_without_its_marker)
{
	mutate(core_files, "RULE 7:", "rule 7:", false);
	refused("rule 7: the index names adopt.c oe_cgroup_add(), which has no RULE 7 marker");
}

Test(rules_broken, a_marker_in_a_place_the_index_does_not_name)
{
	mutate(core_files, "^size_t oe_count\\(const oe_engine \\*e\\)\n\\{\n",
	       "size_t oe_count(const oe_engine *e)\n{\n\t/* RULE 3: decided here too */\n", false);
	refused("rule 3: RULE 3 marker at engine.c:");
	refused("(engine.c oe_count), a place the index does not name");
}

Test(rules_broken, a_marker_outside_any_function)
{
	mutate(core_files, "^#include \"engine_impl.h\"\n", "/* RULE 12: at file scope */\n\n#include \"engine_impl.h\"\n",
	       false);
	refused("(engine.c (file scope)), a place the index does not name");
}

Test(rules_broken, a_rule_missing_from_the_index)
{
	mutate(core_files, "^ \\*\\s+rule 5\\s.*\n", "", false);
	refused("rule 5: not in the index");
	refused("rule 5: RULE 5 marker at hold.c:");
}

Test(rules_broken, an_index_entry_naming_the_wrong_function)
{
	mutate(core_files, "hold\\.c recovered\\(\\)", "hold.c decide_held()", false);
	refused("rule 5: the index names hold.c decide_held(), which has no RULE 5 marker");
	refused("(hold.c recovered), a place the index does not name");
}

Test(rules_broken, an_index_entry_naming_a_file_outside_core)
{
	mutate(core_files, "engine\\.c oe_view_get\\(\\)", "synthetic.c view_of()", false);
	refused("rule 10: the index names synthetic.c view_of(), synthetic.c is not a core file");
}

Test(rules_broken, a_rule_without_tests)
{
	mutate(test_files, "\\bTest\\(rule11,", "Test(notify,", true);
	refused("rule 11: no test section (Test(rule11, ...))");
}

Test(rules_broken, a_rule_of_semantics_nobody_keeps)
{
	char *s = g_strdup_printf("%s", semantics);
	g_autoptr(GRegex) r = g_regex_new("^12\\. \\*\\*", G_REGEX_MULTILINE, 0, NULL);
	semantics = g_regex_replace_literal(r, s, -1, 0, "13. **Another**: kept nowhere.\n12. **", 0, NULL);
	cr_assert(strstr(semantics, "13. **Another**"), "the broken SEMANTICS.md could not be made");
	refused("rule 13: not in the index");
	refused("rule 13: no test section");
}

Test(rules_broken, two_indexes)
{
	mutate(core_files, "^#include \"engine_impl.h\"\n",
	       "/* Rule index:\n *   rule 1  native  knobs.c eng_managed()\n */\n#include \"engine_impl.h\"\n", false);
	refused("2 \"Rule index:\" blocks in core/, want exactly one");
}
