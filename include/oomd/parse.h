/* parse.h — parsing and formatting of what users write to and read from the
 * synthetic and virtualised files. Pure functions; every parser takes the raw
 * bytes of one write(2) (not NUL-terminated) and returns 0 or a positive errno.
 * The parsers reproduce what the kernel would have done with the same bytes, so
 * that a client sees cgroup v1's errno.
 */
#ifndef OOMD_PARSE_H
#define OOMD_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* kstrtoull(buf, 0) after the kernel strips one trailing newline (and we accept a
 * trailing NUL): decimal, 0x hex, leading-0 octal, optional leading '+'.
 * Values above `max` give EINVAL (ERANGE from kstrtoull is reported as EINVAL by
 * the cgroup write handlers of interest here). */
int od_parse_u64(const char *buf, size_t len, uint64_t max, uint64_t *out);

/* memory.max / memory.high as the kernel's page_counter_memparse() reads them:
 * "max" or memparse() syntax (number with optional K/M/G/T/P/E suffix) after
 * whitespace is stripped; rounded down to the page size. EINVAL on bad input. */
int od_parse_memory(const char *buf, size_t len, uint64_t page_size, uint64_t *out);

/* "max\n" or "<n>\n". Returns the length written (buffer of >= 24 bytes). */
size_t od_format_memory(uint64_t v, char *buf, size_t size);

/* "oom_kill_disable D\nunder_oom U\noom_kill K\n". Returns the length. */
size_t od_format_oom_control(int disable, int under_oom, uint64_t oom_kill, char *buf, size_t size);

/* cgroup.event_control: "<event_fd> <control_fd>[ <args>]" with a trailing NUL or
 * newline accepted, as v1's memcg_write_event_control parses it. EINVAL on bad input. */
int od_parse_event_control(const char *buf, size_t len, int *event_fd, int *control_fd);
/* The same, with where the arguments after "<control_fd> " start in buf and how long they
 * are up to the stripped end (a threshold, a pressure level): len 0 when there are none. */
int od_parse_event_control_args(const char *buf, size_t len, int *event_fd, int *control_fd,
				size_t *args_off, size_t *args_len);

#endif
