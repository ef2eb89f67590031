/* dropout_kind.c — dropout as a layer kind (layer_kind.h): the item
 * "dropout P", 0 <= P < 1, of its input's width; it uses none of the
 * [model] settings, and its weights-file group records P as the attribute
 * p, which a network read from a file keeps (for prediction it never drops
 * anything; an export writes p). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusenet/dropout.h"

enum { ATTR_P, N_ATTRS };

static const fn_layer_attr attrs[N_ATTRS] = {
    [ATTR_P] = {"p", FN_LAYER_ATTR_DOUBLE, 0},
};

static fn_status parse(const char *args, fn_layer_spec *spec)
{
    char *end = NULL;
    errno = 0;
    const double p = strtod(args, &end);
    if (end == args || *end != '\0' || errno == ERANGE || !(p >= 0.0 && p < 1.0))
        return fn_fail(FN_ERR_INVALID,
                       "dropout probability '%s' is not a number from 0 to below 1 "
                       "(the chance of zeroing an element in training: 0 <= P < 1)",
                       args);
    spec->width = 0; /* its input's */
    spec->value = p;
    return FN_OK;
}

static int format(const fn_layer_spec *spec, char *buf, size_t cap)
{
    return snprintf(buf, cap, "dropout %.9g", spec->value);
}

static fn_status create(fn_layer **layer, fn_context *ctx, int in_features,
                        const fn_layer_spec *spec, const fn_layer_hparams *hp, int max_batch,
                        fn_rng *rng)
{
    if (spec->width != 0 && spec->width != in_features)
        return fn_fail(FN_ERR_INVALID, "dropout of width %d after inputs of %d columns",
                       spec->width, in_features);
    return fn_dropout_create(layer, ctx, in_features, spec->value, max_batch, rng,
                             hp->forward_only);
}

static fn_status get_attrs(const fn_layer *l, fn_layer_attr_value *values)
{
    return fn_dropout_get_p(l, &values[ATTR_P].d);
}

static fn_status set_attrs(const fn_layer_attr_value *values, int in_features, int out_features,
                           fn_layer_hparams *hp)
{
    const double p = values[ATTR_P].d;
    if (in_features != out_features || !(p >= 0.0 && p < 1.0))
        return fn_fail(FN_ERR_FORMAT, "dropout of sizes in %d, out %d, p %g is not valid",
                       in_features, out_features, p);
    *hp = (fn_layer_hparams){0};
    return FN_OK;
}

static double spec_value(const fn_layer_attr_value *values)
{
    return values[ATTR_P].d;
}

const fn_layer_kind fn_dropout_kind = {
    .name = "dropout",
    .usage = "dropout P",
    .parse = parse,
    .format = format,
    .create = create,
    .attrs = attrs,
    .n_attrs = N_ATTRS,
    .get_attrs = get_attrs,
    .set_attrs = set_attrs,
    .spec_value = spec_value,
    .buffer_bytes = fn_dropout_buffer_bytes,
};
