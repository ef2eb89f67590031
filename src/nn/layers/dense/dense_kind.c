/* dense_kind.c — the dense layers as layer kinds (layer_kind.h): the items
 * "relu N" and "gelu N", a linear layer of width N followed by the
 * activation; they use none of the [model] settings, and their
 * weights-file groups have no attributes beyond kind and sizes. */
#include "fusenet/dense.h"

static fn_status create_relu(fn_layer **layer, fn_context *ctx, int in_features,
                             const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                             fn_rng *rng)
{
    return fn_dense_create(layer, ctx, FN_ACTIVATION_RELU, in_features, spec->width, max_batch,
                           rng, hp->forward_only);
}

static fn_status create_gelu(fn_layer **layer, fn_context *ctx, int in_features,
                             const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                             fn_rng *rng)
{
    return fn_dense_create(layer, ctx, FN_ACTIVATION_GELU, in_features, spec->width, max_batch,
                           rng, hp->forward_only);
}

/* weight [out, in] and bias [out] (linear.c). */
static const char *const param_names[] = {"weight", "bias", NULL};

static double param_floats(int in_features, const fn_layer_spec *spec)
{
    return (double)spec->width * ((double)in_features + 1.0);
}

/* z and dz [rows, out] (dense.c); none forward only (y holds z). */
static double row_floats(const fn_layer_spec *spec, const fn_layer_hparams *hp)
{
    return hp->forward_only ? 0.0 : 2.0 * spec->width;
}

const fn_layer_kind fn_relu_kind = {
    .name = "relu",
    .usage = "relu N",
    .parse = fn_layer_parse_width,
    .create = create_relu,
    .buffer_bytes = fn_dense_buffer_bytes,
    .param_floats = param_floats,
    .param_names = param_names,
    .row_floats = row_floats,
};

const fn_layer_kind fn_gelu_kind = {
    .name = "gelu",
    .usage = "gelu N",
    .parse = fn_layer_parse_width,
    .create = create_gelu,
    .buffer_bytes = fn_dense_buffer_bytes,
    .param_floats = param_floats,
    .param_names = param_names,
    .row_floats = row_floats,
};
