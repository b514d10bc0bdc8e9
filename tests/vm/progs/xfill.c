/* xfill - sets user.* values on a directory and every file in it, as a tenant filling
 * kernel memory through extended attributes would (s-charge, issue 21 item 2).
 *
 *   xfill DIR COUNT SIZE
 *       on DIR and each regular file directly in it that it may set (its own), sets COUNT
 *       values user.xfill.<i> of SIZE bytes; prints "set N enomem M other K" (K: any
 *       other error, the first one's name after it)
 *
 * Exit status: 0 done (whatever was refused), 1 DIR unreadable, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static long set, enomem, other;
static int first_other;

static void fill(const char *path, long count, const char *val, size_t size)
{
	for (long i = 0; i < count; i++) {
		char name[64];
		snprintf(name, sizeof name, "user.xfill.%ld", i);
		if (setxattr(path, name, val, size, 0) == 0)
			set++;
		else if (errno == ENOMEM || errno == ENOSPC)
			enomem++;
		else if (!other++)
			first_other = errno;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fputs("usage: xfill DIR COUNT SIZE\n", stderr);
		return 2;
	}
	long count = atol(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	char *val = malloc(size ? size : 1);
	if (!val)
		return 1;
	memset(val, 'v', size);
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	fill(argv[1], count, val, size);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_REG)
			continue;
		char p[4096];
		snprintf(p, sizeof p, "%s/%s", argv[1], de->d_name);
		fill(p, count, val, size);
	}
	closedir(d);
	printf("set %ld enomem %ld other %ld%s%s\n", set, enomem, other, other ? " " : "",
	       other ? strerrorname_np(first_other) : "");
	return 0;
}
