/* residual_kind.c — the block with its identity skip as a layer kind
 * (layer_kind.h): the item "residual N", y = x + block(x), whose width N
 * must equal its input's (fn_block_create says so, naming both). It takes
 * the block's [model] settings and weights-file attributes (groups, eps,
 * negative_slope) through the block kind's hooks (block_impl.h). */
#include "nn/layers/block/block_impl.h"

/* The message fn_block_create gives, before anything is built. */
static fn_status check_input(const fn_layer_spec *spec, int in_features)
{
    if (spec->width == in_features)
        return FN_OK;
    return fn_fail(FN_ERR_INVALID,
                   "residual %d takes inputs of %d columns: a residual layer adds its input to "
                   "its output, so its width must equal its input's (the width of the layer "
                   "before it, or the data's columns for the first layer)",
                   spec->width, in_features);
}

static fn_status create(fn_layer **layer, fn_context *ctx, int in_features,
                        const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                        fn_rng *rng)
{
    fn_block_config bc = fn_block_kind_config(in_features, spec, hp);
    bc.residual = 1;
    return fn_block_create(layer, ctx, &bc, max_batch, rng);
}

const fn_layer_kind fn_residual_kind = {
    .name = "residual",
    .usage = "residual N",
    .parse = fn_layer_parse_width,
    .check = fn_block_kind_check,
    .check_input = check_input,
    .create = create,
    .attrs = fn_block_kind_attrs,
    .n_attrs = FN_BLOCK_KIND_N_ATTRS,
    .get_attrs = fn_block_kind_get_attrs,
    .set_attrs = fn_block_kind_set_attrs,
    .buffer_bytes = fn_block_buffer_bytes,
    .param_floats = fn_block_kind_param_floats,
    .param_names = fn_block_kind_param_names,
    .row_floats = fn_block_kind_row_floats,
    .weight_copy_bytes = fn_block_weight_copy_bytes,
    .bf16_output = 1, /* its input stays float: its skip adds it */
};
