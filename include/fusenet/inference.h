/* inference.h — a network's outputs for rows a program holds in memory:
 * the rows of a memory set (memory_set.h) go the way every batch goes (a
 * set opened on them, the loader putting each batch on the network's
 * device and standardising it with the given statistics, the forward
 * pass), and the outputs come back to host memory in the set's order.
 * Outputs are the last layer's values: logits for a classifier (argmax
 * them, or softmax them with fn_softmax_rows, evaluation.h). A network
 * built to predict (fn_weights_build, or from a safetensors file) gives a
 * row the same bits in any batch and at any place in it, on either device
 * and in every math mode (its products reduce each output in one fixed
 * order); a trainer's network computes as training does (BLAS, cuBLAS),
 * and its outputs may differ in the last bits between batch sizes. */
#ifndef FUSENET_INFERENCE_H
#define FUSENET_INFERENCE_H

#include "fusenet/api.h"

#include "fusenet/input_norm.h"
#include "fusenet/memory_set.h"
#include "fusenet/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* outputs [rows, fn_net_out_features(net)] (host memory) for the set's
 * inputs, in batches of up to fn_net_max_batch(net) rows. norm: the
 * standardisation the network was trained with (fn_trainer_input_norm,
 * or fn_input_norm_load of its weights file), on the net's context; NULL:
 * none. The set's columns must be the network's inputs; its targets, if
 * any, are not used. A network trained on standardised targets gives
 * standardised outputs: fn_target_norm_undo (with fn_trainer_target_norm,
 * or fn_target_norm_load of its weights file) maps them back. */
FN_API fn_status fn_infer(fn_net *net, const fn_input_norm *norm, const fn_memory_set *set,
                          float *outputs);

#ifdef __cplusplus
}
#endif
#endif
