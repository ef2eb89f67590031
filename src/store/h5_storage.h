/* h5_storage.h (private) — is a dataset's data all there? HDF5 reads what
 * it lacks as fill values (zeros) without an error: a dataset created but
 * never written, a chunked one with missing chunks, external raw storage
 * shorter than declared, a virtual dataset whose source is missing or that
 * maps nothing. Every loader (data sets, weights, checkpoints) checks a
 * dataset here before reading it, opens it through fn_h5_open_dataset (a
 * dangling or cyclic link is named as such) and reports a failed read
 * through fn_h5_read_fail (a filter this HDF5 lacks is named). */
#ifndef FUSENET_SRC_H5_STORAGE_H
#define FUSENET_SRC_H5_STORAGE_H

#include <hdf5.h>

#include "fusenet/status.h"

/* Opens dataset `name` under loc (the caller has seen that the link
 * exists). Errors name it: "<where>: 'X' is a dangling external link to
 * 'f.h5:/X' ...", "... is a cyclic link ...", else "<where>: 'X' is not a
 * readable dataset: <HDF5's reason>". */
fn_status fn_h5_open_dataset(hid_t loc, const char *where, const char *name, hid_t *set);

/* FN_ERR_FORMAT "<where>: dataset '<name>' ..." unless every value the
 * dataset declares is stored: in the file that holds it (an external link's
 * target, not the linking file), in its external raw files, or in the
 * sources of a virtual dataset (each checked in turn). */
fn_status fn_h5_check_storage(hid_t set, const char *where, const char *name);

/* FN_ERR_FORMAT "<where>: dataset '<name>' is compressed with filter 32000
 * 'lzf', which this HDF5 lacks ..." when its pipeline holds a filter this
 * HDF5 cannot run: checked before memory for the values is allocated, as
 * the read would fail only after. */
fn_status fn_h5_check_filters(hid_t set, const char *where, const char *name);

/* After a failed H5Dread of set: fn_h5_fail(status, fmt, ...), with the
 * filter named when the dataset's pipeline holds one this HDF5 lacks
 * (HDF5's own text is about its plugin directory). */
fn_status fn_h5_read_fail(hid_t set, fn_status status, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
