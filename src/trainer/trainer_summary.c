/* trainer_summary.c — what a run reports before its first step: each
 * layer's kind, sizes, groups and parameters, and the memory the run
 * holds, summed from the byte counts of the parts that allocated it (each
 * layer, the net's buffers, the optimiser's state, the loaders and the
 * sets), so the figure follows the library's own arithmetic. */
#include <stdlib.h>
#include <string.h>

#include "fusenet/layer_kind.h"
#include "trainer/trainer_impl.h"

/* The kind's int attribute "groups" (a block's GroupNorm), else 0. */
static int layer_groups(const fn_layer *l)
{
    const fn_layer_kind *k = fn_layer_kind_of(l);
    fn_layer_attr_value values[FN_LAYER_ATTRS_MAX];
    if (!k || !k->get_attrs || k->get_attrs(l, values) != FN_OK)
        return 0;
    for (int i = 0; i < k->n_attrs; i++)
        if (k->attrs[i].type == FN_LAYER_ATTR_INT && strcmp(k->attrs[i].name, "groups") == 0)
            return (int)values[i].i;
    return 0;
}

static void add_loader(const fn_loader *l, fn_train_memory *m)
{
    size_t host = 0, device = 0;
    fn_loader_bytes(l, &host, &device);
    m->data += host;
    m->batches += device;
}

static fn_train_memory memory_of(fn_trainer *t)
{
    fn_train_memory m = {0};
    for (int i = 0; i < fn_net_n_layers(t->net); i++) {
        const fn_layer *l = fn_net_layer(t->net, i);
        m.weights += fn_layer_param_bytes(l) + fn_layer_weight_copy_bytes(l);
        m.gradients += fn_layer_grad_bytes(l);
        m.activations += fn_layer_buffer_bytes(l);
    }
    /* The loss and its gradient beside the net's buffers. */
    m.activations += fn_net_buffer_bytes(t->net) +
                     (fn_tensor_count(&t->loss) + fn_tensor_count(&t->dpred)) * sizeof(float);
    m.optimizer = fn_optimizer_state_bytes(t->opt);
    /* Folded, gradients are state tensors (their own ones freed): once. */
    m.gradients -= fn_optimizer_grad_state_bytes(t->opt);
    add_loader(t->loader, &m);
    add_loader(t->valid_loader, &m);
    m.data += fn_data_host_bytes(t->train) + fn_data_host_bytes(t->valid);
    m.device = m.weights + m.gradients + m.optimizer + m.activations + m.batches;
    return m;
}

void fn_trainer_report_model(fn_trainer *t)
{
    if (!t->cb.on_model)
        return;
    const int n = fn_net_n_layers(t->net);
    fn_train_layer *layers = calloc((size_t)(n > 0 ? n : 1), sizeof *layers);
    if (!layers)
        return; /* a report, not the run: skipped when memory is this short */
    fn_train_model m = {.layers = layers, .n_layers = n,
                        .device = fn_context_device(t->ctx), .memory = memory_of(t)};
    m.gpu = m.device == FN_CUDA ? t->cfg->gpu < 0 ? 0 : t->cfg->gpu : -1;
    for (int i = 0; i < n; i++) {
        const fn_layer *l = fn_net_layer(t->net, i);
        layers[i] = (fn_train_layer){.kind = l->ops->kind, .in = l->in_features,
                                     .out = l->out_features, .groups = layer_groups(l),
                                     .params = fn_layer_param_count(l)};
        m.params += layers[i].params;
    }
    t->cb.on_model(t->user, &m);
    free(layers);
}
