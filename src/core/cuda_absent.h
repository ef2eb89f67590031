/* cuda_absent.h (private) — the answer of a build without CUDA (FN_CUDA=OFF,
 * or no CUDA toolkit found) to a call that needs it. Each layer's
 * cuda_absent*.c (compiled in such a build instead of kernels/) answers
 * its host C's calls into kernels/ with it. Only creating a CUDA context
 * or allocating GPU memory can reach it: every other call needs one of
 * those first. */
#ifndef FUSENET_CORE_CUDA_ABSENT_H
#define FUSENET_CORE_CUDA_ABSENT_H

#include "fusenet/status.h"

/* FN_ERR_NODEV, "<what>: this build of fusenet has no CUDA backend ...",
 * naming the build option that adds it. */
fn_status fn_cuda_absent(const char *what);

#endif
