/* cuda_absent_layer.h (private) — a layer's forward and backward on the GPU
 * in a build without CUDA: what every kind's cuda_absent_<kind>.c puts in its
 * GPU ops table (defined in nn/cuda_absent_nn.c, compiled in such a build
 * only); each fails naming the build option (core/cuda_absent.h). */
#ifndef FUSENET_NN_CUDA_ABSENT_LAYER_H
#define FUSENET_NN_CUDA_ABSENT_LAYER_H

#include "fusenet/layer.h"

fn_status fn_layer_absent_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y);
fn_status fn_layer_absent_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx);

#endif
