/* file_role.c — what a file is (file_role.h): HDF5 and its root attribute
 * `format`, or the look of its first bytes (fn_file_looks_like_text,
 * store/regular_file.h, the check every message of this kind shares). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/file_role.h"
#include "store/h5util.h"
#include "store/regular_file.h"

/* The role of an HDF5 file whose open succeeded. */
static fn_file_role hdf5_role(hid_t file, char *datasets, size_t cap)
{
    char *format = NULL;
    fn_file_role role = FN_FILE_HDF5;
    const htri_t has_format = H5Aexists(file, "format");
    if (has_format != 0)
        role = FN_FILE_UNKNOWN; /* another program's format, or unreadable */
    if (has_format > 0 && fn_h5_get_string(file, "/", "format", &format) == FN_OK) {
        if (strcmp(format, "fusenet-weights") == 0)
            role = FN_FILE_WEIGHTS;
        else if (strcmp(format, "fusenet-checkpoint") == 0)
            role = FN_FILE_CHECKPOINT;
    }
    free(format);
    H5Eclear2(H5E_DEFAULT);
    if (role == FN_FILE_HDF5 && cap)
        fn_h5_root_names(file, datasets, cap);
    return role;
}

typedef struct role_job {
    const char *path;
    char *datasets;
    size_t cap;
    fn_file_role role;
} role_job;

static fn_status read_role(fn_h5_child *probe, void *arg)
{
    (void)probe;
    role_job *job = arg;
    hid_t file = -1;
    const fn_status st = fn_h5_open_read(&file, job->path);
    if (st != FN_OK)
        return st;
    job->role = hdf5_role(file, job->datasets, job->cap);
    H5Fclose(file);
    return FN_OK;
}

fn_file_role fn_file_role_of(const char *path, char *datasets, size_t cap)
{
    if (cap)
        datasets[0] = '\0';
    if (!path)
        return FN_FILE_UNKNOWN;
    /* A FIFO would hold the reads below. */
    if (fn_require_regular_file(path) != FN_OK)
        return FN_FILE_UNKNOWN;
    fn_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return fn_file_looks_like_text(path) ? FN_FILE_TEXT : FN_FILE_OTHER;
    }
    role_job job = {path, datasets, cap, FN_FILE_UNKNOWN};
    if (fn_h5_probe(path, read_role, &job, FN_H5_PROBE_SECONDS, NULL) != FN_OK)
        return FN_FILE_UNKNOWN;
    if (read_role(NULL, &job) != FN_OK)
        return FN_FILE_UNKNOWN;
    return job.role;
}
