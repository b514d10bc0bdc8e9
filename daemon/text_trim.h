/* text_trim.h — gives back, before mlockall, the pages of the libraries' read-only file
 * mappings that only start-up touched (the dynamic linker's symbol lookups, relocation and
 * IFUNC resolvers, constructors, option parsing), so that the lock does not keep them
 * resident for the daemon's life; what runs later faults its pages in again, and they are
 * locked as they are touched (MCL_ONFAULT), as any page first touched after start-up is.
 * Only mappings whose contents are the file's are released (not writable, not one
 * anonymous page in them: a private copy, e.g. a RELRO page the linker wrote, would be
 * lost), and only of shared libraries off the paths that must not fault under pressure:
 * the executable, libc, ld.so, glib and libfuse (the deadline thread's, the kill actuators'
 * and the FUSE request path's code) and every mapping that is not a lib*.so (locale data)
 * are kept as they are (text_trim.c lists what is trimmed). Main's thread, before any
 * thread is made and before mlockall
 * (locked pages cannot be released). Returns the kB released; -1 if /proc/self/smaps
 * could not be read. */
#ifndef OOMD_TEXT_TRIM_H
#define OOMD_TEXT_TRIM_H

long od_trim_startup_pages(void);

#endif
