/* status.c — the per-thread last-error message behind fn_fail and
 * fn_last_error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fusenet/status.h"

enum { FN_ERROR_CAPACITY = 1024 };

static _Thread_local char last_error[FN_ERROR_CAPACITY];

const char *fn_last_error(void) { return last_error; }

void fn_clear_error(void) { last_error[0] = '\0'; }

const char *fn_status_name(fn_status status)
{
    switch (status) {
    case FN_OK: return "ok";
    case FN_ERR_INVALID: return "invalid argument";
    case FN_ERR_NOMEM: return "out of memory";
    case FN_ERR_IO: return "i/o error";
    case FN_ERR_FORMAT: return "bad file content";
    case FN_ERR_CUDA: return "CUDA error";
    case FN_ERR_NODEV: return "no such device";
    case FN_ERR_NUMERIC: return "non-finite value";
    case FN_ERR_INTERRUPTED: return "interrupted";
    case FN_ERR_RANKS_DIFFER: return "the ranks differ";
    }
    return "unknown status";
}

fn_status fn_fail(fn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void fn_error_prefix(const char *fmt, ...)
{
    char prefix[FN_ERROR_CAPACITY];
    char message[FN_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(message, last_error, sizeof message);
    /* A message too long for the buffer is cut, never overrun. */
    if (snprintf(last_error, sizeof last_error, "%s%s", prefix, message) < 0)
        last_error[0] = '\0';
}
