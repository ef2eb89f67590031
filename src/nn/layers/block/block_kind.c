/* block_kind.c — the block as a layer kind (layer_kind.h): the item
 * "block N", created with [model] groups, eps and negative_slope, which its
 * weights-file group records as the attributes groups, eps and
 * negative_slope. The residual kind (residual_kind.c) shares these hooks
 * (block_impl.h). */
#include "nn/layers/block/block_impl.h"

enum { ATTR_GROUPS, ATTR_EPS, ATTR_SLOPE, N_ATTRS };
_Static_assert((int)N_ATTRS == (int)FN_BLOCK_KIND_N_ATTRS, "block_impl.h counts the attributes");

const fn_layer_attr fn_block_kind_attrs[FN_BLOCK_KIND_N_ATTRS] = {
    [ATTR_GROUPS] = {"groups", FN_LAYER_ATTR_INT, 1},
    [ATTR_EPS] = {"eps", FN_LAYER_ATTR_DOUBLE, 0},
    [ATTR_SLOPE] = {"negative_slope", FN_LAYER_ATTR_DOUBLE, 0},
};

fn_status fn_block_kind_check(const fn_layer_spec *spec, const fn_layer_hparams *hp)
{
    if (hp->groups < 1 || spec->width % hp->groups != 0)
        return fn_fail(FN_ERR_INVALID, "groups %d does not divide the width %d", hp->groups,
                       spec->width);
    return FN_OK;
}

fn_block_config fn_block_kind_config(int in_features, const fn_layer_spec *spec,
                                     const fn_layer_hparams *hp)
{
    fn_block_config bc = fn_block_config_default(in_features, spec->width, hp->groups);
    bc.eps = hp->eps;
    bc.negative_slope = hp->negative_slope;
    bc.forward_only = hp->forward_only;
    return bc;
}

static fn_status create(fn_layer **layer, fn_context *ctx, int in_features,
                        const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                        fn_rng *rng)
{
    const fn_block_config bc = fn_block_kind_config(in_features, spec, hp);
    return fn_block_create(layer, ctx, &bc, max_batch, rng);
}

fn_status fn_block_kind_get_attrs(const fn_layer *l, fn_layer_attr_value *values)
{
    fn_block_config bc;
    FN_TRY(fn_block_get_config(l, &bc));
    values[ATTR_GROUPS].i = bc.groups;
    values[ATTR_EPS].d = (double)bc.eps;
    values[ATTR_SLOPE].d = (double)bc.negative_slope;
    return FN_OK;
}

/* What could not be allocated is refused here, and eps and the slope out
 * of [model]'s ranges (a file's 1e30 slope would overflow every negative
 * output); create checks the rest (groups dividing the width) with its
 * own messages. */
fn_status fn_block_kind_set_attrs(const fn_layer_attr_value *values, int in_features,
                                  int out_features, fn_layer_hparams *hp)
{
    const long long groups = values[ATTR_GROUPS].i;
    if (groups < 1 || groups > out_features)
        return fn_fail(FN_ERR_FORMAT, "sizes in %d, out %d, groups %lld are not valid",
                       in_features, out_features, groups);
    const double eps = values[ATTR_EPS].d, slope = values[ATTR_SLOPE].d;
    if (!(eps > 0.0 && eps <= 1.0))
        return fn_fail(FN_ERR_FORMAT, "eps %g is out of range: [model] eps takes (0, 1]", eps);
    if (!(slope >= 0.0 && slope <= 1e6))
        return fn_fail(FN_ERR_FORMAT, "negative_slope %g is out of range: [model] "
                       "negative_slope takes 0 to 1e6", slope);
    *hp = (fn_layer_hparams){.groups = (int)groups,
                             .eps = (float)values[ATTR_EPS].d,
                             .negative_slope = (float)values[ATTR_SLOPE].d};
    return FN_OK;
}

const char *const fn_block_kind_param_names[] = {"weight", "bias", "gamma", "beta", NULL};

/* weight [out, in], bias, gamma and beta [out] (block.c's alloc_params). */
double fn_block_kind_param_floats(int in_features, const fn_layer_spec *spec)
{
    return (double)spec->width * ((double)in_features + 3.0);
}

/* z and dz [rows, out] (no dz forward only), mean and rstd [rows, groups]
 * (block.c's alloc_caches). */
double fn_block_kind_row_floats(const fn_layer_spec *spec, const fn_layer_hparams *hp)
{
    return (hp->forward_only ? 1.0 : 2.0) * spec->width + 2.0 * (hp->groups > 0 ? hp->groups : 1);
}

const fn_layer_kind fn_block_kind = {
    .name = "block",
    .usage = "block N",
    .bounded_outputs = 1,
    .parse = fn_layer_parse_width,
    .check = fn_block_kind_check,
    .create = create,
    .attrs = fn_block_kind_attrs,
    .n_attrs = N_ATTRS,
    .get_attrs = fn_block_kind_get_attrs,
    .set_attrs = fn_block_kind_set_attrs,
    .buffer_bytes = fn_block_buffer_bytes,
    .param_floats = fn_block_kind_param_floats,
    .param_names = fn_block_kind_param_names,
    .row_floats = fn_block_kind_row_floats,
    .weight_copy_bytes = fn_block_weight_copy_bytes,
    .bf16_output = 1,
    .bf16_input = 1,
};
