/* step_choice.c — the step strategy of a run (trainer_impl.h), chosen
 * once when it is set up:
 *   data-parallel  over the ranks of an MPI world (even one rank): it
 *                  agrees on the loss with the other ranks every step
 *                  anyway (step_dist.c);
 *   eager          the CPU; an optimiser without a split step; plain SGD
 *                  on the GPU without clipping, whose update is folded
 *                  into the backward pass (sgd_fused.h), the fastest step
 *                  at large sizes: the weights change before the loss is
 *                  known and the update's lr is a launch argument
 *                  (step_eager.c);
 *   graph          the GPU's deferred step replayed as CUDA graphs
 *                  ([run] cuda_graphs, step_graph.c);
 *   deferred       the GPU's otherwise (step_deferred.c).
 * Test builds may keep the GPU eager, or defer on the CPU with copies of
 * the loss that arrive late on purpose (FN_TEST_DEFER_LAG).
 *
 * In one process without clipping nothing but the optimiser reads the
 * gradients, so the optimiser may fold its state into backward
 * (fn_optimizer_fold: SGD's momentum buffer as the gradient, backward
 * computing mu buf + g); every strategy above runs the same calls, only
 * the beta backward uses and the update kernel change. Not over ranks
 * (their sums need plain gradients) nor with clipping (it needs their
 * norm). */
#include <math.h>

#include "core/test_hooks.h"
#include "trainer/trainer_impl.h"

/* Whether to defer, and the tally's lag when it does (-1: eager). */
static int defer_lag(const fn_trainer *t)
{
    if (t->dist || !fn_optimizer_can_split(t->opt))
        return -1;
    if (t->opt->ops->backward_step && !t->clip)
        return -1;
    const int hook = fn_test_defer_lag();
    const int gpu = fn_context_device(t->ctx) == FN_CUDA;
    if (gpu ? hook == 0 : hook <= 0)
        return -1;
    return gpu ? 0 : hook;
}

fn_status fn_trainer_choose_step(fn_trainer *t)
{
    t->last_loss = NAN;
    if (!t->dist && !t->clip) {
        int folded = 0;
        FN_TRY(fn_optimizer_fold(t->opt, &folded));
    }
    if (t->dist) {
        t->step = &fn_step_dist;
        return FN_OK;
    }
    const int lag = defer_lag(t);
    if (lag < 0) {
        t->step = &fn_step_eager;
        return FN_OK;
    }
    FN_TRY(fn_loss_tally_create(&t->tally, t->ctx, lag));
    const int graphs = fn_context_device(t->ctx) == FN_CUDA && t->cfg->cuda_graphs;
    t->step = graphs ? &fn_step_graph : &fn_step_deferred;
    return FN_OK;
}
