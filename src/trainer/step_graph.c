/* step_graph.c — the graphed step, one of the trainer's step strategies
 * (trainer_impl.h): the deferred training step (step_deferred.c) replayed
 * as a CUDA graph: forward, loss, backward, clipping and the optimiser's update
 * captured once and launched as one graph, instead of a launch (and its
 * host work) a kernel. Valid because everything a step reads sits at
 * fixed device addresses: the net's buffers, the loss tally, the
 * optimiser's state and step scalars (written before each launch by
 * fn_optimizer_prepare), and the batch, which is in one of the loader's
 * slots. So there is one graph a slot, keyed by the batch's device
 * addresses; the first batch in a slot runs uncaptured (the first use of
 * a cuBLAS product may set itself up), the second is captured, later ones
 * replay. A batch of fewer rows than [train] batch_size (an epoch's last)
 * runs uncaptured. When a capture fails (a call a graph cannot hold), the
 * run goes on without graphs: the step runs uncaptured, the same work.
 * A replay does the same kernels with the same arguments as the uncaptured
 * step, so the weights are the same bit for bit. [run] cuda_graphs =
 * false turns them off; one process on the GPU only (a multi-process run
 * must turn them off while its gradient sums are not captured). */
#include <stdlib.h>

#include "core/graph_cuda.h"
#include "trainer/trainer_impl.h"

enum { N_GRAPHS = FN_LOADER_SLOTS + 1 };

typedef struct step_graph {
    const void *x, *y;  /* the batch's inputs and targets (labels or floats) */
    int uses;           /* steps seen with this key */
    fn_cuda_graph *graph;
} step_graph;

struct fn_step_graphs {
    step_graph g[N_GRAPHS];
    int n;
    int off; /* a capture failed: no more graphs this run */
};

static const void *targets_of(const fn_batch *b)
{
    return b->labels ? (const void *)b->labels : (const void *)b->target.data;
}

static int wanted(const fn_trainer *t, const fn_batch *b)
{
    return fn_context_device(t->ctx) == FN_CUDA && t->cfg->cuda_graphs &&
           b->rows == t->cfg->batch_size;
}

/* The graph of the batch's slot, a new key when there is room; NULL: run
 * uncaptured. */
static step_graph *slot_of(fn_trainer *t, const fn_batch *b)
{
    if (!t->graphs) {
        t->graphs = calloc(1, sizeof *t->graphs);
        if (!t->graphs)
            return NULL;
    }
    struct fn_step_graphs *gs = t->graphs;
    if (gs->off)
        return NULL;
    for (int i = 0; i < gs->n; i++)
        if (gs->g[i].x == b->x.data && gs->g[i].y == targets_of(b))
            return &gs->g[i];
    if (gs->n == N_GRAPHS)
        return NULL;
    gs->g[gs->n] = (step_graph){.x = b->x.data, .y = targets_of(b)};
    return &gs->g[gs->n++];
}

/* Captures the step into g->graph; on failure graphs are off and the step
 * is not queued (the caller runs it). */
static int capture(fn_trainer *t, const fn_batch *b, step_graph *g)
{
    fn_status st = fn_cuda_graph_begin(t->ctx);
    if (st == FN_OK) {
        st = fn_trainer_queue_step(t, b);
        if (st == FN_OK)
            st = fn_cuda_graph_end(t->ctx, &g->graph);
    }
    if (st != FN_OK) {
        fn_cuda_graph_abort(t->ctx);
        t->graphs->off = 1;
        return 0;
    }
    return 1;
}

static fn_status graph_run(fn_trainer *t, const fn_batch *b)
{
    step_graph *g = wanted(t, b) ? slot_of(t, b) : NULL;
    if (!g)
        return fn_trainer_queue_step(t, b);
    if (!g->graph && g->uses++ >= 1 && !capture(t, b, g))
        return fn_trainer_queue_step(t, b);
    if (!g->graph)
        return fn_trainer_queue_step(t, b);
    return fn_cuda_graph_launch(t->ctx, g->graph);
}

static void graph_release(fn_trainer *t)
{
    if (t->graphs) {
        for (int i = 0; i < t->graphs->n; i++)
            fn_cuda_graph_destroy(t->graphs->g[i].graph);
        free(t->graphs);
        t->graphs = NULL;
    }
    fn_trainer_defer_release(t);
}

/* For tests: how many graphs the run holds (0 without). */
int fn_trainer_graph_count(const fn_trainer *t)
{
    int n = 0;
    for (int i = 0; t->graphs && i < t->graphs->n; i++)
        n += t->graphs->g[i].graph != NULL;
    return n;
}

static fn_status graph_step(fn_trainer *t, const fn_batch *b, float *loss)
{
    return fn_trainer_defer_step(t, b, loss, graph_run);
}

const fn_step_ops fn_step_graph = {
    .name = "graph",
    .begin = fn_trainer_defer_begin,
    .step = graph_step,
    .drain = fn_trainer_defer_drain,
    .release = graph_release,
};
