/* rulecheck.c — the rule index checker (rulecheck.h). Line-based, for the style of
 * core/: a definition starts at column 0 and a function body ends at a "}" in
 * column 0; the comment block directly above a definition (no blank line between)
 * belongs to it.
 */
#include "rulecheck.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int rule;
	char *place; /* "file.c fn" */
	char *where; /* "file.c:line" */
} marker;

static void marker_free(gpointer p)
{
	marker *m = p;
	g_free(m->place);
	g_free(m->where);
	g_free(m);
}

static unsigned problem(GString *errors, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static unsigned problem(GString *errors, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_string_append_vprintf(errors, fmt, ap);
	va_end(ap);
	g_string_append_c(errors, '\n');
	return 1;
}

/* The rule numbers of SEMANTICS.md's "## Rules" section, as a sorted set. */
static GArray *semantics_rules(const char *text)
{
	GArray *rules = g_array_new(FALSE, FALSE, sizeof(int));
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	bool in = false;
	g_autoptr(GRegex) re = g_regex_new("^([0-9]+)\\.\\s+\\*\\*", 0, 0, NULL);
	for (char **l = lines; *l; l++) {
		if (g_str_has_prefix(*l, "## ")) {
			in = g_str_has_prefix(*l, "## Rules");
			continue;
		}
		g_autoptr(GMatchInfo) mi = NULL;
		if (in && g_regex_match(re, *l, 0, &mi)) {
			g_autofree char *n = g_match_info_fetch(mi, 1);
			int r = atoi(n);
			g_array_append_val(rules, r);
		}
	}
	return rules;
}

/* The name a definition's first line declares: the identifier before the first
 * '(' (a function), else the word before '{' or ';' ("struct x {", "} x;"). */
static char *def_name(const char *line)
{
	g_autoptr(GRegex) fn = g_regex_new("(\\w+)\\s*\\(", 0, 0, NULL);
	g_autoptr(GRegex) word = g_regex_new("(\\w+)\\s*[{;=]", 0, 0, NULL);
	g_autoptr(GMatchInfo) mf = NULL;
	g_autoptr(GMatchInfo) mw = NULL;
	if (g_regex_match(fn, line, 0, &mf))
		return g_match_info_fetch(mf, 1);
	if (g_regex_match(word, line, 0, &mw))
		return g_match_info_fetch(mw, 1);
	return g_strdup(line);
}

static bool blank(const char *l)
{
	for (; *l; l++)
		if (!g_ascii_isspace(*l))
			return false;
	return true;
}

static unsigned count_of(const char *s, char c)
{
	unsigned k = 0;
	for (; *s; s++)
		k += *s == c;
	return k;
}

/* For each line of `text`, the definition it belongs to (NULL: file scope). */
static GPtrArray *owners_of(char **lines)
{
	GPtrArray *own = g_ptr_array_new_with_free_func(g_free);
	guint n = g_strv_length(lines);
	g_ptr_array_set_size(own, (gint)n);
	int pending = -1; /* first line of the comment block just above */
	bool in_comment = false;
	for (guint i = 0; i < n; i++) {
		const char *l = lines[i];
		if (in_comment) {
			in_comment = !strstr(l, "*/");
			continue;
		}
		if (blank(l)) {
			pending = -1;
			continue;
		}
		if (g_str_has_prefix(l, "/*")) {
			if (pending < 0)
				pending = (int)i;
			in_comment = !strstr(l, "*/");
			continue;
		}
		if (l[0] == '#' && !g_str_has_prefix(l, "#define")) {
			pending = -1;
			continue;
		}
		if (g_ascii_isspace(l[0]) || l[0] == '}')
			continue; /* not a definition's start: stays file scope */
		char *name = l[0] == '#' ? g_strdup(l + strlen("#define")) : def_name(l);
		g_strstrip(name);
		guint end = i;
		if (l[0] == '#') {
			while (g_str_has_suffix(lines[end], "\\") && end + 1 < n)
				end++;
		} else {
			/* The header runs to a '{' (then the body to a "}" in column 0) or a ';'. */
			while (end < n && !strchr(lines[end], '{') && !g_str_has_suffix(lines[end], ";"))
				end++;
			/* A body opened and closed on one line ends there. */
			bool opens = end < n && strchr(lines[end], '{') &&
				    count_of(lines[end], '{') > count_of(lines[end], '}');
			if (opens)
				while (end + 1 < n && lines[end][0] != '}')
					end++;
			if (end >= n)
				end = n - 1;
		}
		for (guint k = pending < 0 ? i : (guint)pending; k <= end; k++)
			g_ptr_array_index(own, k) = g_strdup(name);
		g_free(name);
		pending = -1;
		i = end;
	}
	return own;
}

/* Adds the index entries found in `text` (rule -> "file fn" places) to `index`.
 * Returns how many "Rule index:" blocks the text has. */
static unsigned parse_index(char **lines, GHashTable *index, const char *fname, GString *errors,
			    unsigned *nproblems)
{
	g_autoptr(GRegex) entry = g_regex_new("^\\s*\\*\\s+rule\\s+([0-9]+)\\s+(.*)$", 0, 0, NULL);
	g_autoptr(GRegex) place = g_regex_new("([\\w.-]+\\.[ch])\\s+(\\w+)\\(\\)", 0, 0, NULL);
	unsigned blocks = 0;
	for (char **l = lines; *l; l++) {
		if (!strstr(*l, "Rule index:"))
			continue;
		blocks++;
		for (char **e = l + 1; *e && g_str_has_prefix(*e, " *") && !g_str_has_prefix(*e, " */"); e++) {
			g_autoptr(GMatchInfo) mi = NULL;
			if (!g_regex_match(entry, *e, 0, &mi))
				continue;
			g_autofree char *num = g_match_info_fetch(mi, 1);
			g_autofree char *rest = g_match_info_fetch(mi, 2);
			int rule = atoi(num);
			GPtrArray *places = g_hash_table_lookup(index, GINT_TO_POINTER(rule));
			if (places) {
				*nproblems += problem(errors, "rule %d: two index entries (%s)", rule, fname);
				continue;
			}
			places = g_ptr_array_new_with_free_func(g_free);
			g_hash_table_insert(index, GINT_TO_POINTER(rule), places);
			g_autoptr(GMatchInfo) pm = NULL;
			g_regex_match(place, rest, 0, &pm);
			for (; g_match_info_matches(pm); g_match_info_next(pm, NULL)) {
				g_autofree char *f = g_match_info_fetch(pm, 1);
				g_autofree char *fn = g_match_info_fetch(pm, 2);
				g_ptr_array_add(places, g_strdup_printf("%s %s", f, fn));
			}
			if (places->len == 0)
				*nproblems += problem(errors, "rule %d: the index entry names no place (\"file.c fn()\")", rule);
		}
	}
	return blocks;
}

static void find_markers(char **lines, const char *path, GPtrArray *markers)
{
	g_autoptr(GRegex) re = g_regex_new("\\bRULE\\s+([0-9]+)\\b", 0, 0, NULL);
	g_autoptr(GPtrArray) own = owners_of(lines);
	g_autofree char *base = g_path_get_basename(path);
	for (guint i = 0; lines[i]; i++) {
		g_autoptr(GMatchInfo) mi = NULL;
		g_regex_match(re, lines[i], 0, &mi);
		for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
			g_autofree char *num = g_match_info_fetch(mi, 1);
			const char *fn = g_ptr_array_index(own, i);
			marker *m = g_new0(marker, 1);
			m->rule = atoi(num);
			m->place = g_strdup_printf("%s %s", base, fn ? fn : "(file scope)");
			m->where = g_strdup_printf("%s:%u", base, i + 1);
			g_ptr_array_add(markers, m);
		}
	}
}

