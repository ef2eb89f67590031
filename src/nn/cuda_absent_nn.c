/* cuda_absent_nn.c — the network room's own calls into kernels/nn/ in a
 * build without CUDA (core/cuda_absent.h): the losses of loss_cpu.c's GPU
 * half (kernels/nn/loss_cuda.cu), the loss tally, and the forward and
 * backward every layer kind's stand-in ops table takes
 * (nn/cuda_absent_layer.h). Each kind's stand-ins sit in its own folder
 * (layers/block/cuda_absent_block.c, ...). Nothing on
 * a GPU can be asked for in such a build, so these answer only for
 * completeness; each fails naming the build option. */
#include "core/cuda_absent.h"
#include "nn/cuda_absent_layer.h"
#include "nn/loss_backends.h"
#include "nn/loss_tally_cuda.h"

fn_status fn_layer_absent_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    (void)l, (void)x, (void)y;
    return fn_cuda_absent("a layer's forward on the GPU");
}

fn_status fn_layer_absent_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    (void)l, (void)dy, (void)dx;
    return fn_cuda_absent("a layer's backward on the GPU");
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
