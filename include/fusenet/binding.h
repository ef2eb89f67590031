/* binding.h — what a binding in another language (the Python package's
 * ctypes layer) asks the library instead of copying it: the value of a
 * public enum constant by its C name, and the size of each public struct
 * it mirrors field by field, so a binding that disagrees with the library
 * it loaded says so at load instead of reading the wrong bytes. */
#ifndef FUSENET_BINDING_H
#define FUSENET_BINDING_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *value = the constant `name` ("FN_ERR_IO", "FN_DATA_LABELS", "FN_CUDA",
 * "FN_COMM_WORLD", "FN_TRAIN_DONE", ...) of a public header;
 * FN_ERR_INVALID naming it when the library has no such constant. */
FN_API fn_status fn_binding_constant(const char *name, long long *value);

/* sizeof the public struct `name` ("fn_trainer_options", "fn_train_epoch",
 * ...), or 0 when the library has no such struct. */
FN_API size_t fn_binding_struct_size(const char *name);

#ifdef __cplusplus
}
#endif
#endif
