/* driver.c — mounts the shadow of a directory with the stub controller, for
 * trying the FUSE layer by hand: driver REALROOT MOUNTPOINT [-d]. SIGINT or
 * SIGTERM stops it through od_shadowfs_exit() from another thread. */
#include <fcntl.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "oomd/engine.h"
#include "oomd/shadowfs.h"

static od_shadowfs *fs;

static gpointer serve(gpointer data)
{
	(void)data;
	int r = od_shadowfs_run(fs);
	fprintf(stderr, "driver: loop returned %d\n", r);
	return GINT_TO_POINTER(r);
}

static gboolean on_signal(gpointer data)
{
	fprintf(stderr, "driver: stopping\n");
	od_shadowfs_exit(fs);
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s REALROOT MOUNTPOINT [-d]\n", argv[0]);
		return 2;
	}
	int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		perror(argv[1]);
		return 1;
	}
	oe_config cfg;
	oe_config_defaults(&cfg);
	od_controller *ctl = od_controller_new(&cfg);
	od_shadowfs_opts o;
	od_shadowfs_opts_defaults(&o);
	o.debug = argc > 3 && strcmp(argv[3], "-d") == 0;
	GError *err = NULL;
	fs = od_shadowfs_new(root, argv[2], ctl, &o, &err);
	if (!fs) {
		fprintf(stderr, "driver: %s\n", err->message);
		return 1;
	}
	GMainLoop *loop = g_main_loop_new(NULL, FALSE);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_unix_signal_add(SIGTERM, on_signal, loop);
	GThread *t = g_thread_new("serve", serve, NULL);
	g_main_loop_run(loop);
	int r = GPOINTER_TO_INT(g_thread_join(t));
	od_shadowfs_free(fs);
	od_controller_free(ctl);
	fprintf(stderr, "driver: done\n");
	return r;
}
