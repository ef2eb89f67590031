/* runner.h — runs the library's layers and losses on a given context (CPU
 * or CUDA) from host float64 arrays whose values are float32 numbers, and
 * brings the results back as float64, so one test body serves both backends.
 * Every call returns the library's fn_status; the message is fn_last_error(). */
#ifndef FN_TEST_RUNNER_H
#define FN_TEST_RUNNER_H

#include <stdint.h>

#include "fusenet/block.h"
#include "fusenet/layer.h"
#include "reference.h"

/* A block with d's sizes, eps and slope (taken as float32) for up to
 * max_batch rows; its parameters are then whatever run_set_param puts. */
fn_status run_block_create(fn_layer **l, fn_context *ctx, const ref_block_dims *d, int max_batch);
fn_status run_linear_create(fn_layer **l, fn_context *ctx, int in, int out, int max_batch);

/* Uploads values (as many as the parameter holds) into parameter `name`. */
fn_status run_set_param(fn_layer *l, const char *name, const double *values);
/* Downloads the gradient of parameter `name`. */
fn_status run_get_grad(fn_layer *l, const char *name, double *out);
/* The same over the layer's whole fn_param list, in its order: values[i]
 * into l->params[i], l->params[i]'s gradient into grads[i]. */
fn_status run_set_params(fn_layer *l, double *const *values);
fn_status run_get_grads(fn_layer *l, double *const *grads);

/* y = forward(x); x [batch, in], y [batch, out]. */
fn_status run_forward(fn_layer *l, int batch, const double *x, double *y);
/* Zeroes the parameter gradients, then forward and backward from dy; y and
 * dx may be NULL (dx NULL: the layer is asked for no input gradient). */
fn_status run_forward_backward(fn_layer *l, int batch, const double *x, const double *dy,
                               double *y, double *dx);
/* The same with y and dy as views that start `offset` floats into their
 * allocations (offset 1: not 16-byte aligned, which sends the CUDA block to
 * its scalar kernels whatever the group width). */
fn_status run_forward_backward_at(fn_layer *l, int batch, const double *x, const double *dy,
                                  double *y, double *dx, int offset);

/* The losses: loss value and gradient (dpred may be NULL). */
fn_status run_mse(fn_context *ctx, int rows, int cols, const double *pred,
                  const double *target, double *loss, double *dpred);
/* fn_huber_loss (src/nn/losses/huber/huber.h) on float64 data, as run_mse. */
fn_status run_huber(fn_context *ctx, int rows, int cols, const double *pred, const double *target,
                    double delta, double *loss, double *dpred);
/* fn_bce_loss (src/nn/losses/bce/bce.h) on float64 data, as run_mse: pos_weight
 * [cols] (NULL: none); correct (may be NULL) the labels predicted right. */
fn_status run_bce(fn_context *ctx, int rows, int cols, const double *pred, const double *target,
                  const float *pos_weight, double *loss, double *dpred, int *correct);
/* fn_cross_entropy_smoothed_loss (src/nn/losses/cross_entropy/cross_entropy_options.h): class
 * weights [cols] (NULL: none) and label smoothing eps. */
fn_status run_cross_entropy_smoothed(fn_context *ctx, int rows, int cols, const double *logits,
                                     const int32_t *labels, const float *weights, double eps,
                                     double *loss, double *dlogits);
fn_status run_cross_entropy(fn_context *ctx, int rows, int cols, const double *logits,
                            const int32_t *labels, double *loss, double *dlogits);

/* Prints fn_last_error() with the call that failed, for test output. */
fn_status run_report(fn_status st, const char *what);

#endif
