/* export_write.c — fn_export_write and fn_export_write_with_check
 * (export.h): a network in the chosen format, with the entries
 * export_meta.c describes, and its check file published with it. Above
 * the formats' writers (onnx.c, safetensors_write.c), which stage their
 * bytes through export.c, so no file of the room calls back into this one. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_impl.h"
#include "store/atomic_file.h"

/* The model written in full to a temporary of this process (*tmp). */
static fn_status stage_model(const fn_net *net, const fn_input_norm *norm,
                             const fn_export_meta *meta, fn_export_format format,
                             const char *path, char **tmp)
{
    *tmp = NULL;
    if (!net || !path || format < 0 || format >= FN_EXPORT_FORMATS)
        return fn_fail(FN_ERR_INVALID, "fn_export_write: bad arguments");
    fn_export_meta all;
    FN_TRY(fn_export_describe(net, norm, meta, &all));
    fn_status st = format == FN_EXPORT_ONNX ? fn_export_onnx(net, norm, &all, path, tmp)
                                            : fn_export_safetensors(net, norm, &all, path, tmp);
    fn_export_meta_clear(&all);
    return st;
}

fn_status fn_export_write(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *meta,
                          fn_export_format format, const char *path)
{
    char *tmp = NULL;
    FN_TRY(stage_model(net, norm, meta, format, path, &tmp));
    fn_status st = fn_atomic_commit(tmp, path); /* removes tmp when it fails */
    free(tmp);
    return st;
}

/* An earlier check file at check_path goes before a new model is renamed
 * into place, so no model ever stands beside another's check file. A file
 * there that is no check file is another's and stays. */
static fn_status remove_earlier_check(const char *check_path)
{
    if (!fn_export_check_file_is(check_path) || unlink(check_path) == 0 || errno == ENOENT)
        return FN_OK;
    return fn_fail(FN_ERR_IO, "%s: cannot remove the earlier check file: %s; the model was not "
                   "written", check_path, strerror(errno));
}

/* Both temporaries written: the earlier check file removed, the model
 * renamed into place, then its check file. Should the check file's rename
 * fail, the model goes too: the two stand together or not at all. */
static fn_status publish(const char *path, char *model_tmp, const char *check_path,
                         char *check_tmp)
{
    fn_status st = remove_earlier_check(check_path);
    if (st != FN_OK) {
        fn_atomic_abandon(model_tmp);
        fn_atomic_abandon(check_tmp);
        return st;
    }
    st = fn_atomic_commit(model_tmp, path); /* removes model_tmp when it fails */
    if (st != FN_OK) {
        fn_atomic_abandon(check_tmp);
        return st;
    }
    if (!check_tmp)
        return FN_OK;
    st = fn_atomic_commit(check_tmp, check_path);
    if (st != FN_OK) {
        remove(path);
        fn_error_prefix("%s: removed again, as its check file could not be written: ", path);
    }
    return st;
}

fn_status fn_export_write_with_check(const fn_net *net, const fn_input_norm *norm,
                                     const fn_export_meta *meta, fn_export_format format,
                                     const char *path, const char *check_path,
                                     const float *inputs, const float *outputs, int rows)
{
    if (!net || !path || !check_path || (inputs && !outputs))
        return fn_fail(FN_ERR_INVALID, "fn_export_write_with_check: bad arguments");
    char *model_tmp = NULL, *check_tmp = NULL;
    FN_TRY(stage_model(net, norm, meta, format, path, &model_tmp));
    fn_status st = FN_OK;
    if (inputs)
        st = fn_export_check_stage(check_path, inputs, outputs, rows, fn_net_in_features(net),
                                   fn_net_out_features(net), &check_tmp);
    if (st == FN_OK)
        st = publish(path, model_tmp, check_path, check_tmp);
    else
        fn_atomic_abandon(model_tmp);
    free(model_tmp);
    free(check_tmp);
    return st;
}
