/* h5_error.c — HDF5's own messages turned into fn_fail text, and HDF5's
 * printing turned off: the floor every other HDF5 helper stands on. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/h5_error.h"

/* H5dont_atexit: HDF5 1.10 cannot close a file whose write failed (a full
 * disk, RLIMIT_FSIZE): H5Fclose fails and leaves it half closed, and the
 * library's own clean-up at exit (H5_term_library) then crashed on it
 * (SIGSEGV in H5F__close_cb). Every file fusenet writes is closed (or
 * abandoned) explicitly, so nothing needs that clean-up; it must be asked
 * for before any other HDF5 call, which this is (every path into HDF5 goes
 * through here first), and is a no-op after. */
void fn_h5_quiet(void)
{
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

typedef struct h5_message {
    char text[256];
    int sys_errno; /* a failed read or write's errno, as HDF5's file driver reports it */
} h5_message;

static herr_t first_message(unsigned n, const H5E_error2_t *err, void *data)
{
    h5_message *m = data;
    if (n == 0 && err->desc)
        snprintf(m->text, sizeof m->text, "%s", err->desc);
    /* The sec2 driver's "file write failed: time = ..., errno = 28, error
     * message = '...', buf = 0x..." says the system's reason among
     * addresses: only the reason is kept. */
    const char *e = err->desc ? strstr(err->desc, "errno = ") : NULL;
    if (e && !m->sys_errno)
        m->sys_errno = atoi(e + 8);
    return 0;
}

fn_status fn_h5_fail(fn_status status, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    h5_message m = {{0}, 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_message, &m);
    H5Eclear2(H5E_DEFAULT);
    if (m.sys_errno > 0)
        return fn_fail(status, "%s: %s", text, strerror(m.sys_errno));
    if (m.text[0])
        return fn_fail(status, "%s: %s", text, m.text);
    return fn_fail(status, "%s", text);
}
