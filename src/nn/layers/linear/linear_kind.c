/* linear_kind.c — the linear layer as a layer kind (layer_kind.h): the
 * item "linear N"; it uses none of the [model] settings, and its
 * weights-file group has no attributes beyond kind and sizes. */
#include "fusenet/linear.h"
#include "nn/layers/linear/linear_impl.h"

static fn_status create(fn_layer **layer, fn_context *ctx, int in_features,
                        const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                        fn_rng *rng)
{
    return fn_linear_create_as(layer, ctx, in_features, spec->width, max_batch, rng,
                               hp->forward_only);
}

/* weight [out, in] and bias [out] (linear.c). */
static const char *const param_names[] = {"weight", "bias", NULL};

static double param_floats(int in_features, const fn_layer_spec *spec)
{
    return (double)spec->width * ((double)in_features + 1.0);
}

const fn_layer_kind fn_linear_kind = {
    .name = "linear",
    .usage = "linear N",
    .parse = fn_layer_parse_width,
    .create = create,
    .buffer_bytes = fn_linear_buffer_bytes,
    .param_floats = param_floats,
    .param_names = param_names,
};
