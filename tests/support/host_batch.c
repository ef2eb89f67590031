/* host_batch.c — a batch gathered on the host (host_batch.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "host_batch.h"

void next_batch(fn_data *d, host_batch *b)
{
    fn_batch_rows r;
    EXPECT_OK(fn_data_next_rows(d, &r));
    assert_true(r.rows <= HOST_BATCH_ROWS && r.in <= HOST_BATCH_COLS && r.out <= HOST_BATCH_COLS);
    *b = (host_batch){.rows = r.rows, .in = r.in, .out = r.out, .has_labels = r.labels != NULL,
                      .has_target = r.target != NULL};
    fn_batch_rows_gather(&r, 0, r.rows, b->x, b->labels, b->target, b->index);
}
