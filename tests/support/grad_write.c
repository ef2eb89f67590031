/* grad_write.c — the grad_beta checks of grad_write.h: a layer of each kind
 * with parameters, one forward of a drawn batch, then backwards into
 * gradients prepared in different ways, compared value by value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "fusenet/layer_kind.h"
#include "grad_write.h"

/* Two shapes: a small one, and one wide enough for the CPU's threaded
 * passes and the GPU's vector kernels. The width equals the input's, so
 * the residual kind takes it too. */
static const struct {
    int batch, width, groups;
} shapes[] = {{7, 24, 4}, {97, 128, 8}};

/* A layer of `kind` with its input and output gradient drawn, after one
 * forward; NULL when the kind has no parameters. */
typedef struct gw_case {
    fn_layer *layer;
    fn_tensor x, y, dy, dx;
} gw_case;

static void upload_drawn(fn_tensor *t, fn_context *ctx, int rows, int cols, chk_rng *rng)
{
    EXPECT_OK(fn_tensor_alloc(t, rows, cols, fn_context_device(ctx)));
    const size_t n = (size_t)rows * (size_t)cols;
    double *d = chk_alloc(n);
    float *f = chk_alloc_float(n);
    chk_fill(d, n, -1.0, 1.0, rng);
    chk_to_float(f, d, n);
    EXPECT_OK(fn_tensor_upload(t, f, n));
    free(d);
    free(f);
}

static int case_make(gw_case *g, fn_context *ctx, const fn_layer_kind *kind, int s)
{
    memset(g, 0, sizeof *g);
    const int B = shapes[s].batch, W = shapes[s].width;
    const fn_layer_spec spec = {kind, W, 0.25};
    const fn_layer_hparams hp = {.groups = shapes[s].groups, .eps = 1e-5f,
                                 .negative_slope = 0.01f};
    fn_rng rng = {.seed = 5 + (uint64_t)s, .offset = 0};
    EXPECT_OK(fn_layer_create(&g->layer, ctx, W, &spec, &hp, B, &rng));
    if (g->layer->n_params == 0) {
        fn_layer_destroy(g->layer);
        g->layer = NULL;
        return 0;
    }
    chk_rng r = chk_rng_seed(17 + (uint64_t)s);
    upload_drawn(&g->x, ctx, B, W, &r);
    upload_drawn(&g->dy, ctx, B, W, &r);
    EXPECT_OK(fn_tensor_alloc(&g->dx, B, W, fn_context_device(ctx)));
    EXPECT_OK(fn_tensor_alloc(&g->y, B, W, fn_context_device(ctx)));
    EXPECT_OK(fn_layer_forward(g->layer, &g->x, &g->y));
    return 1;
}

static void case_free(gw_case *g)
{
    fn_layer_destroy(g->layer);
    fn_tensor_free(&g->x);
    fn_tensor_free(&g->y);
    fn_tensor_free(&g->dy);
    fn_tensor_free(&g->dx);
}

static void fill_grads(fn_layer *l, float v)
{
    for (int i = 0; i < l->n_params; i++) {
        fn_tensor *t = &l->params[i].grad;
        const size_t n = fn_tensor_count(t);
        float *h = chk_alloc_float(n);
        for (size_t k = 0; k < n; k++)
            h[k] = v;
        EXPECT_OK(fn_tensor_upload(t, h, n));
        free(h);
    }
}

/* Every gradient and dx, on the host, in the layer's parameter order
 * (dx last). */
typedef struct gw_snapshot {
    float *t[8];
    size_t n[8];
    int count;
} gw_snapshot;

static gw_snapshot snapshot(const gw_case *g)
{
    gw_snapshot s = {.count = g->layer->n_params + 1};
    assert_true(s.count <= 8);
    for (int i = 0; i < g->layer->n_params; i++) {
        s.t[i] = tensor_to_host(&g->layer->params[i].grad);
        s.n[i] = fn_tensor_count(&g->layer->params[i].grad);
    }
    s.t[s.count - 1] = tensor_to_host(&g->dx);
    s.n[s.count - 1] = fn_tensor_count(&g->dx);
    return s;
}

