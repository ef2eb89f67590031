/* linear_cpu.c — the affine layer y = x W^T + b on the CPU, float32, with
 * OpenBLAS for the products and a double-accumulated column sum for db; in
 * a network built for inference (fn_layer.forward_only) forward is the
 * batch-invariant product of core/infer_product.h, so a row's outputs do
 * not depend on the batch it is predicted in. */
#include <cblas.h>
#include <stddef.h>

#include "core/infer_product.h"

#include "nn/layers/linear/linear_impl.h"
#include "nn/reduce_cpu.h"

/* y = x W^T + b: each row starts as b, then the product adds onto it. */
static fn_status linear_forward(fn_layer *layer, const fn_tensor *x, fn_tensor *y)
{
    fn_linear *l = (fn_linear *)layer;
    const int B = x->rows, in = layer->in_features, out = layer->out_features;
    const float *w = l->params[FN_LINEAR_WEIGHT].value.data; /* [out, in] */
    const float *bias = l->params[FN_LINEAR_BIAS].value.data; /* [out] */
    l->x = *x;
    if (layer->forward_only) {
        fn_infer_product(layer->ctx, y->data, x->data, w, bias, B, in, out);
        return FN_OK;
    }
    for (int n = 0; n < B; n++)
        for (int c = 0; c < out; c++)
            y->data[(size_t)n * out + (size_t)c] = bias[c];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, out, in, 1.0f, x->data, in, w, in,
                1.0f, y->data, out);
    return FN_OK;
}

/* dW = beta dW + dy^T x, db = beta db + sum_n dy (each parameter's
 * grad_beta, param.h), dx = dy W when dx is wanted. */
static fn_status linear_backward(fn_layer *layer, const fn_tensor *dy, fn_tensor *dx)
{
    fn_linear *l = (fn_linear *)layer;
    const int B = layer->batch, in = layer->in_features, out = layer->out_features;
    fn_param *w = &l->params[FN_LINEAR_WEIGHT], *b = &l->params[FN_LINEAR_BIAS];
    /* BLAS's beta 0 stores the product without reading C. */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, B, 1.0f, dy->data, out,
                l->x.data, in, w->grad_beta, w->grad.data, in);
    fn_cpu_column_sums(b->grad.data, b->grad_beta, dy->data, B, out);
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, in, out, 1.0f, dy->data, out,
                    w->value.data, in, 0.0f, dx->data, in);
    return FN_OK;
}

static void linear_destroy(fn_layer *layer) { fn_linear_release((fn_linear *)layer); }

const fn_layer_ops fn_linear_cpu_ops = {
    .kind = "linear",
    .forward = linear_forward,
    .backward = linear_backward,
    .destroy = linear_destroy,
};
