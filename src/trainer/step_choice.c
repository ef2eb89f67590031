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
 * norm). Folded, the parameters' own gradient tensors are freed; for the
 * same reason an optimiser whose backward_step takes every step here
 * (plain SGD on the GPU, eager) frees the gradients that step never
 * reads (fn_optimizer_fuse: the blocks'), which a search for a
 * non-finite value's backward allocates again.
 *
 * For the same reason, in one process without clipping each layer's
 * update may run as soon as its backward is done ([run] layer_updates,
 * off unless asked for: it measured slower on small networks; layer_updates,
 * fn_trainer_backward_update), on the GPU on the side stream beside the
 * backward of the layers before it, where the optimiser updates its
 * parameters in parts (fn_optimizer_set_parts: a part a layer). The
 * values are the one update's, bit for bit (each element's arithmetic
 * and the step's scalars are the same), and a non-finite loss still
 * stops before any update: an eager step reads it before backward, a
 * deferred one skips every part on the device as it skips the one
 * update. Over ranks the data-parallel step updates layer by layer
 * already; plain SGD's fused step has no update to move. Test builds
 * force it with FN_TEST_LAYER_UPDATES=1 or 0. */
#include <math.h>
#include <stdlib.h>

#include "core/test_hooks.h"
#include "trainer/trainer_impl.h"

/* Whether to defer, and the tally's lag when it does (-1: eager). */
static int defer_lag(const fn_trainer *t)
{
    if (t->dist || !fn_optimizer_can_split(t->opt))
        return -1;
    if (fn_optimizer_can_backward_step(t->opt) && !t->clip)
        return -1;
    const int hook = fn_test_defer_lag();
    const int gpu = fn_context_device(t->ctx) == FN_CUDA;
    if (gpu ? hook == 0 : hook <= 0)
        return -1;
    return gpu ? 0 : hook;
}

/* The optimiser's parameters are the net's, in layer order: a part a
 * layer (a layer without parameters, an empty one). */
static fn_status cut_by_layer(fn_trainer *t, int *cut)
{
    const fn_optimizer *opt = t->opt;
    int same = opt->n_params == fn_net_n_params(t->net);
    for (int i = 0; same && i < opt->n_params; i++)
        same = opt->params[i] == fn_net_param(t->net, i);
    *cut = 0;
    const int layers = fn_net_n_layers(t->net);
    if (!same || layers < 1)
        return FN_OK;
    int *counts = malloc((size_t)layers * sizeof *counts);
    if (!counts)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the layers' updates");
    for (int k = 0; k < layers; k++)
        counts[k] = fn_net_layer(t->net, k)->n_params;
    const fn_status st = fn_optimizer_set_parts(t->opt, counts, layers);
    free(counts);
    *cut = st == FN_OK;
    return st;
}

/* Whether each layer's update goes beside backward (this file's header). */
static fn_status choose_layer_updates(fn_trainer *t)
{
    t->layer_updates = 0;
    const int forced = fn_test_layer_updates();
    const int wanted = forced >= 0 ? forced : t->cfg->layer_updates;
    if (!wanted || t->dist || t->clip || fn_optimizer_can_backward_step(t->opt) ||
        !fn_optimizer_can_apply_parts(t->opt))
        return FN_OK;
    return cut_by_layer(t, &t->layer_updates);
}

fn_status fn_trainer_choose_step(fn_trainer *t)
{
    t->last_loss = NAN;
    if (!t->dist && !t->clip) {
        int folded = 0;
        FN_TRY(fn_optimizer_fold(t->opt, &folded));
        FN_TRY(fn_optimizer_fuse(t->opt, t->net)); /* every step its backward_step then */
    }
    FN_TRY(choose_layer_updates(t));
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
