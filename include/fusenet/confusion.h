/* confusion.h — a classifier's confusion matrix over a set, as `predict
 * --targets y --report` prints it, and the per-class precision, recall and
 * F1 that follow from it (scikit-learn's confusion_matrix and
 * classification_report): counts[label][predicted]; for class k,
 * precision = TP / (TP + FP), recall = TP / (TP + FN), F1 their harmonic
 * mean, support the rows labelled k. A score whose denominator is 0 is
 * NaN (scikit-learn reports 0 with a warning). The macro average is the
 * plain mean over the classes with a defined score, the weighted one the
 * mean weighted by support. */
#ifndef FUSENET_CONFUSION_H
#define FUSENET_CONFUSION_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_confusion fn_confusion; /* opaque */

typedef struct fn_class_scores {
    double precision, recall, f1; /* NaN where undefined */
    long long support;            /* rows of the class (all rows, for an average) */
} fn_class_scores;

/* A matrix of classes x classes counts, all 0 (at most 65536 classes). */
FN_API fn_status fn_confusion_create(fn_confusion **c, int classes);
FN_API void fn_confusion_destroy(fn_confusion *c); /* NULL is fine */
/* n rows: their labels and predicted classes, each in [0, classes). */
FN_API fn_status fn_confusion_add(fn_confusion *c, int n, const int32_t *labels,
                                  const int32_t *predicted);
FN_API int fn_confusion_classes(const fn_confusion *c);
/* Rows labelled `label` and predicted `predicted`. */
FN_API long long fn_confusion_count(const fn_confusion *c, int label, int predicted);
/* Class k's scores. */
FN_API fn_class_scores fn_confusion_scores(const fn_confusion *c, int k);
/* The averages over the classes: macro (weighted = 0) or by support. */
FN_API fn_class_scores fn_confusion_average(const fn_confusion *c, int weighted);

#ifdef __cplusplus
}
#endif
#endif
