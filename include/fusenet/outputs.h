/* outputs.h — a file of predictions: dataset 'outputs', float32 [rows, cols]
 * (and for classification, optionally, 'classes', int32 [rows]),
 * written in runs of consecutive rows to a temporary and renamed over the
 * path only when every row is in (so a failed or interrupted run never
 * leaves a half-written file in place of a good one). */
#ifndef FUSENET_OUTPUTS_H
#define FUSENET_OUTPUTS_H

#include "fusenet/api.h"

#include <stdint.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_outputs fn_outputs;

FN_API fn_status fn_outputs_create(fn_outputs **out, const char *path, int64_t rows, int cols);
/* rows [row0, row0 + n) from host memory, [n, cols] row-major; a value
 * that is not finite fails (FN_ERR_NUMERIC) naming its row, so no file
 * with one is ever committed. */
FN_API fn_status fn_outputs_write(fn_outputs *o, int64_t row0, int n, const float *host);
/* Adds dataset 'classes', int32 [rows] (before the first write). */
FN_API fn_status fn_outputs_add_classes(fn_outputs *o);
/* classes of rows [row0, row0 + n). */
FN_API fn_status fn_outputs_write_classes(fn_outputs *o, int64_t row0, int n, const int32_t *classes);
/* Renames the finished file over the path. */
FN_API fn_status fn_outputs_commit(fn_outputs *o);
/* Frees o; an uncommitted temporary is removed, the path left untouched. */
FN_API void fn_outputs_destroy(fn_outputs *o); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
