/* h5_error.h (private) — HDF5's errors as fusenet's: the one helper below
 * every other HDF5 helper (h5util.h, h5_storage.h). */
#ifndef FUSENET_STORE_H5_ERROR_H
#define FUSENET_STORE_H5_ERROR_H

#include <hdf5.h>

#include "fusenet/status.h"

/* Turns off HDF5's printing of error stacks (the library never prints). */
void fn_h5_quiet(void);

/* fn_fail with ": <HDF5's innermost message>" appended when there is one. */
fn_status fn_h5_fail(fn_status status, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
