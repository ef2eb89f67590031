/* export_write.c — fn_export_write (export.h): a network in the chosen
 * format, with the entries export_meta.c describes. Above the formats'
 * writers (onnx.c, safetensors_write.c), which use export.c's file write,
 * so no file of the room calls back into this one. */
#include "export/export_impl.h"

fn_status fn_export_write(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *meta,
                          fn_export_format format, const char *path)
{
    if (!net || !path || format < 0 || format >= FN_EXPORT_FORMATS)
        return fn_fail(FN_ERR_INVALID, "fn_export_write: bad arguments");
    fn_export_meta all;
    FN_TRY(fn_export_describe(net, norm, meta, &all));
    fn_status st = format == FN_EXPORT_ONNX ? fn_export_onnx(net, norm, &all, path)
                                            : fn_export_safetensors(net, norm, &all, path);
    fn_export_meta_clear(&all);
    return st;
}
