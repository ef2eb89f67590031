/* cross_entropy_options.h (private) — softmax cross-entropy with class
 * weights and label smoothing, as torch.nn.CrossEntropyLoss(weight,
 * label_smoothing) with mean reduction: per row n of logits x with label
 * y, lp = log_softmax(x_n), w the class weights (all 1 when none),
 * eps the smoothing, C the classes and W = sum_n w[y_n] (the weighted
 * mean's normaliser, torch's):
 *   loss = sum_n [ (1 - eps) w[y_n] (-lp[y_n]) + (eps / C) sum_c w[c] (-lp[c]) ] / W
 *   dx_n = [ (1 - eps) w[y_n] (p - onehot(y_n)) + (eps / C) (sum_c w[c] p - w) ] / W,
 * p = softmax(x_n). With sample weights r_n (row_weights) each row's
 * bracket is multiplied by r_n and W = sum_n r_n w[y_n]: PyTorch's
 * reduction='none' losses l_n summed as sum(r l) / sum(r w[y]).
 * Without weights and smoothing it is fn_cross_entropy_loss, which
 * cross_entropy_kind.c then calls, so those results are its bit for bit.
 * CPU: src/nn/losses/cross_entropy/cross_entropy_options_cpu.c; CUDA:
 * kernels/nn/losses/cross_entropy/cross_entropy_options_cuda.cu, whose kernels take the weights by
 * value (at most FN_CE_MAX_WEIGHTS classes), so a CUDA graph captures them
 * without a copy. */
#ifndef FUSENET_NN_CROSS_ENTROPY_OPTIONS_H
#define FUSENET_NN_CROSS_ENTROPY_OPTIONS_H

#include <stdint.h>

#include "fusenet/loss_kind.h"
#include "fusenet/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FN_CE_MAX_WEIGHTS = 4096 }; /* 16 KiB of kernel arguments (CUDA 12.1+ take 32 KiB) */

/* The cross_entropy kind's options block: [train] class_weights, label_smoothing. */
typedef struct fn_cross_entropy_options {
    fn_option_list class_weights; /* [classes] each >= 0, or empty: none */
    float label_smoothing;        /* [0, 1]; 0 */
} fn_cross_entropy_options;

/* The weights (NULL: none) and smoothing of one call, and the rows'
 * sample weights r (fn_loss_targets.weights): row n counts r_n times in
 * both sums, loss = sum_n r_n [...] / sum_n r_n w[y_n] (the CPU only; the
 * GPU refuses them). */
typedef struct fn_ce_smoothing {
    const float *weights; /* [cols] or NULL */
    float eps;
    const float *row_weights; /* [rows] in host memory, or NULL: every row 1 */
} fn_ce_smoothing;

/* The loss into loss [1, 1], dlogits (may be NULL) assigned; labels on the
 * logits' device, each in [0, cols) (the CPU checks); s->weights, when
 * given, [cols]. The checked entry, then its halves. */
fn_status fn_cross_entropy_smoothed_loss(fn_context *ctx, const fn_tensor *logits,
                                         const int32_t *labels, const fn_ce_smoothing *s,
                                         fn_tensor *loss, fn_tensor *dlogits);
fn_status fn_cpu_cross_entropy_smoothed(const fn_tensor *logits, const int32_t *labels,
                                        const fn_ce_smoothing *s, fn_tensor *loss,
                                        fn_tensor *dlogits);
fn_status fn_cuda_cross_entropy_smoothed(fn_context *ctx, const fn_tensor *logits,
                                         const int32_t *labels, const fn_ce_smoothing *s,
                                         fn_tensor *loss, fn_tensor *dlogits);
/* The same value's partial sums and the correct counts for a loss tally
 * (loss_kind.h, partials). */
fn_status fn_cuda_cross_entropy_smoothed_partials(fn_context *ctx, const fn_tensor *logits,
                                                  const int32_t *labels, const fn_ce_smoothing *s,
                                                  fn_tensor *dlogits, fn_loss_partials *p);

#ifdef __cplusplus
}
#endif
#endif
