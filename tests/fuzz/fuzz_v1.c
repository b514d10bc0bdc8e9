/* libFuzzer target: the parsers of what callers write to cgroup.event_control and
 * to the v1 layout's memory files (issue 10, deliverable 8). Checks their promises
 * against a model, not just the absence of crashes. */
#include "oomd/engine.h"
#include "oomd/parse.h"
#include "v1parse.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_event_control(const char *buf, size_t size)
{
	int efd = -2, cfd = -2;
	if (od_parse_event_control(buf, size, &efd, &cfd) != 0)
		return;
	/* a number past INT32_MAX becomes -1 (EBADF later), nothing else is negative */
	if (efd < -1 || cfd < -1)
		abort();
	/* what it read is what a clean line of the same numbers reads */
	if (efd >= 0 && cfd >= 0) {
		char line[32];
		int n = snprintf(line, sizeof line, "%d %d\n", efd, cfd);
		int e2, c2;
		if (od_parse_event_control(line, (size_t)n, &e2, &c2) != 0 || e2 != efd || c2 != cfd)
			abort();
	}
}

/* A plain decimal without a leading zero, short enough not to wrap: the model. */
static bool plain_decimal(const char *buf, size_t size, uint64_t *v)
{
	if (size == 0 || size > 18 || buf[0] == '0')
		return false;
	*v = 0;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(buf[i] - '0');
	}
	return true;
}

static void check_v1_memory(const char *buf, size_t size, uint64_t ps)
{
	uint64_t v;
	int r = fs_v1_parse_memory(ps, buf, size, &v);
	if (r != 0 && r != EINVAL)
		abort();
	if (r == 0 && v != OE_UNLIMITED && (v % ps || v / ps >= (uint64_t)LONG_MAX / ps))
		abort(); /* page-aligned and below PAGE_COUNTER_MAX pages, or unlimited */
	uint64_t model;
	if (plain_decimal(buf, size, &model)) {
		uint64_t want = model / ps >= (uint64_t)LONG_MAX / ps ? OE_UNLIMITED : model / ps * ps;
		if (r != 0 || v != want)
			abort();
	}
	/* strstrip: surrounding blanks and the newline echo adds change nothing */
	if (size < 200 && !memchr(buf, 0, size)) {
		char padded[256];
		int n = snprintf(padded, sizeof padded, "  %.*s \n", (int)size, buf);
		uint64_t v2 = 0;
		int r2 = fs_v1_parse_memory(ps, padded, (size_t)n, &v2);
		if (r2 != r || (r == 0 && v2 != v))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	check_event_control(buf, size);
	check_v1_memory(buf, size, 4096);
	check_v1_memory(buf, size, 65536);
	return 0;
}
