/* gradcheck_loss.c — tiers 2 and 3 for the losses, MSE, Huber (delta
 * 1, so both of its pieces are taken), softmax cross-entropy and binary
 * cross-entropy on logits (with and without pos_weight; targets in [0, 1],
 * a third of them exactly 0 or 1): value and gradient on a backend against the float64
 * reference, and finite differences of the loss value through the backend
 * along a direction in its input (fd.h). Not layers: no parameters, and L
 * is the loss itself. See gradcheck.h. */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "estimate.h"
#include "fd.h"
#include "reference.h"
#include "runner.h"

#define RTOL (4 * CHK_U32)

static const gc_loss_case cases[] = {
    /* rows, cols, scale, seed, why */
    {1, 2, 3, 34, "one row, two classes"},
    {7, 10, 3, 35, "typical"},
    {16, 5, 50, 36, "logits of 50: exp would overflow float32 without the max shift"},
    {1025, 1000, 5, 38, "many rows and classes: long reductions"},
};

static const gc_loss_case fd_cases[] = {
    {6, 5, 3, 43, "typical"},
};

static int failed(fn_status st, const char *what)
{
    return run_report(st, what) != FN_OK;
}

static void random_labels(int32_t *labels, int rows, int cols, chk_rng *rng)
{
    for (int i = 0; i < rows; i++)
        labels[i] = (int32_t)(chk_rng_next(rng) % (uint64_t)cols);
}

static int32_t *alloc_labels(int rows)
{
    int32_t *labels = calloc((size_t)rows, sizeof *labels);
    if (!labels)
        abort();
    return labels;
}

enum { MSE, HUBER, XENT, XENT_SMOOTH, BCE, BCE_POS, N_LOSSES };
static const char *const names[N_LOSSES] = {"mse", "huber", "xent", "xent w+ls", "bce", "bce pw"};
static const double HUBER_DELTA = 1.0;
/* The weighted, smoothed cross-entropy's: w_c = 0.5, 1, 1.5, 2, 0.5, ...
 * and label smoothing 0.1. */
static const double SMOOTHING = 0.1;
static double class_weight(int c) { return 0.5 + 0.5 * (c % 4); }

/* One loss's inputs: pred (or logits) and what it is measured against. */
typedef struct loss_data {
    int rows, cols, loss;  /* MSE, HUBER, XENT, XENT_SMOOTH, BCE or BCE_POS */
    const double *target;  /* [rows, cols], MSE and HUBER */
    const int32_t *labels; /* [rows], cross-entropy */
    const double *w;       /* [cols], XENT_SMOOTH's class weights, BCE_POS's pos_weight */
    const float *wf;       /* the same as float32, as the loss takes them */
    const double *unit;    /* [rows, cols] in [0, 1], BCE and BCE_POS */
} loss_data;

/* BCE's targets from the others (U(-scale, scale)): every third exactly 0
 * or 1 (a hard label), the rest mapped onto [0, 1] (soft). */
static double *unit_targets(const double *target, size_t n, double scale)
{
    double *u = chk_alloc(n);
    for (size_t i = 0; i < n; i++)
        u[i] = i % 3 == 0 ? (target[i] > 0) : (target[i] / scale + 1) / 2;
    return u;
}

/* The class weights of cols classes, as double and as float. */
static void make_weights(int cols, double **w, float **wf)
{
    *w = chk_alloc((size_t)cols);
    *wf = calloc((size_t)cols, sizeof **wf);
    if (!*wf)
        abort();
    for (int c = 0; c < cols; c++)
        (*wf)[c] = (float)((*w)[c] = class_weight(c));
}

