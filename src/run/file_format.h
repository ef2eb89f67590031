/* file_format.h (run) — the root attribute `format` of an HDF5 file, for
 * the code that tells files apart (file_role.c, file_kind.c). */
#ifndef FUSENET_RUN_FILE_FORMAT_H
#define FUSENET_RUN_FILE_FORMAT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The root attribute `format` of the HDF5 file at path ("fusenet-weights",
 * "fusenet-export-check") into format (cap bytes, cap > 0); "" when the
 * file is no readable HDF5 file or has no such text attribute. */
void fn_file_format(const char *path, char *format, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
