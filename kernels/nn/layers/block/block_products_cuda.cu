/* block_products_cuda.cu — the fused block's three products on the GPU and
 * the workspace they share with its normalisation kernels: one scratch
 * tensor carved into the column partial sums and, in the TF32 modes, the
 * transposes and TF32 splits of the operands, in bf16 mode their bfloat16
 * copies (block_products_cuda.h). The products run through gemm_cuda.h in
 * the context's math mode; in a network built for inference
 * (fn_layer.forward_only) the forward product is the batch-invariant one of
 * infer_product_cuda.h instead. */
#include "nn/layers/block/block_products_cuda.h"
#include "core/cuda_runtime.h"
#include "core/gemm_cuda.h"
#include "core/infer_product_cuda.h"
#include "core/launch_cuda.cuh"

static float *carve(float *base, size_t *at, size_t n)
{
    float *p = base ? base + *at : NULL;
    *at += fn_pad_floats(n);
    return p;
}

extern "C" size_t fn_block_ws_layout(const fn_block *b, float *base, fn_block_ws *ws)
{
    const fn_layer *l = &b->base;
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(l->ctx));
    const size_t nx = (size_t)l->max_batch * (size_t)l->in_features;
    const size_t nw = (size_t)l->out_features * (size_t)l->in_features;
    const size_t nz = (size_t)l->max_batch * (size_t)l->out_features;
    size_t at = 0;
    *ws = fn_block_ws{};
    ws->partials =
        carve(base, &at, (size_t)fn_row_chunks(l->max_batch) * 3 * (size_t)l->out_features);
    /* A tile holds at least one column on either path of the backward. */
    ws->tickets = reinterpret_cast<int *>(carve(base, &at, (size_t)l->out_features));
    if (!p->bf16_operands && !p->transposed_dweight)
        return at;
    if (p->bf16_operands) {
        ws->x_h = (fn_bf16 *)carve(base, &at, fn_bf16_floats(nx));
        ws->w_h = (fn_bf16 *)carve(base, &at, fn_bf16_floats(nw));
        ws->z_h = (fn_bf16 *)carve(base, &at, fn_bf16_floats(nz));
        ws->dz_h = (fn_bf16 *)carve(base, &at, fn_bf16_floats(nz));
        return at;
    }
    ws->dzt = carve(base, &at, nz);
    ws->xt = carve(base, &at, nx);
    if (!p->split)
        return at;
    ws->dzt_small = carve(base, &at, nz);
    ws->xt_small = carve(base, &at, nx);
    ws->x_big = carve(base, &at, nx);
    ws->x_small = carve(base, &at, nx);
    ws->w_big = carve(base, &at, nw);
    ws->w_small = carve(base, &at, nw);
    ws->dz_big = carve(base, &at, nz);
    ws->dz_small = carve(base, &at, nz);
    return at;
}

extern "C" size_t fn_block_ws_weight_floats(const fn_block *b)
{
    const fn_layer *l = &b->base;
    if (!fn_math_policy_of(fn_context_math(l->ctx))->bf16_operands)
        return 0;
    return fn_pad_floats(fn_bf16_floats((size_t)l->out_features * (size_t)l->in_features));
}

extern "C" fn_status fn_block_cuda_forward_product(fn_block *b, const fn_tensor *x)
{
    fn_layer *l = &b->base;
    const int N = x->rows, in = l->in_features, C = l->out_features;
    const fn_param *weight = &b->params[FN_BLOCK_WEIGHT];
    const float *w = weight->value.data;
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    if (l->forward_only) {
        /* z (bf16: z_h) from x, or in bf16 from x_h where the layer before
         * wrote the input there; w rounded as it is read. */
        const bool x_h = !x->data;
        return fn_cuda_infer_product(l->ctx, ws.z_h ? (void *)ws.z_h : (void *)b->z.data,
                                     ws.z_h != NULL, x_h ? (const void *)ws.x_h : x->data, x_h,
                                     w, NULL, N, in, C);
    }
    if (ws.x_h) {
        /* w_h is the weight's copy: kept current by its writers, or made here;
         * x_h holds the input already where x has no data (the layer before
         * wrote it there: layer.h, bf16_input). */
        const size_t nw = fn_param_bf16_kept(weight) ? 0 : (size_t)C * in;
        if (x->data)
            FN_TRY(fn_cuda_to_bf16(l->ctx, ws.x_h, x->data, (size_t)N * in, ws.w_h, w, nw));
        else if (nw > 0)
            FN_TRY(fn_cuda_to_bf16(l->ctx, ws.w_h, w, nw, NULL, NULL, 0));
        return fn_cuda_gemm_bf16(l->ctx, 1, 0, C, N, in, 1.0f, ws.w_h, in, ws.x_h, in, 0.0f,
                                 ws.z_h, 1, C);
    }
    if (ws.x_big)
        FN_TRY(fn_cuda_split_tf32(l->ctx, ws.x_big, ws.x_small, x->data, (size_t)N * in, ws.w_big,
                                  ws.w_small, w, (size_t)C * in));
    /* Row-major z [N, C] = x w^T is column-major z^T [C, N] = (w^T)^T x^T. */
    return fn_cuda_gemm_split(l->ctx, 1, 0, C, N, in, 1.0f, ws.w_big ? ws.w_big : w, ws.w_small,
                              in, ws.x_big ? ws.x_big : x->data, ws.x_small, in, 0.0f, b->z.data,
                              C);
}