static fn_status loss_run(fn_context *ctx, const loss_data *d, const double *pred, double *loss,
                          double *grad)
{
    switch (d->loss) {
    case MSE: return run_mse(ctx, d->rows, d->cols, pred, d->target, loss, grad);
    case HUBER:
        return run_huber(ctx, d->rows, d->cols, pred, d->target, HUBER_DELTA, loss, grad);
    case XENT: return run_cross_entropy(ctx, d->rows, d->cols, pred, d->labels, loss, grad);
    case BCE: return run_bce(ctx, d->rows, d->cols, pred, d->unit, NULL, loss, grad, NULL);
    case BCE_POS: return run_bce(ctx, d->rows, d->cols, pred, d->unit, d->wf, loss, grad, NULL);
    default:
        return run_cross_entropy_smoothed(ctx, d->rows, d->cols, pred, d->labels, d->wf,
                                          SMOOTHING, loss, grad);
    }
}

static double loss_reference(const loss_data *d, const double *pred, double *grad)
{
    const size_t n = (size_t)d->rows * d->cols;
    switch (d->loss) {
    case MSE: return ref_mse(n, pred, d->target, grad);
    case HUBER: return ref_huber(n, pred, d->target, HUBER_DELTA, grad);
    case XENT: return ref_cross_entropy(d->rows, d->cols, pred, d->labels, grad);
    case BCE: return ref_bce(d->rows, d->cols, pred, d->unit, NULL, grad);
    case BCE_POS: return ref_bce(d->rows, d->cols, pred, d->unit, d->w, grad);
    default:
        return ref_cross_entropy_smoothed(d->rows, d->cols, pred, d->labels, d->w, SMOOTHING,
                                          grad);
    }
}

static double loss_estimate(const loss_data *d, const double *pred, double *egrad)
{
    const size_t n = (size_t)d->rows * d->cols;
    switch (d->loss) {
    case MSE: return est_mse_errors(n, pred, d->target, egrad);
    case HUBER: return est_huber_errors(n, pred, d->target, HUBER_DELTA, egrad);
    case XENT: return est_cross_entropy_errors(d->rows, d->cols, pred, d->labels, egrad);
    case BCE: return est_bce_errors(d->rows, d->cols, pred, d->unit, NULL, egrad);
    case BCE_POS: return est_bce_errors(d->rows, d->cols, pred, d->unit, d->w, egrad);
    default:
        return est_cross_entropy_smoothed_errors(d->rows, d->cols, pred, d->labels, d->w,
                                                 SMOOTHING, egrad);
    }
}

static const char *loss_name(const loss_data *d) { return names[d->loss]; }
static const char *input_name(const loss_data *d) { return d->loss >= XENT ? "logits" : "pred"; }

static int loss_vs_reference(fn_context *ctx, const loss_data *d, const double *pred)
{
    size_t n = (size_t)d->rows * d->cols;
    double *got = chk_alloc(n), *want = chk_alloc(n), *est = chk_alloc(n);
    char layer[40], shape[64], tensor[16];
    snprintf(layer, sizeof layer, "%s %s", loss_name(d), gc_backend_name(ctx));
    snprintf(tensor, sizeof tensor, "d%s", input_name(d));
    chk_shape(shape, sizeof shape, d->rows, d->cols, d->cols, 0, -1);
    double loss = 0;
    int ok = !failed(loss_run(ctx, d, pred, &loss, got), layer);
    if (ok) {
        double e_loss = loss_estimate(d, pred, est);
        double ref = loss_reference(d, pred, want);
        ok &= chk_compare_scalar(layer, shape, "loss", loss, ref, e_loss + RTOL * fabs(ref));
        ok &= chk_compare(layer, shape, tensor, got, want, d->rows, d->cols,
                          (chk_tol){.atol = 1, .rtol = RTOL, .scale = est});
    }
    free(got), free(want), free(est);
    return ok;
}

int gc_losses_vs_reference(fn_context *ctx, const gc_loss_case *c)
{
    chk_rng rng = chk_rng_seed(c->seed);
    size_t n = (size_t)c->rows * c->cols;
    double *pred = chk_alloc(n), *target = chk_alloc(n);
    int32_t *labels = alloc_labels(c->rows);
    chk_fill(pred, n, -c->scale, c->scale, &rng);
    chk_fill(target, n, -c->scale, c->scale, &rng);
    random_labels(labels, c->rows, c->cols, &rng);
    double *w;
    float *wf;
    make_weights(c->cols, &w, &wf);
    double *unit = unit_targets(target, n, c->scale);
    int ok = 1;
    for (int loss = 0; loss < N_LOSSES; loss++) {
        const loss_data d = {c->rows, c->cols, loss, target, labels, w, wf, unit};
        ok &= loss_vs_reference(ctx, &d, pred);
    }
    free(pred), free(target), free(labels), free(w), free(wf), free(unit);
    return ok;
}

