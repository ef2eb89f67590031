/* h5_probe.h (private) — the probe: HDF5 1.10 can itself crash or hang on a
 * corrupt file (h5_probe.c says how), so the loaders (fn_data_open,
 * fn_weights_load and _build, fn_checkpoint_load) first run their
 * open-and-read path in a forked child process. */
#ifndef FUSENET_SRC_H5_PROBE_H
#define FUSENET_SRC_H5_PROBE_H

#include <stdint.h>

#include "fusenet/status.h"

/* A hang is a bug in HDF5: a weights file, a checkpoint or a set's metadata
 * is read in well under a second, so a minute is generous. */
#define FN_H5_PROBE_SECONDS 60.0

typedef struct fn_h5_child fn_h5_child; /* the probe's end in the child */
typedef fn_status (*fn_h5_probe_fn)(fn_h5_child *probe, void *arg);

/* Runs check(probe, arg) in a child process, which has timeout_s seconds
 * (and the same again after each fn_h5_probe_alive). FN_OK when check
 * returned FN_OK there (*verified, which may be NULL, is then 1) or no
 * child could be started (*verified 0: the caller runs its path in full
 * itself, as it would without the probe). When check failed cleanly, its
 * status and message: the caller does not read that file again, since
 * HDF5 1.10 can damage its own heap on a corrupt file and still return an
 * error. Otherwise
 * FN_ERR_FORMAT "<path>: corrupt HDF5 file: the HDF5 library crashed
 * (signal S) reading it" or "... did not finish reading it within N s"
 * (the child is killed), or FN_ERR_NOMEM when something else killed it. */
fn_status fn_h5_probe(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                      int *verified);
/* fn_h5_probe, and what the check handed back with fn_h5_probe_result
 * into *result (NULL: not wanted; 0 unless *verified is 1): a check that
 * reads a whole file can pass on what it learnt (a data set's checksum),
 * so the caller need not read the file again to learn it. */
fn_status fn_h5_probe_for(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                          int *verified, uint64_t *result);
/* In check: the value fn_h5_probe_for hands its caller (probe NULL: not
 * in a probe, nothing happens). */
void fn_h5_probe_result(fn_h5_child *probe, uint64_t value);
/* In check: a step is done and the next may take `seconds` (probe NULL:
 * not in a probe, nothing happens). */
void fn_h5_probe_alive(fn_h5_child *probe, double seconds);

/* For tests and fuzz harnesses only, never for the library or the programs
 * (one setting per process, made before the first probe): no child at all
 * (a fuzzer stays fast and sees every path; fn_h5_probe then returns FN_OK,
 * *verified 0), a cap on every allowance, so an input that hangs HDF5
 * costs seconds, and a function the child runs first (after its stdout and
 * stderr went to /dev/null and its crash signals to their defaults), to
 * undo a fuzzer's crash hooks, restore a sanitizer's handlers or keep the
 * child's sanitizer report. NULL: the defaults. */
typedef struct fn_h5_probe_testing {
    int in_process;           /* 1: no child */
    double max_seconds;       /* 0: no cap */
    void (*child_init)(void); /* NULL: none */
} fn_h5_probe_testing;
void fn_h5_probe_set_testing(const fn_h5_probe_testing *testing);

#endif
