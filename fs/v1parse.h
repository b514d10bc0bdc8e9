/* v1parse.h — parsers of what users write to the v1 layout's files (v1parse.c).
 * Pure: any thread, no I/O, no blocking.
 */
#ifndef OOMD_FS_V1PARSE_H
#define OOMD_FS_V1PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A memory.limit_in_bytes-style value as v1's page_counter_memparse(buf, "-1")
 * reads it: "-1" or anything at or above PAGE_COUNTER_MAX pages is OE_UNLIMITED,
 * else bytes rounded down to page_size (0 means 4096). 0 or EINVAL. */
int fs_v1_parse_memory(uint64_t page_size, const char *buf, size_t len, uint64_t *out);

#endif