int gc_losses_vs_reference_cases(fn_context *ctx)
{
    int ok = 1;
    for (size_t i = 0; i < GC_COUNT(cases); i++) {
        printf("-- %s\n", cases[i].why);
        ok &= gc_losses_vs_reference(ctx, &cases[i]);
    }
    return ok;
}

/* L is the loss value; its error e_L the largest estimate over the four
 * points. The losses' kernels stay fp32 in every math mode: h = 1e-2. */
static int loss_fd(fn_context *ctx, const loss_data *d, const double *pred, const double *dir)
{
    size_t n = (size_t)d->rows * d->cols;
    double h = 1e-2, *g = chk_alloc(n), *est = chk_alloc(n), *pts[4];
    fd_sample s = {0};
    fn_status st = FN_OK;
    for (int k = 0; k < 4; k++) {
        pts[k] = chk_alloc(n);
        fd_perturb(pts[k], pred, dir, fd_steps[k] * h, n);
        if (st == FN_OK)
            st = loss_run(ctx, d, pts[k], &s.l[k], NULL);
        double e = loss_estimate(d, pts[k], NULL);
        s.e_l = e > s.e_l ? e : s.e_l;
    }
    double loss;
    if (st == FN_OK)
        st = loss_run(ctx, d, pred, &loss, g);
    char layer[40], shape[64], what[32];
    snprintf(layer, sizeof layer, "%s %s fd", loss_name(d), gc_backend_name(ctx));
    snprintf(what, sizeof what, "<g,d> %s", input_name(d));
    chk_shape(shape, sizeof shape, d->rows, d->cols, d->cols, 0, -1);
    int ok = !failed(st, layer);
    if (ok) {
        loss_estimate(d, pred, est);
        fd_accumulate(&s, g, est, pts, n, h);
        ok = fd_verdict(layer, shape, what, h, &s);
    }
    for (int k = 0; k < 4; k++)
        free(pts[k]);
    free(g), free(est);
    return ok;
}

/* pred, target and the direction ~ U(-scale, scale), drawn anew for each
 * loss from one stream. */
int gc_losses_fd(fn_context *ctx, const gc_loss_case *c)
{
    chk_rng rng = chk_rng_seed(c->seed);
    size_t n = (size_t)c->rows * c->cols;
    double *pred = chk_alloc(n), *target = chk_alloc(n), *dir = chk_alloc(n);
    int32_t *labels = alloc_labels(c->rows);
    double *w;
    float *wf;
    make_weights(c->cols, &w, &wf);
    int ok = 1;
    for (int loss = 0; loss < N_LOSSES; loss++) {
        chk_fill(pred, n, -c->scale, c->scale, &rng);
        chk_fill(target, n, -c->scale, c->scale, &rng);
        chk_fill(dir, n, -c->scale, c->scale, &rng);
        random_labels(labels, c->rows, c->cols, &rng);
        double *unit = unit_targets(target, n, c->scale);
        loss_data d = {c->rows, c->cols, loss, target, labels, w, wf, unit};
        ok &= loss_fd(ctx, &d, pred, dir);
        free(unit);
    }
    free(pred), free(target), free(dir), free(labels), free(w), free(wf);
    return ok;
}

int gc_losses_fd_cases(fn_context *ctx)
{
    int ok = 1;
    for (size_t i = 0; i < GC_COUNT(fd_cases); i++) {
        printf("-- %s\n", fd_cases[i].why);
        ok &= gc_losses_fd(ctx, &fd_cases[i]);
    }
    return ok;
}
