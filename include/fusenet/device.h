/* device.h — where computation runs: the device, the matrix math mode and the
 * context that carries them (on the GPU: the cuBLAS handle, the stream and the
 * workspaces). Every layer, loss and optimiser is created against a context. */
#ifndef FUSENET_DEVICE_H
#define FUSENET_DEVICE_H

#include "fusenet/api.h"

#include <stddef.h>

#include "fusenet/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_device { FN_CPU = 0, FN_CUDA = 1 } fn_device;

/* How the three matrix products of a layer are computed on the GPU. The CPU
 * always computes in strict fp32. */
typedef enum fn_math {
    FN_MATH_FP32 = 0, /* strict IEEE fp32 (default) */
    FN_MATH_TF32,     /* tensor cores, operands rounded to TF32 */
    FN_MATH_TF32X3,   /* operands split into TF32 part + remainder, 3 products */
    FN_MATH_BF16      /* operands rounded to bfloat16, fp32 accumulation; fp32
                       * master weights, optimiser state, statistics (docs/gpus.md) */
} fn_math;
/* How many modes there are: device.c's table of names is checked against
 * it when it compiles. */
enum { FN_MATH_MODES = FN_MATH_BF16 + 1 };

typedef struct fn_context fn_context; /* opaque */

/* Number of usable CUDA devices; 0 when there is no GPU or no driver. */
FN_API int fn_cuda_device_count(void);

/* Creates a context. For FN_CUDA, `gpu` selects the device (0-based); a
 * missing GPU is FN_ERR_NODEV with a message saying so. */
FN_API fn_status fn_context_create(fn_context **ctx, fn_device device, int gpu, fn_math math);
FN_API void fn_context_destroy(fn_context *ctx); /* NULL is fine */

FN_API fn_device fn_context_device(const fn_context *ctx);
FN_API fn_math fn_context_math(const fn_context *ctx);

/* What the context computes on, for people and provenance (provenance.h):
 * "cpu", or "cuda:0 NVIDIA H100 80GB HBM3" (the GPU's ordinal and name);
 * snprintf's rules. */
FN_API void fn_context_describe(const fn_context *ctx, char *buf, size_t cap);

/* The memory a run on this context can still take, in bytes: on the GPU
 * its free memory (cudaMemGetInfo); on the CPU the host's available memory
 * (MemAvailable of /proc/meminfo, else sysconf's available pages), capped
 * by RLIMIT_AS when one is set. *source names it for messages ("free GPU
 * memory", "available host memory", "RLIMIT_AS"). */
FN_API fn_status fn_context_memory_available(const fn_context *ctx, double *bytes, const char **source);

/* Waits for all work queued on the context (a no-op on the CPU). */
FN_API fn_status fn_context_sync(fn_context *ctx);

/* On the GPU: the context queues its work on `stream` (a cudaStream_t of
 * the context's GPU; 0 is the legacy default stream), another library's
 * stream such as PyTorch's current one, until fn_context_own_stream. What
 * was queued before is ordered before what follows (an event on the old
 * stream that the new one waits for), both ways, unless one stream is being
 * captured into a CUDA graph and the other is not: then the caller orders
 * them (PyTorch synchronises before torch.cuda.graph captures), since no
 * wait may cross a capture's edge. A caller's stream under capture works
 * as any other: what the context's calls queue there is captured, with no
 * allocation or synchronisation of the library's (block_memory.h's calls
 * on arrays the caller allocated before). The caller keeps the
 * stream alive while the context uses it. The context's own copies
 * (fn_tensor_upload, _download) stay ordered by its own stream only.
 * FN_ERR_INVALID on the CPU. */
FN_API fn_status fn_context_use_stream(fn_context *ctx, void *stream);
FN_API fn_status fn_context_own_stream(fn_context *ctx);

FN_API const char *fn_device_name(fn_device device); /* "cpu", "cuda" */
FN_API const char *fn_math_name(fn_math math);       /* "fp32", "tf32", "tf32x3", "bf16" */
/* Parses "fp32", "tf32", "tf32x3" or "bf16"; FN_ERR_INVALID otherwise. */
FN_API fn_status fn_math_parse(const char *text, fn_math *math);
/* "fp32, tf32, tf32x3 or bf16" (every mode's name) into buf; returns buf. */
FN_API const char *fn_math_list(char *buf, size_t cap);

/* How a math mode computes a layer's products on the GPU, one row a mode
 * (device.c's table): the kernels and the block ask it instead of naming
 * modes. */
typedef struct fn_math_policy {
    const char *name;       /* "tf32x3": its [run] math value */
    int tensor_cores;       /* fp32 operands on TF32 tensor cores (cuBLAS's FAST_TF32) */
    int split;              /* each operand split into a TF32 part and its remainder: three
                             * products, in a workspace of the splits */
    int bf16_operands;      /* operands rounded to bfloat16 (fp32 accumulation); the block
                             * keeps z, dz and a weight copy as bfloat16 in its workspace */
    int transposed_dweight; /* the block's dW product reads transposes it makes first */
} fn_math_policy;
/* The row of a mode; every mode a context holds has one (NULL: not a mode). */
FN_API const fn_math_policy *fn_math_policy_of(fn_math math);

#ifdef __cplusplus
}
#endif
#endif
