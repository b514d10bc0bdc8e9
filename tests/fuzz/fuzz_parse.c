/* libFuzzer target: every parser of user input in the synthetic and virtualised
 * files. Checks the parsers' promises, not just the absence of crashes. */
#include "oomd/engine.h"
#include "oomd/parse.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	uint64_t v;
	int efd, cfd;

	if (od_parse_u64(buf, size, OE_MAX_DELAY_MS, &v) == 0 && v > OE_MAX_DELAY_MS)
		abort();
	if (od_parse_u64(buf, size, 1, &v) == 0 && v > 1)
		abort();
	if (od_parse_memory(buf, size, 4096, &v) == 0 && v != OE_UNLIMITED && v % 4096)
		abort();
	(void)od_parse_event_control(buf, size, &efd, &cfd);

	char out[64];
	size_t n = od_format_memory(v, out, sizeof(out));
	if (n == 0 || n >= sizeof(out) || out[n - 1] != '\n')
		abort();
	return 0;
}
