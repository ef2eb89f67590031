/* cpu_backend.h (private) — the CPU counterparts of cuda_backend.h: every
 * function of the src/..._cpu.c files that the device-independent code
 * calls once it has validated the arguments; they trust shapes and devices. */
#ifndef FUSENET_SRC_CPU_BACKEND_H
#define FUSENET_SRC_CPU_BACKEND_H

#include <stdint.h>

#include "fusenet/sgd.h"
#include "fusenet/tensor.h"

/* src/loss_cpu.c */
fn_status fn_cpu_mse_loss(const fn_tensor *pred, const fn_tensor *target, fn_tensor *loss,
                          fn_tensor *dpred);
fn_status fn_cpu_cross_entropy_loss(const fn_tensor *logits, const int32_t *labels,
                                    fn_tensor *loss, fn_tensor *dlogits);
fn_status fn_cpu_count_correct(const fn_tensor *logits, const int32_t *labels, int *correct);

/* src/sgd_cpu.c */
fn_status fn_cpu_sgd_update(fn_tensor *value, const fn_tensor *grad, fn_tensor *momentum_buf,
                            const fn_sgd_config *cfg, int first_step);

#endif
