/* vmpressure.c — the rules of memory.pressure_level (v1events.h): 6.1's
 * mm/vmpressure.c (vmpressure_register_event's parse, vmpressure_event's walk) and
 * the mapping of its levels onto PSI triggers (docs/DESIGN.md, "Pressure levels").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "oomd/v1events.h"

static const char *const levels[] = { "low", "medium", "critical" };
static const char *const modes[] = { "default", "hierarchy", "local" };

const char *od_vmp_level_name(od_vmp_level l)
{
	return (unsigned)l < G_N_ELEMENTS(levels) ? levels[l] : "?";
}

const char *od_vmp_mode_name(od_vmp_mode m)
{
	return (unsigned)m < G_N_ELEMENTS(modes) ? modes[m] : "?";
}

/* match_string(): the index of an exact match, -1 */
static int match(const char *const *names, size_t n, const char *tok)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], tok) == 0)
			return (int)i;
	return -1;
}

/* MAX_VMPRESSURE_ARGS_LEN: strlen("critical") + strlen("hierarchy") + 2 */
#define ARGS_MAX 19

int od_vmp_parse(const char *buf, size_t len, od_vmp_level *level, od_vmp_mode *mode)
{
	/* kstrndup(args, MAX_VMPRESSURE_ARGS_LEN): stops at a NUL or after 19 bytes */
	char s[ARGS_MAX + 1];
	size_t n = 0;
	while (n < len && n < ARGS_MAX && buf[n])
		n++;
	memcpy(s, buf, n);
	s[n] = '\0';
	/* strsep(&spec, ","): the level, then the optional mode; the rest is ignored */
	char *comma = strchr(s, ',');
	char *rest = NULL;
	if (comma) {
		*comma = '\0';
		rest = comma + 1;
		char *second = strchr(rest, ',');
		if (second)
			*second = '\0';
	}
	int l = match(levels, G_N_ELEMENTS(levels), s);
	if (l < 0)
		return EINVAL;
	int m = OD_VMP_DEFAULT;
	if (rest) {
		m = match(modes, G_N_ELEMENTS(modes), rest);
		if (m < 0)
			return EINVAL;
	}
	*level = (od_vmp_level)l;
	*mode = (od_vmp_mode)m;
	return 0;
}

bool od_vmp_hears(od_vmp_level want, od_vmp_mode mode, unsigned up, od_vmp_level lev,
		  bool heard_below)
{
	/* vmpressure_event(): ancestor && local, signalled && default, level < ev->level */
	if (up > 0 && mode == OD_VMP_LOCAL)
		return false;
	if (heard_below && mode == OD_VMP_DEFAULT)
		return false;
	return lev >= want;
}

/* The mapping (docs/DESIGN.md). v1: a window of 512 scanned pages reclaimed at
 * < 40% efficiency is medium, < 5% critical, anything else low; deep scanning
 * (priority <= 3) is critical too. PSI measures the time tasks wait for memory
 * instead: "some" is the share of wall time at least one task of the cgroup waited
 * (reclaim, refaults of its working set, memory.high throttling). Low is any
 * measurable reclaim stall, medium a tenth of the time, critical half of it with
 * every task of the cgroup stalled ("full"): reclaim that no longer frees anything
 * is what stalls everyone. */
static const struct {
	const char *kind;
	unsigned stall_us;
} psi[] = {
	[OD_VMP_LOW] = { "some", 10000 },
	[OD_VMP_MEDIUM] = { "some", 100000 },
	[OD_VMP_CRITICAL] = { "full", 500000 },
};

size_t od_vmp_psi_trigger(od_vmp_level l, char *buf, size_t size)
{
	if ((unsigned)l >= G_N_ELEMENTS(psi) || !size)
		return 0;
	int n = snprintf(buf, size, "%s %u %lld", psi[l].kind, psi[l].stall_us,
			 OD_VMP_WINDOW_NS / 1000);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

typedef struct {
	char *path;
	int64_t when[OD_VMP_NLEVELS]; /* last firing of that level heard there, 0 none */
} heard;

struct od_vmp_recent {
	GPtrArray *h; /* heard* */
};

static void heard_free(gpointer p)
{
	heard *x = p;
	g_free(x->path);
	g_free(x);
}

od_vmp_recent *od_vmp_recent_new(void)
{
	od_vmp_recent *r = g_new0(od_vmp_recent, 1);
	r->h = g_ptr_array_new_with_free_func(heard_free);
	return r;
}

void od_vmp_recent_free(od_vmp_recent *r)
{
	if (!r)
		return;
	g_ptr_array_unref(r->h);
	g_free(r);
}

static bool stale(const heard *x, int64_t now)
{
	for (int l = 0; l < OD_VMP_NLEVELS; l++)
		if (x->when[l] && now - x->when[l] <= OD_VMP_WINDOW_NS)
			return false;
	return true;
}

void od_vmp_recent_note(od_vmp_recent *r, const char *path, od_vmp_level lev, int64_t now)
{
	heard *found = NULL;
	for (guint i = r->h->len; i-- > 0;) {
		heard *x = g_ptr_array_index(r->h, i);
		if (strcmp(x->path, path) == 0)
			found = x;
		else if (stale(x, now))
			g_ptr_array_remove_index_fast(r->h, i); /* the book stays small */
	}
	if (!found) {
		found = g_new0(heard, 1);
		found->path = g_strdup(path);
		g_ptr_array_add(r->h, found);
	}
	found->when[lev] = now ? now : 1;
}

int od_vmp_level_of_events(const uint64_t old[OD_VMP_NEVENTS], const uint64_t now[OD_VMP_NEVENTS])
{
	if (now[2] > old[2] || now[3] > old[3])
		return OD_VMP_CRITICAL;
	if (now[0] > old[0] || now[1] > old[1])
		return OD_VMP_LOW;
	return -1;
}

bool od_path_below(const char *parent, const char *child)
{
	size_t n = strlen(parent);
	if (n == 0)
		return child[0] != '\0';
	return strncmp(parent, child, n) == 0 && child[n] == '/';
}

bool od_vmp_recent_below(od_vmp_recent *r, const char *path, od_vmp_level lev, int64_t now)
{
	for (guint i = 0; i < r->h->len; i++) {
		heard *x = g_ptr_array_index(r->h, i);
		if (!od_path_below(path, x->path))
			continue;
		for (int l = lev; l < OD_VMP_NLEVELS; l++)
			if (x->when[l] && now - x->when[l] <= OD_VMP_WINDOW_NS)
				return true;
	}
	return false;
}