/* dW (scaled by alpha, into dw_out by beta: cuBLAS's beta 0 never reads
 * dw_out) in the context's math mode, as
 * column-major dW^T [in, C] = x^T dz: in fp32 with x and dz as stored (x^T
 * op N, dz op T); in bf16 the same with the forward's x_h and dz_h as the
 * normalisation's backward wrote it, accumulated in fp32; in the TF32 modes
 * with their transposes (op T, op N), made here. */
static fn_status dweight(fn_block *b, const fn_block_ws *ws, void *dw_out, int dw_bf16,
                         float alpha, float beta)
{
    fn_layer *l = &b->base;
    const int N = l->batch, in = l->in_features, C = l->out_features;
    const fn_math_policy *p = fn_math_policy_of(fn_context_math(l->ctx));
    if (p->bf16_operands)
        return fn_cuda_gemm_bf16(l->ctx, 0, 1, in, C, N, alpha, ws->x_h, in, ws->dz_h, C, beta,
                                 dw_out, dw_bf16, in);
    if (dw_bf16)
        return fn_fail(FN_ERR_INVALID, "block [%d x %d]: a bfloat16 weight gradient needs bf16 "
                       "math, not %s", C, in, fn_math_name(fn_context_math(l->ctx)));
    float *dw = static_cast<float *>(dw_out);
    if (!p->transposed_dweight)
        return fn_cuda_gemm_split(l->ctx, 0, 1, in, C, N, alpha, b->x.data, NULL, in,
                                  b->dz.data, NULL, C, beta, dw, in);
    FN_TRY(fn_cuda_transpose(l->ctx, ws->dzt, ws->dzt_small, b->dz.data, N, C));
    FN_TRY(fn_cuda_transpose(l->ctx, ws->xt, ws->xt_small, b->x.data, N, in));
    return fn_cuda_gemm_split(l->ctx, 1, 0, in, C, N, alpha, ws->xt, ws->xt_small, N, ws->dzt,
                              ws->dzt_small, N, beta, dw, in);
}

/* dx = dz W: column-major dx^T = w^T dz^T, both as stored; W as the
 * forward left it (bf16 mode: its w_h; tf32x3: its split). A residual
 * block's dx already holds dy (its normalisation's backward wrote it):
 * the product adds onto it (beta = 1). */
static fn_status dinput(fn_block *b, const fn_block_ws *ws, fn_tensor *dx)
{
    fn_layer *l = &b->base;
    const int N = l->batch, in = l->in_features, C = l->out_features;
    const float beta = b->cfg.residual ? 1.0f : 0.0f;
    if (ws->w_h)
        return fn_cuda_gemm_bf16(l->ctx, 0, 0, in, N, C, 1.0f, ws->w_h, in, ws->dz_h, C, beta,
                                 dx->data, 0, in);
    const float *w = ws->w_big ? ws->w_big : b->params[FN_BLOCK_WEIGHT].value.data;
    return fn_cuda_gemm_split(l->ctx, 0, 0, in, N, C, 1.0f, w, ws->w_small, in,
                              ws->dz_big ? ws->dz_big : b->dz.data, ws->dz_small, C, beta,
                              dx->data, in);
}

/* dW on the context's side stream, beside dx on the main one: the two
 * read the same dz and write different outputs, so neither waits for the
 * other (at a batch of 256 and 512 features, each product leaves most of
 * the GPU idle). Not when dW is added into the W that dx reads (plain SGD
 * folded into the product, with dx reading W itself): then dx first. */
extern "C" fn_status fn_block_cuda_backward_products(fn_block *b, fn_tensor *dx, void *dw_out,
                                                     int dw_bf16, float alpha, float beta)
{
    fn_layer *l = &b->base;
    const int N = l->batch, C = l->out_features;
    fn_block_ws ws;
    fn_block_ws_layout(b, b->scratch.data, &ws);
    if (fn_math_policy_of(fn_context_math(l->ctx))->split) /* dz's split, which both products read */
        FN_TRY(fn_cuda_split_tf32(l->ctx, ws.dz_big, ws.dz_small, b->dz.data, (size_t)N * C, NULL,
                                  NULL, NULL, 0));
    const bool dx_reads_dw_out =
        !ws.w_h && !ws.w_big && dw_out == b->params[FN_BLOCK_WEIGHT].value.data;
    if (!dx)
        return dweight(b, &ws, dw_out, dw_bf16, alpha, beta);
    if (dx_reads_dw_out) {
        FN_TRY(dinput(b, &ws, dx));
        return dweight(b, &ws, dw_out, dw_bf16, alpha, beta);
    }
    FN_TRY(fn_cuda_side_begin(l->ctx));
    fn_status st = dweight(b, &ws, dw_out, dw_bf16, alpha, beta);
    fn_cuda_side_end(l->ctx);
    if (st == FN_OK)
        st = dinput(b, &ws, dx);
    /* Joined on failure too: a capture must not end with the side stream
     * forked, and the main stream must not run ahead of it. */
    const fn_status joined = fn_cuda_join(l->ctx);
    return st != FN_OK ? st : joined;
}
