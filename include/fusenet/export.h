/* export.h — a network leaves fusenet: as an ONNX model (for ONNX Runtime,
 * TensorRT, OpenVINO, a browser) or as safetensors (for PyTorch and any
 * reader of the format). Both files carry the same metadata: the
 * architecture (each layer's kind, sizes and attributes), whether inputs
 * are standardised, the weights file's config text and every attribute of
 * its `/provenance` group as `provenance.<name>`. docs/formats.md
 * describes both files.
 *
 * Every layer kind has a row in the export table (src/export/export_kind.c):
 * its parameters' state_dict names and its ONNX nodes; a kind without one
 * is refused by name. Files are written atomically (a temporary of the
 * process, fsync, rename): a failed export leaves nothing at the path. A
 * safetensors file reads back as a network (safetensors.h). */
#ifndef FUSENET_EXPORT_H
#define FUSENET_EXPORT_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/input_norm.h"
#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_export_format { FN_EXPORT_ONNX, FN_EXPORT_SAFETENSORS, FN_EXPORT_FORMATS } fn_export_format;

/* "onnx", "safetensors". */
FN_API const char *fn_export_format_name(fn_export_format format);
/* By name ("onnx"); else FN_ERR_INVALID listing the names. */
FN_API fn_status fn_export_format_find(const char *name, fn_export_format *format);
/* By a path's extension (".onnx", ".safetensors"); else FN_ERR_INVALID
 * saying to name the format. */
FN_API fn_status fn_export_format_of_path(const char *path, fn_export_format *format);

/* Text entries (key, value) a model file carries besides the architecture. */
typedef struct fn_export_meta fn_export_meta; /* opaque */

/* A weights file's (or checkpoint's) entries: its root attribute `config`
 * as "config", and each attribute of its group `/provenance` (strings,
 * integers and floats, as text) as "provenance.<name>"; either may be
 * absent. */
FN_API fn_status fn_export_meta_read(fn_export_meta **meta, const char *weights_path);
FN_API void fn_export_meta_destroy(fn_export_meta *meta); /* NULL is fine */
FN_API int fn_export_meta_count(const fn_export_meta *meta);
FN_API const char *fn_export_meta_key(const fn_export_meta *meta, int i);   /* [0, count) */
FN_API const char *fn_export_meta_value(const fn_export_meta *meta, int i); /* [0, count) */

/* Writes net (with norm, its input standardisation; NULL: none) to path in
 * `format`, with meta's entries (NULL: none). */
FN_API fn_status fn_export_write(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *meta,
                                 fn_export_format format, const char *path);

/* The check file of an export ("<model>.check.h5"): rows of inputs
 * [rows, in] as a data file holds them (before standardisation) and
 * fusenet's outputs for them [rows, out], as float32 datasets `inputs` and
 * `outputs`; scripts/verify_export.py runs the exported model on the
 * inputs and compares. Written atomically. */
FN_API fn_status fn_export_check_write(const char *path, const float *inputs, const float *outputs,
                                       int rows, int in, int out);

/* fn_export_write and its check file at check_path published together:
 * the model and (with inputs; NULL: none) the check file of
 * fn_export_check_write, inputs [rows, in] and outputs [rows, out], are
 * each written in full to a temporary of this process first; then an
 * earlier check file at check_path (one an export wrote) is removed, the
 * model renamed into place and the check file after it. Any failure before
 * the renames leaves both paths as they were and no temporary; a kill
 * between the renames leaves the new model without a check file, never
 * beside an older one's. */
FN_API fn_status fn_export_write_with_check(const fn_net *net, const fn_input_norm *norm,
                                            const fn_export_meta *meta, fn_export_format format,
                                            const char *path, const char *check_path,
                                            const float *inputs, const float *outputs, int rows);

/* 1 when the file at path is a model fusenet exported in `format` (its
 * metadata's format is fusenet-export), 0 otherwise (absent, unreadable,
 * another program's, or the other format). */
FN_API int fn_export_file_is(const char *path, fn_export_format format);
/* 1 when the file at path is a check file (HDF5 whose root attribute
 * format is fusenet-export-check). */
FN_API int fn_export_check_file_is(const char *path);

/* The parameter value of net of the largest magnitude, for a message on
 * outputs that overflow: "3e+38 (layer 2's weight)" into text (cap bytes). */
FN_API fn_status fn_export_largest_value(const fn_net *net, char *text, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
