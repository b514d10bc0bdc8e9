/* wnode.c — see wnode.h. */
#include "wnode.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void free_node(wnode *n)
{
	if (n->fd >= 0)
		close(n->fd);
	if (n->children)
		g_hash_table_destroy(n->children);
	g_free(n->name);
	g_free(n);
}

wnode *child_get(const wnode *n, const char *name)
{
	return n->children ? g_hash_table_lookup(n->children, name) : NULL;
}

void child_put(wnode *n, wnode *c)
{
	if (!n->children)
		n->children = g_hash_table_new(g_str_hash, g_str_equal);
	g_hash_table_insert(n->children, c->name, c);
}

void child_drop(wnode *n, const char *name)
{
	if (n->children)
		g_hash_table_remove(n->children, name);
}

GList *children_of(const wnode *n)
{
	return n->children ? g_hash_table_get_values(n->children) : NULL;
}

/* The directory of n, child of the directory pfd: a new O_PATH descriptor, or -1
 * with errno (ENOENT when the name now holds another cgroup). */
int open_at(int pfd, const wnode *n)
{
	int fd = openat(pfd, n->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != n->id)) {
		close(fd);
		errno = ENOENT;
		return -1;
	}
	return fd;
}

/* The directory of n: a new O_PATH descriptor (the caller closes it), or -1. */
int open_node(const wnode *n)
{
	if (!n->parent)
		return fcntl(n->fd, F_DUPFD_CLOEXEC, 3);
	int pfd = open_node(n->parent);
	if (pfd < 0)
		return -1;
	int fd = open_at(pfd, n);
	int e = errno;
	close(pfd);
	errno = e;
	return fd;
}
