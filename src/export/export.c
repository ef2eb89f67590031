/* export.c — the export's entry points (export.h) below the formats: the
 * formats by name and extension, the atomic write of a model's bytes (the
 * formats' writers call it), and the check file of inputs and fusenet's
 * outputs. The write of a model in a format is export_write.c's. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_impl.h"
#include "store/atomic_file.h"
#include "store/h5_root_format.h"
#include "store/h5util.h"

static const char *const format_names[FN_EXPORT_FORMATS] = {"onnx", "safetensors"};
_Static_assert(sizeof format_names / sizeof format_names[0] == FN_EXPORT_FORMATS,
               "a format without its name");

const char *fn_export_format_name(fn_export_format format)
{
    return format >= 0 && format < FN_EXPORT_FORMATS ? format_names[format] : "?";
}

fn_status fn_export_format_find(const char *name, fn_export_format *format)
{
    for (int i = 0; i < FN_EXPORT_FORMATS; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *format = (fn_export_format)i;
            return FN_OK;
        }
    return fn_fail(FN_ERR_INVALID, "unknown export format '%s' (expected onnx or safetensors)",
                   name);
}

fn_status fn_export_format_of_path(const char *path, fn_export_format *format)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash) && fn_export_format_find(dot + 1, format) == FN_OK)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID, "%s: the format cannot be told from the extension (expected "
                   ".onnx or .safetensors); name it with --format onnx or --format safetensors",
                   path);
}

/* --- writing --------------------------------------------------------------------- */

static fn_status write_all(int fd, const char *tmp, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t done = write(fd, p, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return fn_fail(FN_ERR_IO, "%s: cannot write: %s", tmp,
                           done < 0 ? strerror(errno) : "no progress");
        p += done;
        n -= (size_t)done;
    }
    return FN_OK;
}

fn_status fn_export_file_stage(const char *path, const void *const *parts, const size_t *sizes,
                               int n, char **tmp)
{
    int fd = -1;
    FN_TRY(fn_atomic_create(path, tmp, &fd));
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && i < n; i++)
        st = write_all(fd, *tmp, parts[i], sizes[i]);
    if (close(fd) != 0 && st == FN_OK)
        st = fn_fail(FN_ERR_IO, "%s: cannot close: %s", *tmp, strerror(errno));
    if (st != FN_OK) {
        fn_atomic_abandon(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
    return st;
}

/* --- the check file ---------------------------------------------------------------- */

static fn_status write_check(hid_t file, const char *path, const float *inputs,
                             const float *outputs, int rows, int in, int out)
{
    const long long in_dims[2] = {rows, in}, out_dims[2] = {rows, out};
    FN_TRY(fn_h5_put_string(file, path, "format", "fusenet-export-check"));
    FN_TRY(fn_h5_put_int(file, path, "format_version", 1));
    FN_TRY(fn_h5_put_floats(file, path, "inputs", inputs, 2, in_dims));
    return fn_h5_put_floats(file, path, "outputs", outputs, 2, out_dims);
}

fn_status fn_export_check_stage(const char *path, const float *inputs, const float *outputs,
                                int rows, int in, int out, char **tmp)
{
    *tmp = NULL;
    if (!path || !inputs || !outputs || rows < 1 || in < 1 || out < 1)
        return fn_fail(FN_ERR_INVALID, "fn_export_check_write: bad arguments");
    hid_t file = -1;
    FN_TRY(fn_h5_create_tmp(&file, path, tmp));
    fn_status st = write_check(file, path, inputs, outputs, rows, in, out);
    if (H5Fclose(file) < 0 && st == FN_OK)
        st = fn_h5_fail(FN_ERR_IO, "%s: cannot close", *tmp);
    if (st != FN_OK) {
        fn_atomic_abandon(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
    return st;
}

fn_status fn_export_check_write(const char *path, const float *inputs, const float *outputs,
                                int rows, int in, int out)
{
    char *tmp = NULL;
    FN_TRY(fn_export_check_stage(path, inputs, outputs, rows, in, out, &tmp));
    fn_status st = fn_atomic_commit(tmp, path);
    free(tmp);
    return st;
}

int fn_export_check_file_is(const char *path)
{
    char format[64];
    fn_h5_root_format(path, format, sizeof format);
    return strcmp(format, "fusenet-export-check") == 0;
}
