/* memory.c — how much memory a run on a context can still take
 * (fn_context_memory_available), so the sizes of a network can be checked
 * against it before anything is allocated. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/device_impl.h"
#include "core/cuda_runtime.h"

/* MemAvailable of /proc/meminfo (what the kernel can give without
 * swapping, page cache included); sysconf's free pages where there is no
 * /proc. 0 when neither says. */
static double host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    if (kib >= 0)
        return kib * 1024.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}

fn_status fn_context_memory_available(const fn_context *ctx, double *bytes, const char **source)
{
    if (!ctx || !bytes || !source)
        return fn_fail(FN_ERR_INVALID, "fn_context_memory_available: a NULL argument");
    if (ctx->device == FN_CUDA) {
        size_t free_bytes = 0, total = 0;
        FN_TRY(fn_cuda_memory_free(ctx->gpu, &free_bytes, &total));
        *bytes = (double)free_bytes;
        *source = "free GPU memory";
        return FN_OK;
    }
    *bytes = host_available();
    *source = "available host memory";
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
        ((double)as.rlim_cur < *bytes || *bytes == 0)) {
        *bytes = (double)as.rlim_cur;
        *source = "RLIMIT_AS";
    }
    return FN_OK;
}
