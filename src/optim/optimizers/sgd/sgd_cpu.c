/* sgd_cpu.c — SGD's CPU backend: one tensor's update, in float, in the
 * order torch.optim.SGD's for-each loop computes it, so a run can be
 * compared with PyTorch step by step; pieces of it on the context's
 * threads. Arguments were validated by optim/optimizers/sgd/sgd.c. No fused backward: on
 * the CPU it would save nothing. */
#include <stddef.h>

#include "core/device_impl.h"
#include "core/workers.h"
#include "optim/optimizers/sgd/sgd_backends.h"

/* The update's unit of work, and the least a thread is woken for. */
enum { UPDATE_PIECE = 4096, MIN_PIECES_PER_PART = 8 };

/* One tensor's step: its scalars, read once so the loops below carry no
 * branch (each select is between two values both computed, which
 * vectorises), and its arrays. */
typedef struct sgd_job {
    float lr, mu, wd, keep; /* keep = 1 - dampening */
    int nesterov, first_step;
    int folded;          /* buf is already mu buf + g (update_folded); dtheta unread */
    float *theta;        /* [n] */
    const float *dtheta; /* [n] */
    float *buf;          /* [n], NULL without momentum */
} sgd_job;

/* theta -= lr (g + wd theta), without momentum, for elements [i0, i1). */
static void update_plain(float *restrict theta, const float *restrict dtheta, size_t i0,
                         size_t i1, const sgd_job *s)
{
    const float lr = s->lr, wd = s->wd;
    for (size_t i = i0; i < i1; i++) {
        const float g = wd != 0.0f ? dtheta[i] + wd * theta[i] : dtheta[i];
        theta[i] = theta[i] - lr * g;
    }
}

/* torch: buf.mul_(mu).add_(g, alpha=1-dampening) (buf = g on the first
 * step), then theta -= lr (nesterov ? g + mu buf : buf). */
static void update_momentum(float *restrict theta, const float *restrict dtheta,
                            float *restrict buf, size_t i0, size_t i1, const sgd_job *s)
{
    const float lr = s->lr, mu = s->mu, wd = s->wd, keep = s->keep;
    const int nesterov = s->nesterov, first_step = s->first_step;
    for (size_t i = i0; i < i1; i++) {
        const float g = wd != 0.0f ? dtheta[i] + wd * theta[i] : dtheta[i];
        const float b = first_step ? g : mu * buf[i] + keep * g;
        buf[i] = b;
        theta[i] = theta[i] - lr * (nesterov ? g + mu * b : b);
    }
}

/* Momentum folded into backward, which left buf = mu buf + g: buf += wd
 * theta, theta -= lr buf; buf is written only with weight decay. */
static void update_folded(float *restrict theta, float *restrict buf, size_t i0, size_t i1,
                          const sgd_job *s)
{
    const float lr = s->lr, wd = s->wd;
    if (wd == 0.0f) {
        for (size_t i = i0; i < i1; i++)
            theta[i] = theta[i] - lr * buf[i];
        return;
    }
    for (size_t i = i0; i < i1; i++) {
        const float b = buf[i] + wd * theta[i];
        buf[i] = b;
        theta[i] = theta[i] - lr * b;
    }
}

/* Elements [i0, i1) by the job's kind of update. */
static void update_range(const sgd_job *s, size_t i0, size_t i1)
{
    if (s->folded)
        update_folded(s->theta, s->buf, i0, i1, s);
    else if (s->buf)
        update_momentum(s->theta, s->dtheta, s->buf, i0, i1, s);
    else
        update_plain(s->theta, s->dtheta, i0, i1, s);
}

/* Pieces [p0, p1) of UPDATE_PIECE elements. */
static void update_pieces(void *arg, int p0, int p1)
{
    const sgd_job *s = arg;
    update_range(s, (size_t)p0 * UPDATE_PIECE, (size_t)p1 * UPDATE_PIECE);
}

/* Elementwise, so the pieces run on the context's threads with the same
 * bits on any number of them; the tail past the last whole piece on the
 * caller. */
static void run_job(fn_context *ctx, const sgd_job *s, size_t n)
{
    const size_t pieces = n / UPDATE_PIECE;
    fn_workers_for(ctx->workers, (int)pieces, MIN_PIECES_PER_PART, update_pieces, (void *)s);
    update_range(s, pieces * UPDATE_PIECE, n);
}

static fn_status cpu_update(fn_context *ctx, fn_tensor *value, const fn_tensor *grad,
                           fn_tensor *momentum_buf, const fn_sgd_config *cfg, int first_step)
{
    const sgd_job s = {
        .lr = cfg->lr,
        .mu = cfg->momentum,
        .wd = cfg->weight_decay,
        .keep = 1.0f - cfg->dampening,
        .nesterov = cfg->nesterov,
        .first_step = first_step,
        .theta = value->data,
        .dtheta = grad->data,
        .buf = cfg->momentum != 0.0f ? momentum_buf->data : NULL,
    };
    run_job(ctx, &s, fn_tensor_count(value));
    return FN_OK;
}

static fn_status cpu_update_folded(fn_context *ctx, fn_tensor *value, fn_tensor *momentum_buf,
                                   const fn_sgd_config *cfg)
{
    const sgd_job s = {
        .lr = cfg->lr,
        .wd = cfg->weight_decay,
        .folded = 1,
        .theta = value->data,
        .buf = momentum_buf->data,
    };
    run_job(ctx, &s, fn_tensor_count(value));
    return FN_OK;
}

const fn_sgd_backend fn_sgd_cpu_backend = {
    .device = FN_CPU,
    .update = cpu_update,
    .update_folded = cpu_update_folded,
};
