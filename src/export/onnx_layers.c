/* onnx_layers.c — each layer kind as ONNX nodes of opset 17 (the rows of
 * export_kind.c), in fusenet's order of float32 operations.
 *
 * A block is Linear -> GroupNorm -> LeakyReLU -> x + x; a residual layer is
 * the block's nodes, then its input added to the doubled value (block_cpu.c
 * adds the skip after the x2). A relu layer is Gemm -> Relu; a gelu layer
 * is Gemm, then GELU in its exact form z (1 + erf(z / sqrt 2)) / 2 spelled
 * out (opset 17 has no Gelu), z times the float32 1/sqrt(2) as
 * dense_cpu.c computes it. Dropout, the identity outside training, is an
 * Identity node. ONNX's own
 * GroupNormalization (opset 18) scales per group, not per channel, so the
 * GroupNorm is spelled out: z [N, H] reshaped to [N, G, K]; the group's
 * mean and biased variance by two ReduceMeans (two passes, as the design's
 * formulas read); (z - mean) / sqrt(var + eps); back to [N, H]; times the
 * per-channel gamma, plus beta. -1 in the Reshapes keeps the batch
 * dimension free. */
#include <stdio.h>

#include "export/export_kind.h"
#include "fusenet/block.h"

enum { NAME_CAP = FN_EXPORT_NAME_CAP };

/* "<prefix>/<what>" into a caller's buffer. */
static const char *sub(char *buf, const char *prefix, const char *what)
{
    snprintf(buf, NAME_CAP, "%s/%s", prefix, what);
    return buf;
}

/* The layer's parameters as initializers; names[i] the i-th's. */
static fn_status params(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                        char names[][NAME_CAP])
{
    const fn_export_kind *k = NULL;
    FN_TRY(fn_export_kind_of(l, 0, &k));
    for (int i = 0; i < l->n_params; i++) {
        FN_TRY(fn_export_param_name(k, prefix, &l->params[i], names[i], NAME_CAP));
        FN_TRY(fn_onnx_param(g, names[i], &l->params[i]));
    }
    return FN_OK;
}

/* Gemm(x, weight, bias) with transB: x W^T + b, as torch.nn.Linear. */
static void gemm(fn_onnx_graph *g, const char *prefix, const char *in, const char *weight,
                 const char *bias, const char *out)
{
    char name[NAME_CAP];
    const char *inputs[3] = {in, weight, bias};
    const fn_onnx_attr trans_b = {.name = "transB", .type = FN_ONNX_INT, .i = 1};
    fn_onnx_node(g, "Gemm", sub(name, prefix, "Gemm"), inputs, 3, out, &trans_b, 1);
}

fn_status fn_onnx_linear(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                         const char *in, const char *out)
{
    char names[2][NAME_CAP];
    if (l->n_params != 2)
        return fn_fail(FN_ERR_INVALID, "%s (linear): %d parameters, expected weight and bias",
                       prefix, l->n_params);
    FN_TRY(params(g, l, prefix, names));
    gemm(g, prefix, in, names[0], names[1], out);
    return FN_OK;
}

/* A two-input node op(a, b) -> out; the node is named as its output,
 * which is unique in the graph. */
static void binary(fn_onnx_graph *g, const char *op, const char *a, const char *b,
                   const char *out)
{
    const char *inputs[2] = {a, b};
    fn_onnx_node(g, op, out, inputs, 2, out, NULL, 0);
}

/* The group's mean over its K channels, axis 2 of [N, G, K], kept. */
static void group_mean(fn_onnx_graph *g, const char *in, const char *out)
{
    static const int64_t axes[1] = {2};
    const fn_onnx_attr attrs[2] = {
        {.name = "axes", .type = FN_ONNX_INTS, .ints = axes, .n_ints = 1},
        {.name = "keepdims", .type = FN_ONNX_INT, .i = 1},
    };
    const char *inputs[1] = {in};
    fn_onnx_node(g, "ReduceMean", out, inputs, 1, out, attrs, 2);
}

static void unary(fn_onnx_graph *g, const char *op, const char *in, const char *out)
{
    const char *inputs[1] = {in};
    fn_onnx_node(g, op, out, inputs, 1, out, NULL, 0);
}

/* The block's GroupNorm from z [N, H] to zhat [N, H] (no gamma, beta). */
static void group_norm(fn_onnx_graph *g, const char *prefix, const fn_block_config *bc, int width,
                       const char *z, const char *zhat)
{
    char grouped_shape[NAME_CAP], flat_shape[NAME_CAP], eps[NAME_CAP];
    char grouped[NAME_CAP], mean[NAME_CAP], diff[NAME_CAP], square[NAME_CAP], var[NAME_CAP];
    char var_eps[NAME_CAP], sd[NAME_CAP], normed[NAME_CAP];
    const int64_t to_groups[3] = {-1, bc->groups, width / bc->groups}, to_flat[2] = {-1, width};
    fn_onnx_int64s(g, sub(grouped_shape, prefix, "grouped_shape"), to_groups, 3);
    fn_onnx_int64s(g, sub(flat_shape, prefix, "flat_shape"), to_flat, 2);
    fn_onnx_floats(g, sub(eps, prefix, "eps"), &bc->eps, 0, NULL);
    sub(grouped, prefix, "grouped");
    sub(mean, prefix, "mean");
    sub(diff, prefix, "centred");
    sub(square, prefix, "square");
    sub(var, prefix, "var");
    sub(var_eps, prefix, "var_eps");
    sub(sd, prefix, "sd");
    sub(normed, prefix, "normed");
    binary(g, "Reshape", z, grouped_shape, grouped);
    group_mean(g, grouped, mean);
    binary(g, "Sub", grouped, mean, diff);
    binary(g, "Mul", diff, diff, square);
    group_mean(g, square, var);
    binary(g, "Add", var, eps, var_eps);
    unary(g, "Sqrt", var_eps, sd);
    binary(g, "Div", diff, sd, normed);
    binary(g, "Reshape", normed, flat_shape, zhat);
}

