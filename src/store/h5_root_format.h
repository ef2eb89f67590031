/* h5_root_format.h (private) — the root attribute `format` of an HDF5
 * file ("fusenet-weights", "fusenet-export-check"), read under the probe
 * (h5_probe.h), for the layers that tell one kind of file from another
 * (file_role.c, export.c) without loading it. */
#ifndef FUSENET_SRC_H5_ROOT_FORMAT_H
#define FUSENET_SRC_H5_ROOT_FORMAT_H

#include <stddef.h>

/* The text into format (cap bytes, cap > 0); "" when path is no regular,
 * readable HDF5 file or has no such text attribute. */
void fn_h5_root_format(const char *path, char *format, size_t cap);

#endif
