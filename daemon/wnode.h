/* wnode.h — the watcher's node of a known cgroup (watcher.c), and the helpers that walk
 * the tree of them without inotify (wnode.c). The loop thread only; nothing blocks but
 * the openat/fstat of a cgroup directory.
 */
#ifndef OOMD_WNODE_H
#define OOMD_WNODE_H

#include <stdint.h>
#include <glib.h>

/* what a watch of a node is for (watcher.c) */
typedef enum { W_DIR, W_EVENTS, W_MAX, W_SUBTREE, W_KINDS } wkind;

typedef struct wnode wnode;

struct wnode {
	uint64_t id;
	wnode *parent;
	char *name;         /* in the parent; NULL for the root */
	int fd;             /* the root's O_PATH|O_DIRECTORY descriptor; -1 for the others */
	int wd[W_KINDS];    /* -1 when not watched */
	GHashTable *children; /* name -> wnode* (not owning); NULL while it has none */
};

void free_node(wnode *n);
wnode *child_get(const wnode *n, const char *name);
void child_put(wnode *n, wnode *c);
void child_drop(wnode *n, const char *name);
GList *children_of(const wnode *n);
/* The directory of n, child of the directory pfd: a new O_PATH descriptor, or -1
 * with errno (ENOENT when the name now holds another cgroup). */
int open_at(int pfd, const wnode *n);
/* The directory of n: a new O_PATH descriptor (the caller closes it), or -1. */
int open_node(const wnode *n);

#endif
