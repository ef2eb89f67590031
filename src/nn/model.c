/* model.c — builds an fn_net from a list of layer specs, each created by its
 * kind (layer_kind.h). */
#include <math.h>
#include <stdio.h>

#include "fusenet/model.h"
#include "core/test_hooks.h"
#include "nn/model_memory.h"

fn_status fn_model_add_layer(fn_net *net, const fn_layer_spec *spec, int in_features,
                             const fn_layer_hparams *hp, fn_rng *rng)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_model_add_layer: net is NULL");
    fn_layer *layer = NULL;
    FN_TRY(fn_layer_create(&layer, fn_net_context(net), in_features, spec, hp,
                           fn_net_max_batch(net), rng));
    return fn_net_add(net, layer);
}

void fn_model_memory_start(fn_model_memory *need, fn_device device, fn_math math)
{
    /* net.c joins under the same conditions (its test hook included) */
    *need = (fn_model_memory){.bf16_joins = device == FN_CUDA &&
                                            fn_math_policy_of(math)->bf16_operands &&
                                            !fn_test_bf16_acts_off()};
}

/* Whether a layer of kind k joins the one added before it (net.c). */
static int joins_last(const fn_model_memory *need, const fn_layer_kind *k, int first)
{
    return !first && need->bf16_joins && need->last && need->last->bf16_output && k &&
           k->bf16_input;
}

void fn_model_memory_add(fn_model_memory *need, const fn_layer_spec *spec, int in_features,
                         const fn_layer_hparams *hp, int max_batch, int first)
{
    const fn_layer_hparams none = {0};
    const fn_layer_kind *k = spec->kind;
    const double f = (double)sizeof(float), rows = (double)(max_batch > 0 ? max_batch : 1);
    double params = k && k->param_floats ? k->param_floats(in_features, spec) : 0;
    double row = k && k->row_floats ? k->row_floats(spec, hp ? hp : &none) : 0;
    /* net.c: the layer's output and, but for the first or forward only,
     * its input's gradient. */
    const int training = !(hp && hp->forward_only);
    row += (double)fn_layer_spec_out(spec, in_features) +
           (first || !training ? 0.0 : (double)in_features);
    /* joined: the layer before's float output is never allocated */
    row -= joins_last(need, k, first) ? (double)in_features : 0.0;
    need->last = k;
    need->params += params * f;
    need->grads += training ? params * f : 0.0;
    need->activations += row * rows * f;
    need->total = need->params + need->grads + need->activations;
}

void fn_model_memory_need(const fn_layer_spec *specs, int n_layers, int in_features,
                          const fn_layer_hparams *hp, int max_batch, fn_model_memory *need)
{
    *need = (fn_model_memory){0};
    int in = in_features;
    for (int i = 0; i < n_layers; i++) {
        fn_model_memory_add(need, &specs[i], in, hp, max_batch, i == 0);
        in = fn_layer_spec_out(&specs[i], in);
    }
}

fn_status fn_model_memory_fits(const fn_context *ctx, const fn_model_memory *need,
                               int max_batch)
{
    double limit = 0;
    const char *source = NULL;
    FN_TRY(fn_context_memory_available(ctx, &limit, &source));
    /* limit 0: the system would not say; the allocations will. */
    if (limit <= 0 || need->total <= limit)
        return FN_OK;
    const double gb = 1e9;
    char grads[64] = ""; /* none in a net for forward passes only */
    if (need->grads > 0)
        snprintf(grads, sizeof grads, ", their gradients %.1f GB", need->grads / gb);
    /* The activations grow with the batch: say which batches would fit. */
    const double per_row = need->activations / (max_batch > 0 ? max_batch : 1);
    const double rows = per_row > 0 ? floor((limit - need->params - need->grads) / per_row) : 0;
    char fits[96] = "";
    if (rows >= 1 && rows < max_batch)
        snprintf(fits, sizeof fits, "; batches of at most %.0f rows would fit", rows);
    return fn_fail(FN_ERR_NOMEM,
                   "the network needs at least %.1f GB of %s memory (parameters %.1f GB%s, "
                   "activations for batches of %d row%s %.1f GB), more than the %.1f GB of %s%s",
                   need->total / gb, fn_context_device(ctx) == FN_CUDA ? "GPU" : "host",
                   need->params / gb, grads, max_batch, max_batch == 1 ? "" : "s",
                   need->activations / gb, limit / gb, source, fits);
}