static bool has_marker(GPtrArray *markers, int rule, const char *place)
{
	for (guint i = 0; i < markers->len; i++) {
		const marker *m = g_ptr_array_index(markers, i);
		if (m->rule == rule && strcmp(m->place, place) == 0)
			return true;
	}
	return false;
}

static bool names(GPtrArray *places, const char *place)
{
	for (guint i = 0; places && i < places->len; i++)
		if (strcmp(g_ptr_array_index(places, i), place) == 0)
			return true;
	return false;
}

static bool in_set(GArray *rules, int r)
{
	for (guint i = 0; i < rules->len; i++)
		if (g_array_index(rules, int, i) == r)
			return true;
	return false;
}

/* The rules that have at least one Test(rule<n>[_variant], ...). */
static GHashTable *tested_rules(const rc_file *tests, size_t ntests)
{
	GHashTable *t = g_hash_table_new(NULL, NULL);
	g_autoptr(GRegex) re = g_regex_new("\\bTest\\(\\s*rule([0-9]+)(_\\w+)?\\s*,", 0, 0, NULL);
	for (size_t i = 0; i < ntests; i++) {
		g_autoptr(GMatchInfo) mi = NULL;
		g_regex_match(re, tests[i].text, 0, &mi);
		for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
			g_autofree char *num = g_match_info_fetch(mi, 1);
			g_hash_table_add(t, GINT_TO_POINTER(atoi(num)));
		}
	}
	return t;
}

