/* net.c — a chain of layers with the activation and gradient buffers between
 * them, allocated once for max_batch rows as layers are added; forward and
 * backward run on row views of those buffers, so a step never allocates.
 *
 * Where a layer can write its output as bfloat16 and the layer after it
 * takes its input as bfloat16 (layer.h: forward_bf16, bf16_input; blocks in
 * bf16 math on the GPU), the net joins the two through bfloat16 as the
 * second is added: the first writes its output, rounded once, straight
 * into the second's bfloat16 input, and the float buffer between them is
 * freed. The second would have rounded the float output to nearest itself,
 * so the bits are the same; the gradient buffers stay float. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fusenet/net.h"
#include "core/test_hooks.h"

struct fn_net {
    fn_context *ctx;     /* borrowed */
    int max_batch;
    int forward_only;    /* no gradient buffers (dacts); backward is an error */
    int in_features;     /* of the first layer; 0 while empty */
    fn_layer **layers;   /* [n_layers], owned */
    int n_layers;
    fn_tensor *acts;     /* [n_layers]: acts[i] is layer i's output, [max_batch, out_i] */
    void **acts_h;       /* [n_layers]: where layer i writes its output as bfloat16, the
                          * next layer's bf16_input (acts[i] then empty); else NULL */
    fn_tensor *dacts;    /* [n_layers]: d loss / d acts[i]; dacts[n-1] is the caller's dy */
    fn_param **params;   /* [n_params]: every layer's parameters, in layer order */
    int n_params;
    int batch;           /* rows of the last forward; 0 before any */
};

static fn_status create_net(fn_net **out, fn_context *ctx, int max_batch, int forward_only)
{
    if (!out)
        return fn_fail(FN_ERR_INVALID, "fn_net_create: out is NULL");
    *out = NULL;
    if (!ctx)
        return fn_fail(FN_ERR_INVALID, "fn_net_create: ctx is NULL");
    if (max_batch < 1)
        return fn_fail(FN_ERR_INVALID, "net: max_batch %d must be at least 1", max_batch);
    fn_net *net = calloc(1, sizeof *net);
    if (!net)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a net");
    net->ctx = ctx;
    net->max_batch = max_batch;
    net->forward_only = forward_only;
    *out = net;
    return FN_OK;
}

fn_status fn_net_create(fn_net **out, fn_context *ctx, int max_batch)
{
    return create_net(out, ctx, max_batch, 0);
}

fn_status fn_net_create_forward_only(fn_net **out, fn_context *ctx, int max_batch)
{
    return create_net(out, ctx, max_batch, 1);
}

static fn_status check_new_layer(const fn_net *net, const fn_layer *layer)
{
    const int i = net->n_layers;
    const char *kind = layer->ops && layer->ops->kind ? layer->ops->kind : "layer";
    if (layer->device != fn_context_device(net->ctx))
        return fn_fail(FN_ERR_INVALID, "net: layer %d (%s) is on the %s, the net on the %s", i,
                       kind, fn_device_name(layer->device),
                       fn_device_name(fn_context_device(net->ctx)));
    if (layer->max_batch < net->max_batch)
        return fn_fail(FN_ERR_INVALID, "net: layer %d (%s) has max_batch %d, the net needs %d", i,
                       kind, layer->max_batch, net->max_batch);
    if (i > 0 && layer->in_features != net->layers[i - 1]->out_features)
        return fn_fail(FN_ERR_INVALID,
                       "net: layer %d (%s) takes %d features, layer %d gives %d", i, kind,
                       layer->in_features, i - 1, net->layers[i - 1]->out_features);
    return FN_OK;
}

/* Makes room for one more layer in every per-layer array. The grown arrays
 * are kept even if a later step fails: their old contents stay valid. */
