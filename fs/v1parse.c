/* v1parse.c — the value parser of the v1 layout's memory files, on its own so that
 * it can be fuzzed without a FUSE session (tests/fuzz/fuzz_v1.c).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <glib.h>

#include "oomd/engine.h"
#include "v1parse.h"

/* What v1's page_counter_memparse(strstrip(buf), "-1") does with the bytes of
 * one write: "-1" is unlimited, else memparse() (simple_strtoull base 0 with an
 * optional K/M/G/T/P/E suffix; no digits at all reads 0) and nothing after it;
 * the result is bytes / PAGE_SIZE capped at PAGE_COUNTER_MAX pages. */
int fs_v1_parse_memory(uint64_t page_size, const char *buf, size_t len, uint64_t *out)
{
	g_autofree char *s = g_strndup(buf, len); /* stops at a NUL, as the kernel's string does */
	g_strstrip(s);
	if (strcmp(s, "-1") == 0) {
		*out = OE_UNLIMITED;
		return 0;
	}
	const char *p = s;
	unsigned base = 10;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && g_ascii_isxdigit(p[2])) {
		base = 16;
		p += 2;
	} else if (p[0] == '0') {
		base = 8;
	}
	uint64_t v = 0;
	for (;; p++) {
		int d;
		if (g_ascii_isdigit(*p))
			d = *p - '0';
		else if (g_ascii_isxdigit(*p))
			d = g_ascii_tolower(*p) - 'a' + 10;
		else
			break;
		if ((unsigned)d >= base)
			break;
		v = v * base + (uint64_t)d; /* simple_strtoull wraps silently */
	}
	int shift = 0;
	switch (*p) {
	case 'E': case 'e': shift += 10; /* fall through */
	case 'P': case 'p': shift += 10; /* fall through */
	case 'T': case 't': shift += 10; /* fall through */
	case 'G': case 'g': shift += 10; /* fall through */
	case 'M': case 'm': shift += 10; /* fall through */
	case 'K': case 'k': shift += 10; p++; break;
	default: break;
	}
	if (*p != '\0')
		return EINVAL;
	v = shift >= 64 ? 0 : v << shift;
	uint64_t ps = page_size ? page_size : 4096;
	uint64_t pages = v / ps;
	*out = pages >= (uint64_t)LONG_MAX / ps ? OE_UNLIMITED : pages * ps;
	return 0;
}
