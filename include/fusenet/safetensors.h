/* safetensors.h — a network from a safetensors file that fusenet exported
 * (export.h): `[model] init = model.safetensors` starts a run from it as
 * from a weights.h5, and predict-like callers can build it. The file's
 * metadata gives the architecture (format "fusenet-export", each layer's
 * kind, sizes and attributes); its tensors are named by the state_dict keys
 * of scripts/weights_to_torch.py's module (docs/formats.md). A file of
 * another version, or without fusenet's metadata, is refused. */
#ifndef FUSENET_SAFETENSORS_H
#define FUSENET_SAFETENSORS_H

#include "fusenet/api.h"

#include "fusenet/input_norm.h"
#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when path names a safetensors file by its extension ".safetensors". */
FN_API int fn_safetensors_path(const char *path);

/* The network the file describes, for batches of up to max_batch rows,
 * with its values, without gradients (as fn_weights_build). */
FN_API fn_status fn_safetensors_build(fn_net **net, fn_context *ctx, const char *path, int max_batch);

/* The file's values into net, whose layers must match the file's in kind,
 * sizes and the attributes a weights file must match (groups). */
FN_API fn_status fn_safetensors_load(fn_net *net, const char *path);

/* The input standardisation the file holds (tensors input_norm.mean and
 * input_norm.std), or *norm NULL when it has none. features > 0: they must
 * have that many entries. */
FN_API fn_status fn_safetensors_input_norm(fn_input_norm **norm, fn_context *ctx, const char *path,
                                           int features);

#ifdef __cplusplus
}
#endif
#endif
