/* atomic_file.h (private) — writing a file so that its path holds, at any
 * moment and after any crash, either the old file or the complete new one:
 * the new one is written as "<path>.tmp", synced, renamed over path, and
 * the directory synced. h5util.h wraps this for HDF5 files.
 *
 * The temporary is always a new file of this process: a "<path>.tmp" left
 * by a killed run, or planted there as a symbolic link, is removed (a link
 * itself, never what it points to) and the temporary created with O_EXCL,
 * which fails rather than follow a link made in between; so a write never
 * lands outside its own new file. */
#ifndef FUSENET_SRC_ATOMIC_FILE_H
#define FUSENET_SRC_ATOMIC_FILE_H

#include "fusenet/status.h"

/* "<path>.tmp", malloc'ed; NULL when out of memory. */
char *fn_atomic_tmp_name(const char *path);

/* Makes way for "<path>.tmp" (*tmp, malloc'ed): whatever is left under
 * that name is removed; a directory there is an error. The caller creates
 * it exclusively next (O_CREAT | O_EXCL; HDF5: H5F_ACC_EXCL). */
fn_status fn_atomic_prepare(const char *path, char **tmp);

/* fn_atomic_prepare, then the temporary created exclusively and opened for
 * writing (mode 0666 less the umask): *fd. On failure *tmp is NULL. */
fn_status fn_atomic_create(const char *path, char **tmp, int *fd);

/* The temporary, written and closed, becomes path: fsyncs it, renames it
 * over path and fsyncs the directory. When the fsync or the rename fails,
 * the temporary is removed and path is untouched. */
fn_status fn_atomic_commit(const char *tmp, const char *path);

/* The same for writers that hold no lock on the path's directory (export,
 * predict): the temporary is "<path>.<pid>-<n>.tmp", a name no other live
 * process uses, so two writes to one path never share one and each renames
 * only its own file (the last rename wins, whole). A temporary of a killed
 * run stays, under its process's id. */
char *fn_atomic_own_tmp_name(const char *path);
fn_status fn_atomic_prepare_own(const char *path, char **tmp);
fn_status fn_atomic_create_own(const char *path, char **tmp, int *fd);

/* Removes an unfinished temporary; NULL is fine. */
void fn_atomic_abandon(const char *tmp);

#endif
