/* atomic_file.h (private) — writing a file so that its path holds, at any
 * moment and after any crash, either the old file or the complete new one:
 * the new one is written under a temporary name of its own process,
 * "<path>.<pid>-<n>.tmp", synced, renamed over path, and the directory
 * synced. h5util.h wraps this for HDF5 files.
 *
 * The temporary is always a new file of this process: its name is one no
 * other live process uses and that nothing holds yet, and it is created
 * with O_EXCL, which fails rather than follow a link or truncate a file
 * made in between; so a write never lands outside its own new file, never
 * removes or replaces anything but path itself, and two writes to one path
 * (two processes, or two threads of one) each rename only their own file
 * (the last rename wins, whole). A temporary of a killed run stays, under
 * its process's id, until fn_atomic_remove_leftovers removes it. */
#ifndef FUSENET_SRC_ATOMIC_FILE_H
#define FUSENET_SRC_ATOMIC_FILE_H

#include <sys/stat.h>

#include "fusenet/status.h"

/* "<path>.<pid>-<n>.tmp", n counting this process's calls; malloc'ed,
 * NULL when out of memory. */
char *fn_atomic_tmp_name(const char *path);

/* A temporary name for path (*tmp, malloc'ed) that nothing holds now: a
 * name taken (by a leftover of a killed run whose process id this one has
 * now) is skipped, never removed. The caller creates it exclusively next
 * (O_CREAT | O_EXCL; HDF5: H5F_ACC_EXCL). On failure *tmp is NULL. */
fn_status fn_atomic_prepare(const char *path, char **tmp);

/* fn_atomic_prepare, then the temporary created exclusively and opened
 * for writing (mode 0666 less the umask): *fd. On failure *tmp is NULL. */
fn_status fn_atomic_create(const char *path, char **tmp, int *fd);

/* The temporary, written and closed, becomes path: fsyncs it, renames it
 * over path and fsyncs the directory. When the fsync or the rename fails,
 * the temporary is removed and path is untouched. */
fn_status fn_atomic_commit(const char *tmp, const char *path);

/* Removes an unfinished temporary; NULL is fine. */
void fn_atomic_abandon(const char *tmp);

/* Removes the temporaries killed writers left for path: the entries of its
 * directory named "<name>.<pid>-<n>.tmp" (path's own name, decimal pid and
 * n) that are regular files (a link is never one) of a process id that no
 * live process has, unless keep (NULL: none) says to keep one. Anything
 * else is left alone, as is a leftover that cannot be removed; a directory
 * that cannot be listed is no error. For a caller that is the only writer
 * of path (a train run holding its directory's lock, dir_lock.h). */
fn_status fn_atomic_remove_leftovers(const char *path,
                                     int (*keep)(const struct stat *leftover, void *arg),
                                     void *arg);

#endif