static fn_status grow(fn_net *net)
{
    const size_t n = (size_t)net->n_layers + 1;
    fn_layer **layers = realloc(net->layers, n * sizeof *layers);
    if (layers)
        net->layers = layers;
    fn_tensor *acts = layers ? realloc(net->acts, n * sizeof *acts) : NULL;
    if (acts)
        net->acts = acts;
    fn_tensor *dacts = acts ? realloc(net->dacts, n * sizeof *dacts) : NULL;
    if (dacts)
        net->dacts = dacts;
    void **acts_h = dacts ? realloc(net->acts_h, n * sizeof *acts_h) : NULL;
    if (acts_h)
        net->acts_h = acts_h;
    if (!acts_h)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the net's layer list");
    net->acts[n - 1] = (fn_tensor){0};
    net->acts_h[n - 1] = NULL;
    net->dacts[n - 1] = (fn_tensor){0};
    return FN_OK;
}

/* Points net->params at every layer's parameters, in layer order. */
static fn_status collect_params(fn_net *net, const fn_layer *added)
{
    const size_t n = (size_t)net->n_params + (size_t)added->n_params;
    fn_param **params = realloc(net->params, (n > 0 ? n : 1) * sizeof *params);
    if (!params)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the net's parameter list");
    net->params = params;
    for (int j = 0; j < added->n_params; j++)
        net->params[net->n_params + j] = &added->params[j];
    net->n_params = (int)n;
    return FN_OK;
}

/* Layer i's output buffer and, now that a layer follows it, layer i-1's
 * gradient buffer (the last layer's gradient is the caller's dy). */
static fn_status alloc_buffers(fn_net *net, const fn_layer *layer)
{
    const int i = net->n_layers;
    const fn_device dev = layer->device;
    FN_TRY(fn_tensor_alloc(&net->acts[i], net->max_batch, layer->out_features, dev));
    if (i > 0 && !net->forward_only)
        FN_TRY(fn_tensor_alloc(&net->dacts[i - 1], net->max_batch, layer->in_features, dev));
    return FN_OK;
}

/* Joins layer i - 1 to layer i through bfloat16 where the first writes it
 * and the second takes it (the file's header); its float output goes. */
static void join_bf16(fn_net *net, int i)
{
    const fn_layer *prev = net->layers[i - 1];
    void *x_h = fn_test_bf16_acts_off() ? NULL : fn_layer_bf16_input(net->layers[i]);
    if (!x_h || !prev->ops || !prev->ops->forward_bf16)
        return;
    fn_tensor_free(&net->acts[i - 1]);
    net->acts_h[i - 1] = x_h;
}

static fn_status add_layer(fn_net *net, fn_layer *layer)
{
    FN_TRY(check_new_layer(net, layer));
    FN_TRY(grow(net));
    const int i = net->n_layers;
    /* dacts[i-1] may hold a view of a caller's dy from a backward: not ours. */
    if (i > 0)
        net->dacts[i - 1] = (fn_tensor){0};
    fn_status st = alloc_buffers(net, layer);
    if (st == FN_OK)
        st = collect_params(net, layer);
    if (st != FN_OK) {
        fn_tensor_free(&net->acts[i]);
        if (i > 0)
            fn_tensor_free(&net->dacts[i - 1]);
        return st;
    }
    net->layers[i] = layer;
    net->n_layers = i + 1;
    if (i == 0)
        net->in_features = layer->in_features;
    else
        join_bf16(net, i);
    net->batch = 0; /* the chain changed: a new forward must come first */
    return FN_OK;
}

fn_status fn_net_add(fn_net *net, fn_layer *layer)
{
    if (!net || !layer) {
        fn_layer_destroy(layer);
        return fn_fail(FN_ERR_INVALID, "fn_net_add: %s is NULL", !net ? "net" : "layer");
    }
    fn_status st = add_layer(net, layer);
    if (st != FN_OK)
        fn_layer_destroy(layer);
    return st;
}

void fn_net_destroy(fn_net *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->n_layers; i++) {
        fn_layer_destroy(net->layers[i]);
        fn_tensor_free(&net->acts[i]);
        /* dacts[n-1] is at most a view of the caller's dy, never ours. */
        if (i < net->n_layers - 1)
            fn_tensor_free(&net->dacts[i]);
    }
    free(net->layers);
    free(net->acts);
    free(net->acts_h);
    free(net->dacts);
    free(net->params);
    free(net);
}

