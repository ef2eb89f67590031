/* atomic_file.h (private) — writing a file so that its path holds, at any
 * moment and after any crash, either the old file or the complete new one:
 * the new one is written as "<path>.tmp", synced, renamed over path, and
 * the directory synced. h5util.h wraps this for HDF5 files. */
#ifndef FUSENET_SRC_ATOMIC_FILE_H
#define FUSENET_SRC_ATOMIC_FILE_H

#include "fusenet/status.h"

/* "<path>.tmp", malloc'ed; NULL when out of memory. */
char *fn_atomic_tmp_name(const char *path);

/* The temporary, written and closed, becomes path: fsyncs it, renames it
 * over path and fsyncs the directory. When the fsync or the rename fails,
 * the temporary is removed and path is untouched. */
fn_status fn_atomic_commit(const char *tmp, const char *path);

/* Removes an unfinished temporary; NULL is fine. */
void fn_atomic_abandon(const char *tmp);

#endif
