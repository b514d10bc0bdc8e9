/* libFuzzer target: the command line (GOptionContext with our callbacks) and the
 * persisted state read back from a cgroup's xattr, which anyone with write access
 * to the real directory could have corrupted. A decoded state must re-encode to
 * something that decodes to the same state. */
#include "oomd/options.h"
#include "oomd/persist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void fuzz_argv(const uint8_t *data, size_t size)
{
	char *copy = g_strndup((const char *)data, size);
	char **words = g_strsplit_set(copy, " \n", 16);
	int argc = 1;
	char *argv[18] = { "oomdelayfs" };
	for (char **w = words; *w && argc < 17; w++) {
		/* GOptionContext prints the help and exits: not a parser outcome to fuzz */
		if (**w == '-' && (strstr(*w, "help") || ((*w)[1] != '-' && strpbrk(*w, "h?"))))
			continue;
		argv[argc++] = *w;
	}
	od_options o;
	GError *err = NULL;
	if (od_options_parse(&o, argc, argv, &err) == OD_EXIT_OK)
		od_options_clear(&o);
	g_clear_error(&err);
	g_strfreev(words);
	g_free(copy);
}

static void fuzz_state(const uint8_t *data, size_t size)
{
	oe_persisted p, q;
	if (od_persist_decode((const char *)data, size, &p) != 0)
		return;
	char buf[512];
	size_t n = od_persist_encode(&p, buf, sizeof buf);
	if (n == 0 || od_persist_decode(buf, n, &q) != 0 || memcmp(&p, &q, sizeof p) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t v;
	char *s = g_strndup((const char *)data, size);
	(void)od_options_parse_size(s, &v);
	g_free(s);
	fuzz_argv(data, size);
	fuzz_state(data, size);
	return 0;
}
