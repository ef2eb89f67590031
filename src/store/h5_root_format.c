/* h5_root_format.c — the root attribute `format` of an HDF5 file
 * (h5_root_format.h), read in the probe's child first: HDF5 may crash on
 * a corrupt file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "store/h5_probe.h"
#include "store/h5_root_format.h"
#include "store/h5util.h"
#include "store/regular_file.h"

typedef struct format_job {
    const char *path;
    char *format;
    size_t cap;
} format_job;

static fn_status read_format(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const format_job *job = arg;
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, job->path));
    char *format = NULL;
    if (H5Aexists(file, "format") > 0 && fn_h5_get_string(file, "/", "format", &format) == FN_OK)
        snprintf(job->format, job->cap, "%s", format);
    free(format);
    H5Eclear2(H5E_DEFAULT);
    H5Fclose(file);
    return FN_OK;
}

void fn_h5_root_format(const char *path, char *format, size_t cap)
{
    format[0] = '\0';
    if (!path || fn_require_regular_file(path) != FN_OK)
        return;
    fn_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    format_job job = {path, format, cap};
    if (fn_h5_probe(path, read_format, &job, FN_H5_PROBE_SECONDS, NULL) != FN_OK ||
        read_format(NULL, &job) != FN_OK)
        format[0] = '\0';
}
