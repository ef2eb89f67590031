/* weights.h — a network's weights exported to and imported from HDF5.
 *
 * Layout (docs/formats.md): root attributes format =
 * "fusenet-weights", format_version (1, or 2 when the file holds
 * "input_norm"), config (the run's config text),
 * layers ("layer0,layer1,...") and fusenet_version and fusenet_commit (the
 * library that wrote it: fn_version(), fn_version_commit(); informative,
 * never checked on reading); per layer a group "layerI" with float32
 * datasets named as PyTorch names them — weight [out, in], bias [out], and
 * for blocks gamma [out], beta [out] — and attributes kind ("block" or
 * "linear"), in_features, out_features and, for blocks, groups, eps and
 * negative_slope; and, when the network was trained on standardised
 * inputs, the group "input_norm" (input_norm.h). Files are written to a temporary of the writing process,
 * "<path>.<pid>-<n>.tmp", synced and renamed, so a crash never leaves a
 * broken file where a good one was.
 *
 * Where a path ends in ".safetensors", fn_weights_load, fn_weights_build
 * and fn_weights_input_norm read a safetensors file that fusenet exported
 * instead (safetensors.h), so `[model] init` takes either. */
#ifndef FUSENET_WEIGHTS_H
#define FUSENET_WEIGHTS_H

#include "fusenet/api.h"

#include "fusenet/input_norm.h"
#include "fusenet/loss_kind.h"
#include "fusenet/net.h"
#include "fusenet/provenance.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FN_WEIGHTS_FORMAT "fusenet-weights"
/* The newest version: 2 marks a file with the group input_norm, 3 one
 * with the group target_norm (input_norm or not), so a build that
 * predates either refuses the file instead of ignoring the group and
 * predicting from raw inputs or in standardised units; files without
 * either stay at 1. */
#define FN_WEIGHTS_VERSION 3

/* What a weights file holds besides the layers; every field may be
 * NULL (zero-initialise the struct and set what you have). */
typedef struct fn_weights_save_options {
    /* The input standardisation the network was trained with, as the group
     * `/input_norm` (input_norm.h; read back by fn_input_norm_load). */
    const fn_input_norm *norm;
    /* The target standardisation, as the group `/target_norm`
     * (target_norm.h). */
    const fn_input_norm *target;
    /* The run's provenance, as the group `/provenance` (provenance.h; read
     * back by fn_provenance_read). */
    const fn_provenance *provenance;
    const char *config_text; /* the run's config text; NULL: "" */
} fn_weights_save_options;

/* Writes every layer of net to path, with what options names (options
 * NULL: the layers alone). */
FN_API fn_status fn_weights_save(const char *path, const fn_net *net,
                                 const fn_weights_save_options *options);

/* Loads the values of a weights file into net, whose layers must match the
 * file's in kind, sizes and block settings. */
FN_API fn_status fn_weights_load(fn_net *net, const char *path);

/* Builds the network a weights file describes, for forward passes of
 * batches of up to max_batch rows, with its values: without gradients
 * (fn_net_create_forward_only), and its memory checked for that alone. Its input standardisation, when the
 * file has one, is read apart (fn_input_norm_load) and applied to the
 * inputs before the network (fn_loader_set_norm), as predict does. */
FN_API fn_status fn_weights_build(fn_net **net, fn_context *ctx, const char *path, int max_batch);

/* The input standardisation a weights file (fn_input_norm_load), a
 * checkpoint or an exported safetensors file holds; *norm NULL: none. */
FN_API fn_status fn_weights_input_norm(fn_input_norm **norm, fn_context *ctx, const char *path,
                                       int features);

/* The loss the network of a weights file was trained with: the [train]
 * loss of the run's resolved config (its provenance's, every --set
 * applied; in an older file, the config text it holds; the default loss
 * when it names none), from the loss registry, so a caller learns whether the network
 * predicts classes or values (fn_loss_kind_targets) without naming a loss.
 * FN_ERR_FORMAT for a file that is no weights file, and for a safetensors
 * export, which holds no config. */
FN_API fn_status fn_weights_loss(const char *path, const fn_loss_kind **kind);

#ifdef __cplusplus
}
#endif
#endif
