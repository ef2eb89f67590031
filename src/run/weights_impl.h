/* weights_impl.h (private) — the parts of the weights format that
 * checkpoint.c shares: the root attributes and the per-layer groups, on an
 * open HDF5 file. Reading is split so that a probe's child (h5util.h) can
 * read a file without touching the net's tensors: fn_weights_read_host is
 * the pure read, fn_weights_upload the real load's second half. */
#ifndef FUSENET_SRC_WEIGHTS_IMPL_H
#define FUSENET_SRC_WEIGHTS_IMPL_H

#include <hdf5.h>

#include "fusenet/net.h"

/* A file's parameter values on the host, in the net's parameter order. */
typedef struct fn_weights_host {
    float **values; /* [n_params], each [count of the parameter], malloc'ed */
    int n_params;
} fn_weights_host;

/* Writes format, format_version = version, config, layers and one group
 * per layer. */
fn_status fn_weights_write(hid_t file, const char *path, const char *format, int version,
                           const fn_net *net, const char *config_text);

/* Checks format and version and every layer against net's (kind, sizes,
 * the kind's attributes that must match; in a checkpoint, every attribute
 * of the kind), then reads every parameter's values into *host; net is
 * only read. On failure *host holds nothing. */
fn_status fn_weights_read_host(hid_t file, const char *path, const char *format,
                               const fn_net *net, fn_weights_host *host);
/* Copies values read by fn_weights_read_host into net's parameters. */
fn_status fn_weights_upload(fn_net *net, const fn_weights_host *host);
void fn_weights_host_free(fn_weights_host *host);

/* The root attributes format (= format) and format_version (one this
 * build reads, with the groups that version says the file holds). */
fn_status fn_weights_check_format(hid_t file, const char *path, const char *format);

/* fn_weights_read_host, then fn_weights_upload. */
fn_status fn_weights_read(hid_t file, const char *path, const char *format, fn_net *net);

/* Copies a device tensor to new host memory (*host malloc'ed). */
fn_status fn_weights_to_host(const fn_tensor *t, float **host);

#endif
