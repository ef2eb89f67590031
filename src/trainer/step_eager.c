/* step_eager.c — the eager step, one of the trainer's step strategies
 * (trainer_impl.h): forward, the loss read at once (a non-finite loss
 * stops the run at its step, before the update), then the optimiser's
 * fused path where it has one (plain SGD on the GPU: each block's update
 * folded into its backward) and no clipping needs the gradients first,
 * else backward, clipping and a step; with [run] layer_updates, without
 * clipping, where the optimiser updates in parts (step_choice.c), the
 * step's scalars first, then each layer's update right after its backward. The CPU's step, plain
 * SGD's fused step on the GPU, and any step whose optimiser cannot split
 * its update. */
#include <math.h>

#include "trainer/trainer_impl.h"

static fn_status backward_and_update(fn_trainer *t, const fn_tensor *dy)
{
    if (fn_optimizer_can_backward_step(t->opt) && !t->clip)
        return fn_optimizer_backward_step(t->opt, t->net, dy);
    if (t->layer_updates) { /* the loss is finite: each layer's update beside backward */
        FN_TRY(fn_optimizer_prepare(t->opt));
        return fn_trainer_backward_update(t, dy, NULL);
    }
    FN_TRY(fn_trainer_gradients(t, dy));
    return fn_optimizer_step(t->opt);
}

static fn_status eager_step(fn_trainer *t, const fn_batch *b, float *loss)
{
    fn_tensor y;
    FN_TRY(fn_net_forward(t->net, &b->x, &y));
    fn_tensor dy = fn_tensor_rows(&t->dpred, 0, b->rows);
    int correct = 0;
    FN_TRY(fn_trainer_batch_loss(t, b, &y, &dy, loss, &correct));
    if (!isfinite(*loss))
        return fn_trainer_stop_nonfinite(t, b, &dy, *loss);
    FN_TRY(backward_and_update(t, &dy));
    fn_train_state_add_step(&t->state, (double)*loss, b->rows, correct);
    return FN_OK;
}

static fn_status eager_begin(fn_trainer *t)
{
    (void)t;
    return FN_OK;
}

static fn_status eager_drain(fn_trainer *t)
{
    (void)t;
    return FN_OK;
}

static void eager_release(fn_trainer *t) { (void)t; }

const fn_step_ops fn_step_eager = {
    .name = "eager",
    .begin = eager_begin,
    .step = eager_step,
    .drain = eager_drain,
    .release = eager_release,
};
