/* file_role.h — what a file is, for a program whose arguments may have
 * been given in the wrong order or of the wrong kind: a weights file, a
 * checkpoint, a data file (HDF5 of other datasets), text (a CSV file) or
 * something else. Read under the probe (HDF5 may crash on a corrupt file);
 * a file that cannot be read says FN_FILE_UNKNOWN, and the caller's own
 * loader then reports why. */
#ifndef FUSENET_FILE_ROLE_H
#define FUSENET_FILE_ROLE_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_file_role {
    FN_FILE_UNKNOWN = 0, /* missing, unreadable, corrupt, or HDF5 of another format */
    FN_FILE_WEIGHTS,     /* HDF5 with format = fusenet-weights (docs/formats.md) */
    FN_FILE_CHECKPOINT,  /* HDF5 with format = fusenet-checkpoint */
    FN_FILE_HDF5,        /* HDF5 without a root attribute `format`: a data file */
    FN_FILE_TEXT,        /* not HDF5, its first bytes printable text (CSV, JSON, ...) */
    FN_FILE_OTHER        /* not HDF5 and not text (.npy, .npz, ...) */
} fn_file_role;

/* The role of the file at path; for FN_FILE_HDF5 the names in its root
 * group ("'X', 'y'") into datasets (cap bytes, may be 0). */
FN_API fn_file_role fn_file_role_of(const char *path, char *datasets, size_t cap);

/* What the file at path is, in words, for a program given the wrong file:
 * "an ONNX export", "a safetensors export", "an export's check file", "a
 * fusenet weights file", "a fusenet checkpoint", "an HDF5 data file
 * (datasets 'X', 'y')", "a text file", "a file of another kind" or "not
 * a readable file"; into out (cap bytes). Returns out. */
FN_API const char *fn_file_describe(const char *path, char *out, size_t cap);

/* What `export --info` and `predict --info` print: the provenance line of
 * a weights file or checkpoint (fn_provenance_file_summary), its text
 * escaped for a terminal; any other file (a data set, an export, a check
 * file) is refused as what it is. */
FN_API fn_status fn_file_info(const char *path, char *line, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
