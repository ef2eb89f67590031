/* status.h — error status codes and the per-thread "last error" message.
 *
 * Every fallible call in fusenet returns an fn_status and, on failure, leaves
 * a message saying what failed and where ("config.ini:12: lr: expected a
 * number, got 'fast'"). The library never prints and never exits; programs
 * read the message with fn_last_error() and decide. */
#ifndef FUSENET_STATUS_H
#define FUSENET_STATUS_H

#include "fusenet/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fn_status {
    FN_OK = 0,
    FN_ERR_INVALID,     /* a bad argument: shape, size, NULL pointer, option */
    FN_ERR_NOMEM,       /* host or device allocation failed */
    FN_ERR_IO,          /* a file is missing, unreadable or unwritable */
    FN_ERR_FORMAT,      /* a file is readable but its content is wrong */
    FN_ERR_CUDA,        /* a CUDA, cuBLAS or cuRAND call failed */
    FN_ERR_NODEV,       /* no GPU, or not the one asked for */
    FN_ERR_NUMERIC,     /* a value went non-finite */
    FN_ERR_INTERRUPTED, /* stopped by a signal */
    FN_ERR_RANKS_DIFFER /* the ranks of a world run different configs or data: every rank
                         * failed at once with the same message */
} fn_status;

/* The message of the most recent failure on this thread ("" if none). */
FN_API const char *fn_last_error(void);

/* A short fixed name for a status ("invalid argument", ...). */
FN_API const char *fn_status_name(fn_status status);

/* Records a printf-style message as the last error and returns `status`, so
 * failures read `return fn_fail(FN_ERR_INVALID, "groups %d ...", g);`. */
FN_API fn_status fn_fail(fn_status status, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Puts `prefix` (printf-style) in front of the current message, so a caller
 * can add where it was: fn_error_prefix("%s: ", path). Returns nothing. */
FN_API void fn_error_prefix(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;

FN_API void fn_clear_error(void);

/* Propagate a failure unchanged: FN_TRY(fn_tensor_alloc(...)); */
#define FN_TRY(call)                          \
    do {                                      \
        fn_status fn_try_status_ = (call);    \
        if (fn_try_status_ != FN_OK)          \
            return fn_try_status_;            \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
