/* evaluation.c — the figures of evaluation.h over a set, accumulated in
 * float64 batch by batch. R²'s SS_tot is kept as sums of (y - K) and
 * (y - K)² with K the column's first target, so a column with a large
 * offset loses nothing to cancellation. */
#include <math.h>
#include <stdlib.h>

#include "fusenet/evaluation.h"
#include "fusenet/loss_kind.h"

struct fn_evaluation {
    fn_data_targets kind;
    int out;
    long long rows, correct;
    double loss_sum;
    double *sse, *sae, *shift, *sy, *syy; /* [out] each, values only */
    double *mae, *r2;                     /* [out]: the last fn_evaluation_get */
};

fn_status fn_evaluation_create(fn_evaluation **out, fn_data_targets kind, int outputs)
{
    *out = NULL;
    if (outputs < 1 || (kind != FN_DATA_LABELS && kind != FN_DATA_FLOATS))
        return fn_fail(FN_ERR_INVALID, "fn_evaluation_create: bad arguments");
    fn_evaluation *e = calloc(1, sizeof *e);
    double *all = calloc((size_t)outputs * 7, sizeof(double));
    if (!e || !all) {
        free(e);
        free(all);
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    }
    *e = (fn_evaluation){.kind = kind, .out = outputs, .sse = all};
    size_t n = (size_t)outputs;
    e->sae = all + n;
    e->shift = all + 2 * n;
    e->sy = all + 3 * n;
    e->syy = all + 4 * n;
    e->mae = all + 5 * n;
    e->r2 = all + 6 * n;
    *out = e;
    return FN_OK;
}

void fn_evaluation_destroy(fn_evaluation *e)
{
    if (!e)
        return;
    free(e->sse);
    free(e);
}

static int argmax(const float *row, int cols)
{
    int best = 0;
    for (int j = 1; j < cols; j++)
        if (row[j] > row[best])
            best = j;
    return best;
}

/* -log softmax(row)[label], with the row's max subtracted first. */
static double cross_entropy(const float *row, int cols, int label)
{
    double m = row[argmax(row, cols)], sum = 0;
    for (int j = 0; j < cols; j++)
        sum += exp((double)row[j] - m);
    return m + log(sum) - (double)row[label];
}

static fn_status add_labels(fn_evaluation *e, int n, const float *y, const int32_t *labels)
{
    for (int i = 0; i < n; i++) {
        const float *row = y + (size_t)i * (size_t)e->out;
        if (labels[i] < 0 || labels[i] >= e->out)
            return fn_fail(FN_ERR_INVALID, "evaluation: label %d outside [0, %d)", labels[i],
                           e->out);
        e->loss_sum += cross_entropy(row, e->out, labels[i]);
        e->correct += argmax(row, e->out) == labels[i];
    }
    return FN_OK;
}

static void add_values(fn_evaluation *e, int n, const float *y, const float *t)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < e->out; j++) {
            size_t k = (size_t)i * (size_t)e->out + (size_t)j;
            if (e->rows == 0 && i == 0)
                e->shift[j] = t[k];
            double err = (double)y[k] - (double)t[k], c = (double)t[k] - e->shift[j];
            e->sse[j] += err * err;
            e->sae[j] += fabs(err);
            e->sy[j] += c;
            e->syy[j] += c * c;
        }
}

fn_status fn_evaluation_add(fn_evaluation *e, int n, const float *outputs,
                            const int32_t *labels, const float *targets)
{
    if (n < 0 || (n > 0 && !outputs) || (e->kind == FN_DATA_LABELS ? !labels : !targets))
        return fn_fail(FN_ERR_INVALID, "fn_evaluation_add: bad arguments");
    if (e->kind == FN_DATA_LABELS)
        FN_TRY(add_labels(e, n, outputs, labels));
    else
        add_values(e, n, outputs, targets);
    e->rows += n;
    return FN_OK;
}

void fn_evaluation_get(const fn_evaluation *e, fn_evaluation_result *r)
{
    const double rows = (double)e->rows;
    *r = (fn_evaluation_result){.rows = e->rows, .outputs = e->out, .accuracy = NAN};
    if (e->kind == FN_DATA_LABELS) {
        r->loss = e->rows ? e->loss_sum / rows : NAN;
        r->accuracy = e->rows ? (double)e->correct / rows : NAN;
        r->correct = e->correct;
        return;
    }
    double sse = 0;
    for (int j = 0; j < e->out; j++) {
        sse += e->sse[j];
        double sst = e->syy[j] - e->sy[j] * e->sy[j] / rows;
        e->mae[j] = e->rows ? e->sae[j] / rows : NAN;
        e->r2[j] = sst > 0 ? 1.0 - e->sse[j] / sst : NAN;
    }
    r->loss = e->rows ? sse / (rows * e->out) : NAN;
    r->mae = e->mae;
    r->r2 = e->r2;
}

/* cross_entropy's link, the one softmax of the library. */
void fn_softmax_rows(float *x, int rows, int cols)
{
    fn_cross_entropy_kind.probabilities(x, rows, cols);
}

void fn_argmax_rows(const float *x, int rows, int cols, int32_t *classes)
{
    for (int i = 0; i < rows; i++)
        classes[i] = argmax(x + (size_t)i * (size_t)cols, cols);
}
