/* provenance.h — where a file came from: a list of named texts (the
 * fusenet version and commit, the resolved configuration with the source
 * of every value, the device and math mode, each data set's path,
 * datasets, shapes, stored types and checksum, the number of ranks, the
 * start and end times), stored in every weights, best and checkpoint file
 * as scalar string attributes of the group `/provenance`. docs/formats.md
 * lists the names; they are stable, and a reader copies the group whole.
 * A file written before the group existed reads as an empty provenance. */
#ifndef FUSENET_PROVENANCE_H
#define FUSENET_PROVENANCE_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the group's contents, its attribute provenance_version. */
#define FN_PROVENANCE_VERSION "1"

typedef struct fn_provenance fn_provenance;

FN_API fn_status fn_provenance_create(fn_provenance **prov);
FN_API void fn_provenance_destroy(fn_provenance *prov); /* NULL is fine */
/* Sets name to a copy of value, replacing an earlier value of that name. */
FN_API fn_status fn_provenance_set(fn_provenance *prov, const char *name, const char *value);
/* The value of name, or NULL when the provenance has none. */
FN_API const char *fn_provenance_get(const fn_provenance *prov, const char *name);
/* The value the run used for [section] key, from the entry "config" (the
 * resolved configuration: "key = value  ; source" under "[section]"), as
 * snprintf into value; 1 when found, 0 when the provenance has no such
 * setting (a file written before the group existed, or another key). */
FN_API int fn_provenance_setting(const fn_provenance *prov, const char *section, const char *key,
                                 char *value, size_t cap);
/* The entries one by one, 0 <= i < fn_provenance_count, in the order set
 * (in name order when read from a file). */
FN_API int fn_provenance_count(const fn_provenance *prov);
FN_API const char *fn_provenance_name(const fn_provenance *prov, int i);
FN_API const char *fn_provenance_value(const fn_provenance *prov, int i);

/* Reads the group /provenance of an HDF5 file fusenet wrote (weights, best,
 * checkpoint): every scalar string attribute. A file without the group
 * gives an empty provenance (fn_provenance_count 0). */
FN_API fn_status fn_provenance_read(fn_provenance **prov, const char *path);

/* One line for people (no newline), as `predict --info` prints it:
 * "fusenet 1.2.0 (commit abc1234), cpu, math fp32, 1 rank, 2026-01-02T03:04:05Z
 * to ...; train data/t.h5 'X' [1437, 64] float64, 'y' [1437] int64,
 * checksum 0123456789abcdef; valid ...". An empty provenance reads "no
 * provenance recorded". snprintf's rules. */
FN_API void fn_provenance_summary(const fn_provenance *prov, char *line, size_t cap);

/* fn_provenance_read and fn_provenance_summary of the file at path; an
 * older file without the group says so, with the version that wrote it
 * when the file names one. */
FN_API fn_status fn_provenance_file_summary(const char *path, char *line, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
