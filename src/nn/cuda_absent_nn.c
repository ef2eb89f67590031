/* cuda_absent_nn.c — the network layer's calls into kernels/ in a build
 * without CUDA (core/cuda_absent.h): the GPU halves of the block and the
 * linear layer, the losses and the loss tally. A layer takes its device
 * from its context, which cannot be a GPU's in such a build, so these
 * answer only for completeness; each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/layers/block/block_impl.h"
#include "nn/layers/block/block_products_cuda.h"
#include "nn/layers/dense/dense_impl.h"
#include "nn/layers/dropout/dropout_impl.h"
#include "nn/layers/linear/linear_impl.h"
#include "nn/loss_backends.h"
#include "nn/loss_tally_cuda.h"

static fn_status absent_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    (void)l, (void)x, (void)y;
    return fn_cuda_absent("a layer's forward on the GPU");
}

static fn_status absent_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    (void)l, (void)dy, (void)dx;
    return fn_cuda_absent("a layer's backward on the GPU");
}

/* What the host halves allocated is freed as on the CPU. */
static void destroy_block(fn_layer *l) { fn_block_cpu_ops.destroy(l); }
static void destroy_linear(fn_layer *l) { fn_linear_cpu_ops.destroy(l); }

const fn_layer_ops fn_block_cuda_ops = {
    .kind = "block", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_block,
};
const fn_layer_ops fn_residual_cuda_ops = {
    .kind = "residual", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_block,
};
static void destroy_dropout(fn_layer *l) { fn_dropout_cpu_ops.destroy(l); }
const fn_layer_ops fn_dropout_cuda_ops = {
    .kind = "dropout", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_dropout,
};
const fn_layer_ops fn_linear_cuda_ops = {
    .kind = "linear", .forward = absent_forward, .backward = absent_backward,
    .destroy = destroy_linear,
};

size_t fn_block_ws_layout(const fn_block *b, float *base, fn_block_ws *ws)
{
    (void)b, (void)base;
    *ws = (fn_block_ws){0};
    return 0;
}

fn_status fn_block_cuda_clear_tickets(fn_block *b)
{
    (void)b;
    return fn_cuda_absent("a block on the GPU");
}

fn_status fn_block_cuda_setup(fn_block *b)
{
    (void)b;
    return fn_cuda_absent("a block on the GPU");
}

size_t fn_block_ws_weight_floats(const fn_block *b)
{
    (void)b;
    return 0;
}

static fn_status absent_activate(fn_context *ctx, fn_activation act, float *y, const float *z,
                                 size_t n)
{
    (void)ctx, (void)act, (void)y, (void)z, (void)n;
    return fn_cuda_absent("an activation on the GPU");
}

static fn_status absent_derive(fn_context *ctx, fn_activation act, float *dz, const float *dy,
                               const float *z, size_t n)
{
    (void)ctx, (void)act, (void)dz, (void)dy, (void)z, (void)n;
    return fn_cuda_absent("an activation's derivative on the GPU");
}

const fn_dense_backend fn_dense_cuda_backend = {.activate = absent_activate,
                                                .derive = absent_derive};

fn_status fn_linear_cuda_setup(fn_linear *l)
{
    (void)l;
    return fn_cuda_absent("a linear layer on the GPU");
}

fn_status fn_cuda_mse_loss(fn_context *ctx, const fn_tensor *pred, const fn_tensor *target,
                           fn_tensor *loss, fn_tensor *dpred)
{
    (void)ctx, (void)pred, (void)target, (void)loss, (void)dpred;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_cross_entropy_loss(fn_context *ctx, const fn_tensor *logits,
                                     const int32_t *labels, fn_tensor *loss, fn_tensor *dlogits)
{
    (void)ctx, (void)logits, (void)labels, (void)loss, (void)dlogits;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_count_correct(fn_context *ctx, const fn_tensor *logits, const int32_t *labels,
                                int *correct)
{
    (void)ctx, (void)logits, (void)labels, (void)correct;
    return fn_cuda_absent("the accuracy on the GPU");
}

fn_status fn_cuda_cross_entropy_loss_read(fn_context *ctx, const fn_tensor *logits,
                                          const int32_t *labels, fn_tensor *loss,
                                          fn_tensor *dlogits, float *value, int *correct)
{
    (void)ctx, (void)logits, (void)labels, (void)loss, (void)dlogits, (void)value, (void)correct;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_loss_finish(fn_context *ctx, fn_tensor *loss, const fn_loss_partials *p)
{
    (void)ctx, (void)loss, (void)p;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_mse_partials(fn_context *ctx, const fn_tensor *pred, const float *pred_bias,
                               const fn_tensor *target, fn_tensor *dpred,
                               const fn_loss_tally_into *into, fn_loss_partials *p)
{
    (void)ctx, (void)pred, (void)pred_bias, (void)target, (void)dpred, (void)into, (void)p;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_cross_entropy_partials(fn_context *ctx, const fn_tensor *logits,
                                         const float *logits_bias, const int32_t *labels,
                                         fn_tensor *dlogits, const fn_loss_tally_into *into,
                                         fn_loss_partials *p)
{
    (void)ctx, (void)logits, (void)logits_bias, (void)labels, (void)dlogits, (void)into, (void)p;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_add_pred_bias(fn_context *ctx, const fn_tensor *pred, const float *bias)
{
    (void)ctx, (void)pred, (void)bias;
    return fn_cuda_absent("the loss on the GPU");
}

fn_status fn_cuda_tally_create(fn_cuda_tally **t, fn_context *ctx)
{
    (void)ctx;
    *t = NULL;
    return fn_cuda_absent("a loss tally on the GPU");
}

void fn_cuda_tally_destroy(fn_cuda_tally *t) { (void)t; }

fn_loss_tally_value *fn_cuda_tally_sums(fn_cuda_tally *t)
{
    (void)t;
    return NULL;
}

fn_status fn_cuda_tally_finish(fn_cuda_tally *t, fn_tensor *loss, const fn_loss_partials *p,
                               int rows)
{
    (void)t, (void)loss, (void)p, (void)rows;
    return fn_cuda_absent("a loss tally on the GPU");
}

void fn_cuda_tally_into(fn_cuda_tally *t, fn_tensor *loss, int rows, fn_loss_tally_into *into)
{
    (void)t, (void)loss, (void)rows;
    *into = (fn_loss_tally_into){0};
}

fn_status fn_cuda_tally_set(fn_cuda_tally *t, const fn_loss_tally_value *v)
{
    (void)t, (void)v;
    return fn_cuda_absent("a loss tally on the GPU");
}

fn_status fn_cuda_tally_post(fn_cuda_tally *t, int slot)
{
    (void)t, (void)slot;
    return fn_cuda_absent("a loss tally on the GPU");
}

fn_status fn_cuda_tally_arrived(fn_cuda_tally *t, int slot, int *arrived, fn_loss_tally_value *v)
{
    (void)t, (void)slot, (void)arrived, (void)v;
    return fn_cuda_absent("a loss tally on the GPU");
}

fn_status fn_cuda_tally_read(fn_cuda_tally *t, fn_loss_tally_value *v)
{
    (void)t, (void)v;
    return fn_cuda_absent("a loss tally on the GPU");
}
