/* confusion.c — the confusion matrix and per-class scores of confusion.h,
 * counted in 64-bit integers, the scores in float64. */
#include <math.h>
#include <stdlib.h>

#include "fusenet/confusion.h"

struct fn_confusion {
    int classes;
    long long *counts; /* [classes, classes]: row the label, column the prediction */
};

enum { MOST_CLASSES = 1 << 16 };

fn_status fn_confusion_create(fn_confusion **out, int classes)
{
    *out = NULL;
    if (classes < 1 || classes > MOST_CLASSES)
        return fn_fail(FN_ERR_INVALID, "confusion matrix: %d classes; expected 1 to %d", classes,
                       MOST_CLASSES);
    fn_confusion *c = calloc(1, sizeof *c);
    long long *counts = calloc((size_t)classes * (size_t)classes, sizeof *counts);
    if (!c || !counts) {
        free(c);
        free(counts);
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a confusion matrix of %d classes",
                       classes);
    }
    *c = (fn_confusion){.classes = classes, .counts = counts};
    *out = c;
    return FN_OK;
}

void fn_confusion_destroy(fn_confusion *c)
{
    if (!c)
        return;
    free(c->counts);
    free(c);
}

fn_status fn_confusion_add(fn_confusion *c, int n, const int32_t *labels,
                           const int32_t *predicted)
{
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= c->classes || predicted[i] < 0 ||
            predicted[i] >= c->classes)
            return fn_fail(FN_ERR_INVALID, "confusion matrix: row %d: label %d or class %d "
                           "outside [0, %d)", i, labels[i], predicted[i], c->classes);
    for (int i = 0; i < n; i++)
        c->counts[(size_t)labels[i] * (size_t)c->classes + (size_t)predicted[i]]++;
    return FN_OK;
}

int fn_confusion_classes(const fn_confusion *c) { return c->classes; }

long long fn_confusion_count(const fn_confusion *c, int label, int predicted)
{
    return c->counts[(size_t)label * (size_t)c->classes + (size_t)predicted];
}

fn_class_scores fn_confusion_scores(const fn_confusion *c, int k)
{
    long long tp = fn_confusion_count(c, k, k), labelled = 0, predicted = 0;
    for (int j = 0; j < c->classes; j++) {
        labelled += fn_confusion_count(c, k, j);
        predicted += fn_confusion_count(c, j, k);
    }
    fn_class_scores s = {.support = labelled};
    s.precision = predicted ? (double)tp / (double)predicted : NAN;
    s.recall = labelled ? (double)tp / (double)labelled : NAN;
    s.f1 = predicted + labelled ? 2.0 * (double)tp / (double)(predicted + labelled) : NAN;
    return s;
}

/* The mean of the defined values, by weight. */
static void add_to(double *sum, double *weights, double v, double w)
{
    if (isnan(v))
        return;
    *sum += w * v;
    *weights += w;
}

fn_class_scores fn_confusion_average(const fn_confusion *c, int weighted)
{
    double p = 0, r = 0, f = 0, wp = 0, wr = 0, wf = 0;
    long long rows = 0;
    for (int k = 0; k < c->classes; k++) {
        const fn_class_scores s = fn_confusion_scores(c, k);
        const double w = weighted ? (double)s.support : 1.0;
        rows += s.support;
        add_to(&p, &wp, s.precision, w);
        add_to(&r, &wr, s.recall, w);
        add_to(&f, &wf, s.f1, w);
    }
    return (fn_class_scores){.precision = wp > 0 ? p / wp : NAN, .recall = wr > 0 ? r / wr : NAN,
                             .f1 = wf > 0 ? f / wf : NAN, .support = rows};
}