static fn_status check_forward(const fn_net *net, const fn_tensor *x, const fn_tensor *y)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_net_forward: net is NULL");
    if (net->n_layers == 0)
        return fn_fail(FN_ERR_INVALID, "net: forward through a net with no layers");
    if (!x || !x->data)
        return fn_fail(FN_ERR_INVALID, "net: x is NULL");
    if (!y)
        return fn_fail(FN_ERR_INVALID, "net: y is NULL");
    if (x->rows < 1 || x->rows > net->max_batch)
        return fn_fail(FN_ERR_INVALID, "net: x has %d rows, expected 1 to max_batch %d",
                       x->rows, net->max_batch);
    return FN_OK;
}

/* Layer i's forward on batch rows: through bfloat16 where it is joined
 * to a neighbour, else as forward (the last one's unbiased with bias). */
static fn_status forward_layer(fn_net *net, int i, const fn_tensor *x, int batch,
                               const float **bias)
{
    fn_layer *l = net->layers[i];
    const int in_h = i > 0 && net->acts_h[i - 1];
    const fn_tensor in = i == 0 ? *x : in_h ? (fn_tensor){0}
                                            : fn_tensor_rows(&net->acts[i - 1], 0, batch);
    fn_tensor out = net->acts_h[i] ? (fn_tensor){0} : fn_tensor_rows(&net->acts[i], 0, batch);
    if (in_h || net->acts_h[i])
        return fn_layer_forward_bf16(l, in_h ? NULL : &in, batch, &out, net->acts_h[i]);
    return bias && i == net->n_layers - 1 ? fn_layer_forward_unbiased(l, &in, &out, bias)
                                          : fn_layer_forward(l, &in, &out);
}

/* The forward of every layer; with bias, the last one's unbiased. */
static fn_status forward_layers(fn_net *net, const fn_tensor *x, fn_tensor *y, const float **bias)
{
    FN_TRY(check_forward(net, x, y));
    const int batch = x->rows, last = net->n_layers - 1;
    net->batch = 0;
    for (int i = 0; i < net->n_layers; i++) {
        fn_status st = forward_layer(net, i, x, batch, bias);
        if (st != FN_OK) {
            fn_error_prefix("net layer %d: ", i);
            return st;
        }
    }
    *y = fn_tensor_rows(&net->acts[last], 0, batch);
    net->batch = batch;
    return FN_OK;
}

fn_status fn_net_forward(fn_net *net, const fn_tensor *x, fn_tensor *y)
{
    return forward_layers(net, x, y, NULL);
}

fn_status fn_net_forward_unbiased(fn_net *net, const fn_tensor *x, fn_tensor *y,
                                  const float **bias)
{
    if (!bias)
        return fn_fail(FN_ERR_INVALID, "fn_net_forward_unbiased: bias is NULL");
    *bias = NULL;
    return forward_layers(net, x, y, bias);
}

fn_status fn_net_backward_each(fn_net *net, const fn_tensor *dy, fn_net_layer_backward backward,
                               void *arg)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_net_backward: net is NULL");
    if (net->forward_only)
        return fn_fail(FN_ERR_INVALID, "net: made for forward passes only (no gradients): no "
                       "backward");
    if (net->batch < 1)
        return fn_fail(FN_ERR_INVALID, "net: backward before forward");
    const int n = net->n_layers, batch = net->batch;
    net->dacts[n - 1] = dy ? *dy : (fn_tensor){0};
    for (int i = n - 1; i >= 0; i--) {
        const fn_tensor dyi = i == n - 1 ? net->dacts[i] : fn_tensor_rows(&net->dacts[i], 0, batch);
        fn_tensor dx = i > 0 ? fn_tensor_rows(&net->dacts[i - 1], 0, batch) : (fn_tensor){0};
        fn_status st = backward(net->layers[i], &dyi, i > 0 ? &dx : NULL, arg);
        if (st != FN_OK) {
            fn_error_prefix("net layer %d: ", i);
            return st;
        }
    }
    return FN_OK;
}

static fn_status plain_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, void *arg)
{
    (void)arg;
    return fn_layer_backward(l, dy, dx);
}

fn_status fn_net_backward(fn_net *net, const fn_tensor *dy)
{
    return fn_net_backward_each(net, dy, plain_backward, NULL);
}