/* The block's nodes from `in`; its last, x + x, writes `out`. */
static fn_status block_nodes(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                             const char *in, const char *out)
{
    fn_block_config bc;
    FN_TRY(fn_block_get_config(l, &bc));
    char names[4][NAME_CAP];
    if (l->n_params != 4)
        return fn_fail(FN_ERR_INVALID, "%s (block): %d parameters, expected weight, bias, gamma "
                       "and beta", prefix, l->n_params);
    FN_TRY(params(g, l, prefix, names));
    char z[NAME_CAP], zhat[NAME_CAP], scaled[NAME_CAP], u[NAME_CAP], a[NAME_CAP];
    sub(z, prefix, "z");
    sub(zhat, prefix, "zhat");
    sub(scaled, prefix, "scaled");
    sub(u, prefix, "u");
    sub(a, prefix, "a");
    gemm(g, prefix, in, names[0], names[1], z);
    group_norm(g, prefix, &bc, l->out_features, z, zhat);
    binary(g, "Mul", zhat, names[2], scaled);
    binary(g, "Add", scaled, names[3], u);
    const fn_onnx_attr alpha = {.name = "alpha", .type = FN_ONNX_FLOAT, .f = bc.negative_slope};
    const char *act_in[1] = {u};
    fn_onnx_node(g, "LeakyRelu", a, act_in, 1, a, &alpha, 1);
    binary(g, "Add", a, a, out); /* x + x, the block's x2 */
    return FN_OK;
}

fn_status fn_onnx_block(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                        const char *out)
{
    return block_nodes(g, l, prefix, in, out);
}

fn_status fn_onnx_residual(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                           const char *in, const char *out)
{
    char y[NAME_CAP];
    FN_TRY(block_nodes(g, l, prefix, in, sub(y, prefix, "block")));
    binary(g, "Add", y, in, out); /* y + x: the identity skip after the x2 */
    return FN_OK;
}

/* The dense layer's Gemm into z, named "<prefix>/z". */
static fn_status dense_gemm(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                            const char *in, char *z)
{
    char names[2][NAME_CAP];
    if (l->n_params != 2)
        return fn_fail(FN_ERR_INVALID, "%s (%s): %d parameters, expected weight and bias",
                       prefix, l->ops && l->ops->kind ? l->ops->kind : "?", l->n_params);
    FN_TRY(params(g, l, prefix, names));
    gemm(g, prefix, in, names[0], names[1], sub(z, prefix, "z"));
    return FN_OK;
}

fn_status fn_onnx_relu(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                       const char *out)
{
    char z[NAME_CAP];
    FN_TRY(dense_gemm(g, l, prefix, in, z));
    unary(g, "Relu", z, out);
    return FN_OK;
}

fn_status fn_onnx_gelu(fn_onnx_graph *g, const fn_layer *l, const char *prefix, const char *in,
                       const char *out)
{
    static const float inv_sqrt2 = 0.70710678118654752f, one = 1.0f, half = 0.5f;
    char z[NAME_CAP], c_inv_sqrt2[NAME_CAP], c_one[NAME_CAP], c_half[NAME_CAP];
    char scaled[NAME_CAP], erf[NAME_CAP], cdf2[NAME_CAP], zcdf2[NAME_CAP];
    FN_TRY(dense_gemm(g, l, prefix, in, z));
    fn_onnx_floats(g, sub(c_inv_sqrt2, prefix, "inv_sqrt2"), &inv_sqrt2, 0, NULL);
    fn_onnx_floats(g, sub(c_one, prefix, "one"), &one, 0, NULL);
    fn_onnx_floats(g, sub(c_half, prefix, "half"), &half, 0, NULL);
    binary(g, "Mul", z, c_inv_sqrt2, sub(scaled, prefix, "z_over_sqrt2"));
    unary(g, "Erf", scaled, sub(erf, prefix, "erf"));
    binary(g, "Add", erf, c_one, sub(cdf2, prefix, "one_plus_erf"));
    binary(g, "Mul", z, cdf2, sub(zcdf2, prefix, "z_one_plus_erf"));
    binary(g, "Mul", zcdf2, c_half, out); /* exact: a halving */
    return FN_OK;
}

fn_status fn_onnx_dropout(fn_onnx_graph *g, const fn_layer *l, const char *prefix,
                          const char *in, const char *out)
{
    (void)l;
    (void)prefix;
    unary(g, "Identity", in, out);
    return FN_OK;
}
