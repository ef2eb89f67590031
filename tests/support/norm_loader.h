/* norm_loader.h — the input-norm tests' loader: one over a data set that
 * standardizes each batch with the statistics of that set. Include after
 * <cmocka.h>. */
#ifndef FN_TEST_NORM_LOADER_H
#define FN_TEST_NORM_LOADER_H

#include "fusenet/input_norm.h"
#include "fusenet/loader.h"

typedef struct norm_loader {
    fn_loader *loader;
    fn_input_norm *norm; /* d's statistics, as fn_input_norm_from_data computes them */
} norm_loader;

/* A loader over d on ctx in `mode` with two threads, standardizing with
 * d's statistics, started at `epoch`; fails the test on any error. */
void norm_loader_start(norm_loader *nl, fn_context *ctx, fn_data *d, fn_loader_mode mode,
                       int epoch);
/* The next batch into b; its row count, 0 at the end of the epoch. */
int norm_loader_next(norm_loader *nl, fn_batch *b);
/* The loader and its statistics destroyed (d stays open). */
void norm_loader_free(norm_loader *nl);

#endif
