/* tensor_doubles.h — float64 test values into a tensor on any device, each
 * rounded once to float32 (chk_to_float). Include after <cmocka.h>. */
#ifndef FN_TEST_TENSOR_DOUBLES_H
#define FN_TEST_TENSOR_DOUBLES_H

#include "fusenet/tensor.h"

/* A new rows x cols tensor on device holding v[rows * cols]. */
fn_tensor doubles_upload(fn_device device, const double *v, int rows, int cols);
/* t's values replaced by v[fn_tensor_count(t)]. */
void doubles_put(fn_tensor *t, const double *v);

#endif
