/* tensor_doubles.c — float64 test values into tensors (tensor_doubles.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "check.h"
#include "expect.h"
#include "tensor_doubles.h"

fn_tensor doubles_upload(fn_device device, const double *v, int rows, int cols)
{
    fn_tensor t;
    EXPECT_OK(fn_tensor_alloc(&t, rows, cols, device));
    doubles_put(&t, v);
    return t;
}

void doubles_put(fn_tensor *t, const double *v)
{
    const size_t n = fn_tensor_count(t);
    float *f = chk_alloc_float(n);
    chk_to_float(f, v, n);
    EXPECT_OK(fn_tensor_upload(t, f, n));
    free(f);
}
