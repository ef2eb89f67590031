/* layer_specs.c — the tests' layer specs (layer_specs.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expect.h"
#include "layer_specs.h"

fn_layer_spec kind_spec(const char *kind, int width)
{
    const fn_layer_kind *k = NULL;
    EXPECT_OK(fn_layer_kind_find(kind, &k));
    return (fn_layer_spec){.kind = k, .width = width};
}

fn_layer_hparams default_hparams(int groups)
{
    return (fn_layer_hparams){.groups = groups, .eps = 1e-5f, .negative_slope = 0.01f};
}
