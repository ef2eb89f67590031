/* regular_file.h (private) — the refusal of anything but a regular file
 * where a file is read (a config, a data set, weights, a checkpoint,
 * metrics.csv): a FIFO would block the reader forever (or HDF5 for a
 * minute), a directory or a device gives a misleading error or endless
 * bytes (/dev/zero), so each is refused at once, saying what it is. */
#ifndef FUSENET_SRC_REGULAR_FILE_H
#define FUSENET_SRC_REGULAR_FILE_H

#include <sys/types.h>

#include "fusenet/status.h"

/* What a file of this st_mode is, for messages: "a directory", "a FIFO
 * (named pipe)", "a character device", "a block device", "a socket", "a
 * symbolic link", "a regular file" or "not a regular file". */
const char *fn_file_kind(mode_t mode);

/* FN_OK when path (links followed) is a regular file. Else FN_ERR_IO
 * "<path>: cannot open: <the system's reason>" when it cannot be looked
 * at, or "<path>: is a directory, not a regular file" and the like. */
fn_status fn_require_regular_file(const char *path);

/* Opens path read-only when it is a regular file, without blocking on a
 * FIFO (it is opened with O_NONBLOCK, looked at with fstat, then set back
 * to blocking): *fd (close it) and *size in bytes, or the errors of
 * fn_require_regular_file. */
fn_status fn_open_regular_file(const char *path, int *fd, long long *size);

/* 1 when the file's first bytes (up to 512) are printable text (a CSV, a
 * config, JSON), for a message that says what a file is where a binary
 * format was expected; 0 otherwise or when it cannot be read. */
int fn_file_looks_like_text(const char *path);

#endif