fn_status fn_net_zero_grad(fn_net *net)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_net_zero_grad: net is NULL");
    for (int i = 0; i < net->n_layers; i++)
        FN_TRY(fn_layer_zero_grad(net->layers[i]));
    return FN_OK;
}

fn_status fn_net_set_pass(fn_net *net, const fn_pass *pass)
{
    if (!net)
        return fn_fail(FN_ERR_INVALID, "fn_net_set_pass: net is NULL");
    for (int i = 0; i < net->n_layers; i++) {
        fn_status st = fn_layer_set_pass(net->layers[i], pass);
        if (st != FN_OK) {
            fn_error_prefix("layer %d: ", i);
            return st;
        }
    }
    return FN_OK;
}

int fn_net_n_layers(const fn_net *net) { return net ? net->n_layers : 0; }

fn_layer *fn_net_layer(const fn_net *net, int i)
{
    return net && i >= 0 && i < net->n_layers ? net->layers[i] : NULL;
}

int fn_net_n_params(const fn_net *net) { return net ? net->n_params : 0; }

fn_param *fn_net_param(const fn_net *net, int i)
{
    return net && i >= 0 && i < net->n_params ? net->params[i] : NULL;
}

fn_param *const *fn_net_params(const fn_net *net) { return net ? net->params : NULL; }

fn_context *fn_net_context(const fn_net *net) { return net ? net->ctx : NULL; }

int fn_net_max_batch(const fn_net *net) { return net ? net->max_batch : 0; }

int fn_net_in_features(const fn_net *net) { return net ? net->in_features : 0; }

int fn_net_out_features(const fn_net *net)
{
    return net && net->n_layers > 0 ? net->layers[net->n_layers - 1]->out_features : 0;
}

/* --- diagnosis ---------------------------------------------------------------- */

typedef struct scan {
    const fn_net *net;
    float *host; /* big enough for the largest tensor scanned */
    fn_nonfinite *found;
} scan;

/* Sets *hit when v [n] (rows of cols) holds a non-finite value, the first
 * of which goes into s->found. */
static void scan_values(scan *s, const float *v, size_t n, int cols, int layer, const char *what,
                        const char *param, int *hit)
{
    for (size_t i = 0; i < n; i++) {
        if (isfinite(v[i]))
            continue;
        const fn_layer *l = s->net->layers[layer];
        *s->found = (fn_nonfinite){.layer = layer,
                                   .kind = l->ops && l->ops->kind ? l->ops->kind : "layer",
                                   .what = what, .param = param, .row = (int)(i / (size_t)cols),
                                   .col = (int)(i % (size_t)cols), .value = v[i]};
        *hit = 1;
        return;
    }
}

/* scan_values over t. */
static fn_status scan_tensor(scan *s, const fn_tensor *t, int layer, const char *what,
                             const char *param, int *hit)
{
    *hit = 0;
    if (!t->data)
        return FN_OK;
    size_t n = fn_tensor_count(t);
    const float *v = t->data;
    if (t->device != FN_CPU) {
        FN_TRY(fn_tensor_download(t, s->host, n));
        v = s->host;
    }
    scan_values(s, v, n, t->cols, layer, what, param, hit);
    return FN_OK;
}

/* scan_values over layer i's output where it is bfloat16 (the next layer's
 * input, acts_h, whole floats long: layer.h): its batch rows copied to the
 * host as the floats they pack, two values each, then widened. A float
 * output too large for bfloat16 shows as the infinity the next layer read. */
static fn_status scan_bf16_output(scan *s, int i, int batch, int *hit)
{
    const fn_net *net = s->net;
    const int cols = net->layers[i]->out_features;
    const size_t n = (size_t)batch * (size_t)cols, packed = (n + 1) / 2;
    *hit = 0;
    uint16_t *h = malloc(packed * sizeof(float));
    float *v = malloc(n * sizeof *v);
    fn_status st = h && v ? FN_OK
                          : fn_fail(FN_ERR_NOMEM, "out of host memory for the non-finite scan");
    const fn_tensor t = fn_tensor_view(net->acts_h[i], 1, (int)packed, fn_context_device(net->ctx));
    if (st == FN_OK)
        st = fn_tensor_download(&t, (float *)h, packed);
    for (size_t k = 0; st == FN_OK && k < n; k++) {
        const uint32_t bits = (uint32_t)h[k] << 16; /* bfloat16: a float's upper half */
        memcpy(&v[k], &bits, sizeof bits);
    }
    if (st == FN_OK)
        scan_values(s, v, n, cols, i, "output", NULL, hit);
    free(h);
    free(v);
    return st;
}