/* fn_model_specs_fit_memory with hp[i * hp_step] layer i's settings. */
static fn_status fit_memory(const fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                            int in_features, const fn_layer_hparams *hp, int hp_step,
                            int max_batch)
{
    fn_model_memory need;
    fn_model_memory_start(&need, fn_context_device(ctx), fn_context_math(ctx));
    for (int i = 0, in = in_features; i < n_layers; in = fn_layer_spec_out(&specs[i], in), i++)
        fn_model_memory_add(&need, &specs[i], in, hp ? &hp[i * hp_step] : NULL, max_batch,
                            i == 0);
    return fn_model_memory_fits(ctx, &need, max_batch);
}

fn_status fn_model_specs_fit_memory(const fn_context *ctx, const fn_layer_spec *specs,
                                    int n_layers, int in_features, const fn_layer_hparams *hp,
                                    int max_batch)
{
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "fn_model_specs_fit_memory: ctx is NULL");
    return fit_memory(ctx, specs, n_layers, in_features, hp, 0, max_batch);
}

/* hp[i * hp_step] is layer i's settings: hp_step 0 shares one. */
static fn_status add_layers(fn_net *net, const fn_layer_spec *specs, int n_layers,
                            int in_features, const fn_layer_hparams *hp, int hp_step, fn_rng *rng)
{
    int in = in_features;
    for (int i = 0; i < n_layers; i++) {
        fn_status st = fn_model_add_layer(net, &specs[i], in, &hp[i * hp_step], rng);
        if (st != FN_OK) {
            char item[64];
            fn_layer_spec_format(&specs[i], item, sizeof item);
            fn_error_prefix("layer %d (%s): ", i, item);
            return st;
        }
        in = fn_layer_spec_out(&specs[i], in);
    }
    return FN_OK;
}

static fn_status create(fn_net **out, fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                        int in_features, const fn_layer_hparams *hp, int hp_step, int max_batch,
                        uint64_t seed)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_model_create: net is NULL");
    *out = NULL;
    if (!ctx || (n_layers > 0 && (!specs || !hp)))
        return fn_fail(FN_ERR_INVALID, "fn_model_create: ctx, specs or settings are NULL");
    FN_TRY(fit_memory(ctx, specs, n_layers, in_features, hp, hp_step, max_batch));
    fn_net *net = NULL;
    FN_TRY(fn_net_create(&net, ctx, max_batch));
    fn_rng rng = {.seed = seed, .offset = 0};
    fn_status st = add_layers(net, specs, n_layers, in_features, hp, hp_step, &rng);
    if (st != FN_OK) {
        fn_net_destroy(net);
        return st;
    }
    *out = net;
    return FN_OK;
}

fn_status fn_model_create(fn_net **net, fn_context *ctx, const fn_layer_spec *specs, int n_layers,
                          int in_features, const fn_layer_hparams *hp, int max_batch,
                          uint64_t seed)
{
    return create(net, ctx, specs, n_layers, in_features, hp, 0, max_batch, seed);
}

fn_status fn_model_create_each(fn_net **net, fn_context *ctx, const fn_layer_spec *specs,
                               int n_layers, int in_features, const fn_layer_hparams *hp,
                               int max_batch, uint64_t seed)
{
    return create(net, ctx, specs, n_layers, in_features, hp, 1, max_batch, seed);
}