static void snapshot_free(gw_snapshot *s)
{
    for (int i = 0; i < s->count; i++)
        free(s->t[i]);
}

static const char *tensor_name(const gw_case *g, int i)
{
    return i < g->layer->n_params ? g->layer->params[i].name : "dx";
}

/* Fails naming the kind, the tensor and the first element whose bits
 * differ (bits: NaN leaking through must show even where == would not). */
static void expect_same_bits(const gw_case *g, const gw_snapshot *got, const gw_snapshot *want,
                             const char *how)
{
    for (int i = 0; i < got->count; i++)
        for (size_t k = 0; k < got->n[i]; k++)
            if (memcmp(&got->t[i][k], &want->t[i][k], sizeof(float)) != 0)
                fail_msg("%s %s [%zu]: %g after backward into %s gradients, %g from zeroed ones",
                         g->layer->ops->kind, tensor_name(g, i), k, (double)got->t[i][k], how,
                         (double)want->t[i][k]);
}

/* Backward from gradients filled with v (grad_beta 0). */
static gw_snapshot backward_over(gw_case *g, float v)
{
    fill_grads(g->layer, v);
    EXPECT_OK(fn_layer_backward(g->layer, &g->dy, &g->dx));
    return snapshot(g);
}

int gw_check_written(fn_context *ctx)
{
    int kinds = 0;
    for (int k = 0; k < fn_layer_kind_count(); k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            gw_case g;
            if (!case_make(&g, ctx, fn_layer_kind_at(k), (int)s))
                continue;
            kinds += s == 0;
            for (int i = 0; i < g.layer->n_params; i++)
                assert_true(g.layer->params[i].grad_beta == 0.0f); /* the default */
            gw_snapshot zeroed = backward_over(&g, 0.0f);
            gw_snapshot nan = backward_over(&g, NAN);
            gw_snapshot garbage = backward_over(&g, -3.0e37f);
            expect_same_bits(&g, &nan, &zeroed, "NaN-filled");
            expect_same_bits(&g, &garbage, &zeroed, "garbage-filled");
            snapshot_free(&zeroed);
            snapshot_free(&nan);
            snapshot_free(&garbage);
            case_free(&g);
        }
    return kinds;
}

/* On the GPU only batches of fewer than 8 rows: the dW product's inner
 * dimension is the batch, and the products' rule (kernels/core/gemm_lt_cuda.cu) never
 * splits fewer than 8 terms, so no split-K reduction can add a product's
 * parts onto the old gradient one at a time (which rounds other than
 * g + g). */
int gw_check_accumulated(fn_context *ctx)
{
    int kinds = 0;
    const int gpu = fn_context_device(ctx) == FN_CUDA;
    for (int k = 0; k < fn_layer_kind_count(); k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (gpu && shapes[s].batch >= 8)
                continue;
            gw_case g;
            if (!case_make(&g, ctx, fn_layer_kind_at(k), (int)s))
                continue;
            kinds += s == 0;
            for (int i = 0; i < g.layer->n_params; i++)
                g.layer->params[i].grad_beta = 1.0f;
            EXPECT_OK(fn_layer_zero_grad(g.layer));
            EXPECT_OK(fn_layer_backward(g.layer, &g.dy, &g.dx));
            gw_snapshot once = snapshot(&g);
            EXPECT_OK(fn_layer_backward(g.layer, &g.dy, &g.dx));
            gw_snapshot twice = snapshot(&g);
            for (int i = 0; i < g.layer->n_params; i++) /* dx is assigned, not summed */
                for (size_t e = 0; e < once.n[i]; e++)
                    if (!(twice.t[i][e] == 2.0f * once.t[i][e]))
                        fail_msg("%s %s [%zu]: %g after two backwards with grad_beta 1, "
                                 "not twice %g",
                                 g.layer->ops->kind, tensor_name(&g, i), e,
                                 (double)twice.t[i][e], (double)once.t[i][e]);
            snapshot_free(&once);
            snapshot_free(&twice);
            case_free(&g);
        }
    return kinds;
}
