/* file_kind.c — what a file is, in words, and the --info line of
 * `export` and `predict` (file_role.h): a weights file, a checkpoint or a
 * data set by its role, an export or a check file by export.h's readers. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "core/escape.h"
#include "fusenet/export.h"
#include "fusenet/file_role.h"
#include "fusenet/provenance.h"
#include "store/regular_file.h"

const char *fn_file_describe(const char *path, char *out, size_t cap)
{
    char datasets[256];
    const char *kind = "a file of another kind";
    if (fn_export_file_is(path, FN_EXPORT_ONNX))
        kind = "an ONNX export";
    else if (fn_export_file_is(path, FN_EXPORT_SAFETENSORS))
        kind = "a safetensors export";
    else if (fn_export_check_file_is(path))
        kind = "an export's check file";
    else
        switch (fn_file_role_of(path, datasets, sizeof datasets)) {
        case FN_FILE_WEIGHTS:
            kind = "a fusenet weights file";
            break;
        case FN_FILE_CHECKPOINT:
            kind = "a fusenet checkpoint";
            break;
        case FN_FILE_HDF5:
            snprintf(out, cap, "an HDF5 data file (datasets %s)", datasets[0] ? datasets : "none");
            return out;
        case FN_FILE_TEXT:
            kind = "a text file";
            break;
        case FN_FILE_OTHER:
            break;
        default:
            if (fn_require_regular_file(path) != FN_OK)
                kind = "not a readable file";
        }
    snprintf(out, cap, "%s", kind);
    return out;
}

fn_status fn_file_info(const char *path, char *line, size_t cap)
{
    const fn_file_role role = fn_file_role_of(path, NULL, 0);
    const int other = role != FN_FILE_WEIGHTS && role != FN_FILE_CHECKPOINT &&
                      (role != FN_FILE_UNKNOWN || fn_export_check_file_is(path));
    if (!other) {
        /* The file's texts (paths, versions) reach a terminal: escaped. */
        char raw[4096];
        FN_TRY(fn_provenance_file_summary(path, raw, sizeof raw));
        fn_escape_str(raw, line, cap);
        return FN_OK;
    }
    char what[320];
    fn_file_describe(path, what, sizeof what);
    const int export = fn_export_file_is(path, FN_EXPORT_ONNX) ||
                       fn_export_file_is(path, FN_EXPORT_SAFETENSORS);
    return fn_fail(FN_ERR_INVALID, "%s: is %s, not a weights file: --info prints where a weights "
                   "file or checkpoint came from%s", path, what,
                   export ? "; an export carries that as its metadata's provenance.* entries"
                          : "");
}
