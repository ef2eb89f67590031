/* provenance_impl.h (private) — the group /provenance on an open HDF5 file
 * (provenance.h), for the writers of weights and checkpoints. */
#ifndef FUSENET_RUN_PROVENANCE_IMPL_H
#define FUSENET_RUN_PROVENANCE_IMPL_H

#include <hdf5.h>

#include "fusenet/provenance.h"

/* The group /provenance of file with one scalar string attribute per entry
 * of prov, and provenance_version; prov NULL: no group. `path` names the
 * file in messages. */
fn_status fn_provenance_write(hid_t file, const char *path, const fn_provenance *prov);

#endif
