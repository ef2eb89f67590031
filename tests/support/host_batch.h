/* host_batch.h — a data set's next batch gathered into host memory
 * (fn_data_next_rows, fn_batch_rows_gather), for the tests that compare
 * batches value by value. Include after <cmocka.h>. */
#ifndef FN_TEST_HOST_BATCH_H
#define FN_TEST_HOST_BATCH_H

#include <stdint.h>

#include "fusenet/data.h"

enum { HOST_BATCH_ROWS = 64, HOST_BATCH_COLS = 16 };

typedef struct host_batch {
    int rows, in, out;
    int has_labels, has_target;
    float x[HOST_BATCH_ROWS * HOST_BATCH_COLS], target[HOST_BATCH_ROWS * HOST_BATCH_COLS];
    int32_t labels[HOST_BATCH_ROWS];
    int64_t index[HOST_BATCH_ROWS];
} host_batch;

/* The set's next batch into *b (every other element zeroed); fails the
 * test when it does not fit. */
void next_batch(fn_data *d, host_batch *b);

#endif