static fn_status scan_forward(scan *s, int batch, int *hit)
{
    const fn_net *net = s->net;
    for (int i = 0; i < net->n_layers && !*hit; i++) {
        const fn_layer *l = net->layers[i];
        for (int p = 0; p < l->n_params && !*hit; p++)
            FN_TRY(scan_tensor(s, &l->params[p].value, i, "parameter", l->params[p].name, hit));
        if (!*hit && batch > 0 && net->acts_h[i]) {
            FN_TRY(scan_bf16_output(s, i, batch, hit));
        } else if (!*hit && batch > 0) {
            const fn_tensor out = fn_tensor_rows(&net->acts[i], 0, batch);
            FN_TRY(scan_tensor(s, &out, i, "output", NULL, hit));
        }
    }
    return FN_OK;
}

static fn_status scan_backward(scan *s, int batch, int *hit)
{
    const fn_net *net = s->net;
    for (int i = net->n_layers - 1; i >= 0 && !*hit; i--) {
        const fn_layer *l = net->layers[i];
        /* dacts[n-1] is the caller's dy of the last backward, a view. */
        fn_tensor dy = net->dacts[i];
        if (dy.data && i < net->n_layers - 1)
            dy = fn_tensor_rows(&net->dacts[i], 0, batch);
        FN_TRY(scan_tensor(s, &dy, i, "output gradient", NULL, hit));
        for (int p = 0; p < l->n_params && !*hit; p++)
            FN_TRY(scan_tensor(s, &l->params[p].grad, i, "parameter gradient", l->params[p].name,
                               hit));
    }
    return FN_OK;
}

static size_t largest_tensor(const fn_net *net)
{
    size_t most = 1;
    for (int i = 0; i < net->n_layers; i++) {
        const fn_layer *l = net->layers[i];
        size_t a = fn_tensor_count(&net->acts[i]), d = fn_tensor_count(&net->dacts[i]);
        most = a > most ? a : most;
        most = d > most ? d : most;
        for (int p = 0; p < l->n_params; p++) {
            size_t v = fn_tensor_count(&l->params[p].value);
            most = v > most ? v : most;
        }
    }
    return most;
}

fn_status fn_net_find_nonfinite(const fn_net *net, int with_grads, fn_nonfinite *found)
{
    if (!net || !found)
        return fn_fail(FN_ERR_INVALID, "fn_net_find_nonfinite: %s is NULL", !net ? "net" : "found");
    *found = (fn_nonfinite){.layer = -1};
    if (with_grads && net->batch < 1)
        return fn_fail(FN_ERR_INVALID, "net: gradients asked for before any forward");
    scan s = {.net = net, .found = found};
    if (fn_context_device(net->ctx) != FN_CPU) {
        s.host = malloc(largest_tensor(net) * sizeof(float));
        if (!s.host)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for the non-finite scan");
    }
    int hit = 0;
    fn_status st = scan_forward(&s, net->batch, &hit);
    if (st == FN_OK && !hit && with_grads)
        st = scan_backward(&s, net->batch, &hit);
    free(s.host);
    return st;
}

/* acts[i] for every layer, dacts[i] below the last: dacts[n - 1] is a view
 * of the caller's dy. A layer joined to the next through bfloat16 has no
 * acts[i]: its output lies in the next layer's input, which that layer's
 * buffers count (fn_layer_buffer_bytes). */
size_t fn_net_buffer_bytes(const fn_net *net)
{
    size_t n = 0;
    for (int i = 0; net && i < net->n_layers; i++) {
        n += fn_tensor_count(&net->acts[i]);
        if (i + 1 < net->n_layers)
            n += fn_tensor_count(&net->dacts[i]);
    }
    return n * sizeof(float);
}
