/* weights_impl.h (private) — the parts of the weights format that
 * checkpoint.c shares: the root attributes and the per-layer groups, on an
 * open HDF5 file. */
#ifndef FUSENET_SRC_WEIGHTS_IMPL_H
#define FUSENET_SRC_WEIGHTS_IMPL_H

#include <hdf5.h>

#include "fusenet/net.h"

/* Writes format, format_version, config, layers and one group per layer. */
fn_status fn_weights_write(hid_t file, const char *path, const char *format, const fn_net *net,
                           const char *config_text);
/* Checks format and version, then loads every layer's values into net. */
fn_status fn_weights_read(hid_t file, const char *path, const char *format, fn_net *net);

/* Copies a device tensor to new host memory (*host malloc'ed). */
fn_status fn_weights_to_host(const fn_tensor *t, float **host);

#endif