unsigned rc_check(const char *semantics, const rc_file *core, size_t ncore, const rc_file *tests,
		  size_t ntests, GString *errors)
{
	unsigned bad = 0;
	g_autoptr(GArray) rules = semantics_rules(semantics);
	if (rules->len == 0)
		bad += problem(errors, "SEMANTICS.md: no rules found under \"## Rules\"");
	g_autoptr(GHashTable) index = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
	g_autoptr(GPtrArray) markers = g_ptr_array_new_with_free_func(marker_free);
	g_autoptr(GHashTable) bases = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	unsigned blocks = 0;
	for (size_t i = 0; i < ncore; i++) {
		g_auto(GStrv) lines = g_strsplit(core[i].text, "\n", -1);
		blocks += parse_index(lines, index, core[i].name, errors, &bad);
		find_markers(lines, core[i].name, markers);
		g_hash_table_add(bases, g_path_get_basename(core[i].name));
	}
	if (blocks != 1)
		bad += problem(errors, "%u \"Rule index:\" blocks in core/, want exactly one", blocks);

	g_autoptr(GHashTable) tested = tested_rules(tests, ntests);
	for (guint i = 0; i < rules->len; i++) {
		int r = g_array_index(rules, int, i);
		if (!g_hash_table_contains(index, GINT_TO_POINTER(r)))
			bad += problem(errors, "rule %d: not in the index", r);
		if (!g_hash_table_contains(tested, GINT_TO_POINTER(r)))
			bad += problem(errors, "rule %d: no test section (Test(rule%d, ...))", r, r);
	}
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, index);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		int r = GPOINTER_TO_INT(k);
		GPtrArray *places = v;
		if (!in_set(rules, r))
			bad += problem(errors, "rule %d: in the index, not in SEMANTICS.md", r);
		for (guint i = 0; i < places->len; i++) {
			const char *p = g_ptr_array_index(places, i);
			g_autofree char *file = g_strndup(p, (gsize)(strchr(p, ' ') - p));
			if (!g_hash_table_contains(bases, file))
				bad += problem(errors, "rule %d: the index names %s(), %s is not a core file", r, p, file);
			else if (!has_marker(markers, r, p))
				bad += problem(errors, "rule %d: the index names %s(), which has no RULE %d marker", r, p, r);
		}
	}
	for (guint i = 0; i < markers->len; i++) {
		const marker *m = g_ptr_array_index(markers, i);
		if (!names(g_hash_table_lookup(index, GINT_TO_POINTER(m->rule)), m->place))
			bad += problem(errors, "rule %d: RULE %d marker at %s (%s), a place the index does not name",
				       m->rule, m->rule, m->where, m->place);
	}
	return bad;
}
