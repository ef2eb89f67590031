/* norm_loader.c — the standardizing loader of norm_loader.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "norm_loader.h"

void norm_loader_start(norm_loader *nl, fn_context *ctx, fn_data *d, fn_loader_mode mode,
                       int epoch)
{
    *nl = (norm_loader){0};
    assert_int_equal(fn_input_norm_from_data(&nl->norm, ctx, d, NULL, NULL, 0), FN_OK);
    const fn_loader_options opt = {.mode = mode, .threads = 2};
    assert_int_equal(fn_loader_create(&nl->loader, ctx, d, &opt), FN_OK);
    assert_int_equal(fn_loader_set_norm(nl->loader, nl->norm), FN_OK);
    assert_int_equal(fn_loader_start(nl->loader, epoch, 0), FN_OK);
}

int norm_loader_next(norm_loader *nl, fn_batch *b)
{
    assert_int_equal(fn_loader_next(nl->loader, b), FN_OK);
    return b->rows;
}

void norm_loader_free(norm_loader *nl)
{
    fn_loader_destroy(nl->loader);
    fn_input_norm_destroy(nl->norm);
    *nl = (norm_loader){0};
}
