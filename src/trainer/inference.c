/* inference.c — a network's outputs for a memory set (inference.h), through
 * the set, loader and standardisation every batch takes. */
#include <stdint.h>

#include "fusenet/data.h"
#include "fusenet/inference.h"
#include "fusenet/loader.h"

typedef struct inference {
    fn_data *data;
    fn_loader *loader;
} inference;

/* Every batch forward, its outputs copied to their rows (file order: the
 * set is not shuffled, so a batch is a run of consecutive rows). */
static fn_status forward_all(fn_net *net, fn_loader *loader, float *outputs)
{
    const size_t out = (size_t)fn_net_out_features(net);
    FN_TRY(fn_loader_start(loader, 0, 0));
    for (;;) {
        fn_batch b;
        FN_TRY(fn_loader_next(loader, &b));
        if (!b.rows)
            return fn_loader_halt(loader);
        fn_tensor y;
        FN_TRY(fn_net_forward(net, &b.x, &y));
        FN_TRY(fn_tensor_download(&y, outputs + (size_t)b.index[0] * out, (size_t)b.rows * out));
    }
}

static fn_status run(inference *job, fn_net *net, const fn_input_norm *norm,
                     const fn_memory_set *set, float *outputs)
{
    const fn_data_options opt = {.in_features = fn_net_in_features(net),
                                 .batch_size = fn_net_max_batch(net),
                                 .memory_budget = SIZE_MAX, .shuffle = 0};
    FN_TRY(fn_data_open_memory(&job->data, set, &opt));
    const fn_loader_options sync = {.mode = FN_LOADER_SYNC};
    FN_TRY(fn_loader_create(&job->loader, fn_net_context(net), job->data, &sync));
    FN_TRY(fn_loader_set_norm(job->loader, norm));
    const fn_pass evaluation = {0}; /* a trainer's net may be left in a training pass */
    FN_TRY(fn_net_set_pass(net, &evaluation));
    return forward_all(net, job->loader, outputs);
}

fn_status fn_infer(fn_net *net, const fn_input_norm *norm, const fn_memory_set *set,
                   float *outputs)
{
    if (!net || !set || !outputs)
        return fn_fail(FN_ERR_INVALID, "fn_infer: the %s is NULL",
                       !net ? "network" : !set ? "memory set" : "outputs array");
    if (fn_net_n_layers(net) == 0)
        return fn_fail(FN_ERR_INVALID, "fn_infer: the network has no layers");
    inference job = {0};
    fn_status st = run(&job, net, norm, set, outputs);
    fn_loader_destroy(job.loader);
    fn_data_close(job.data);
    return st;
}
