/* memory_set.h — a data set a program holds in memory: float32 inputs
 * [N, in] and integer class labels [N] (cross_entropy) or float32 targets
 * [N, out] (mse), taken by the trainer for [data] train or valid in place
 * of an HDF5 file (fn_config_use_memory_set, config.h) and opened by the
 * data layer like a file (fn_data_open_source, data.h): the same slabs,
 * shuffle, loader and standardisation, so one seed gives the same weights
 * from a memory set as from a file holding the same values.
 *
 * The set copies the caller's arrays when it is made: the values it
 * checked (every input and target finite) are the values it trains on,
 * whatever the program does with its arrays afterwards, and a run stays
 * reproducible. The cost is one copy of the set in host memory; a set that
 * does not fit twice belongs in an HDF5 file, which is read in slabs.
 *
 * Labels are checked against the model's outputs when a set is opened for
 * a run (a label of 10 for a model of 10 outputs fails there, naming the
 * row). Errors name the set by the name given here ("memory set 'train'"). */
#ifndef FUSENET_MEMORY_SET_H
#define FUSENET_MEMORY_SET_H

#include "fusenet/api.h"

#include <stddef.h>
#include <stdint.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fn_memory_set fn_memory_set; /* opaque */

/* A set of `rows` inputs (row-major [rows, in]) and a class label per row
 * (labels [rows], for cross_entropy). name (for messages) is copied; NULL
 * reads "memory". */
FN_API fn_status fn_memory_set_labels(fn_memory_set **set, const char *name, const float *inputs,
                                      int64_t rows, int in, const int32_t *labels);

/* A set of inputs and float targets (row-major [rows, out], for mse). */
FN_API fn_status fn_memory_set_values(fn_memory_set **set, const char *name, const float *inputs,
                                      int64_t rows, int in, const float *targets, int out);

/* A set of inputs alone (predictions, evaluation of outputs). */
FN_API fn_status fn_memory_set_inputs(fn_memory_set **set, const char *name, const float *inputs,
                                      int64_t rows, int in);

/* Gives a set of labels or values a weight per row (scikit-learn's
 * sample_weight; weights [rows], copied): each finite and >= 0, at least
 * one above 0, else FN_ERR_INVALID naming the row. A loss then counts row
 * n w_n times in its mean (fn_loss_targets, loss_kind.h), in training
 * and, for a validation set with weights, in the validation loss. The
 * weights travel with their rows through slabs, shuffles, batches and
 * ranks' shares. Supported on the CPU only: a trainer on the GPU refuses
 * a set with weights. Calling it again replaces the weights. */
FN_API fn_status fn_memory_set_weights(fn_memory_set *set, const float *weights);

FN_API void fn_memory_set_destroy(fn_memory_set *set); /* NULL is fine */

FN_API const char *fn_memory_set_name(const fn_memory_set *set);
FN_API int64_t fn_memory_set_rows(const fn_memory_set *set);
FN_API int fn_memory_set_in_features(const fn_memory_set *set);
/* Target columns of a set of values; 0 for labels or inputs alone. */
FN_API int fn_memory_set_target_columns(const fn_memory_set *set);
FN_API int fn_memory_set_has_labels(const fn_memory_set *set);
/* The host memory of its copies. */
FN_API size_t fn_memory_set_bytes(const fn_memory_set *set);

/* The copies, for the data layer (data.h): [rows, in], and labels [rows]
 * or targets [rows, out] (NULL when the set has none). */
FN_API const float *fn_memory_set_input_data(const fn_memory_set *set);
FN_API const int32_t *fn_memory_set_label_data(const fn_memory_set *set);
FN_API const float *fn_memory_set_target_data(const fn_memory_set *set);
/* The rows' weights [rows], or NULL: none (fn_memory_set_weights). */
FN_API const float *fn_memory_set_weight_data(const fn_memory_set *set);

#ifdef __cplusplus
}
#endif
#endif
