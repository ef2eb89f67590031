/* h5util.h (private) — the HDF5 plumbing shared by data.c, weights.c and
 * checkpoint.c: HDF5's own messages turned into fn_fail text, attribute and
 * dataset helpers whose errors name the file and object, the atomic write
 * (temporary name, fsync, rename) and the probe that reads a file in a
 * child process first. */
#ifndef FUSENET_SRC_H5UTIL_H
#define FUSENET_SRC_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>

#include "fusenet/status.h"

/* Turns off HDF5's printing of error stacks (the library never prints). */
void fn_h5_quiet(void);

/* fn_fail with ": <HDF5's innermost message>" appended when there is one. */
fn_status fn_h5_fail(fn_status status, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "float32", "int64", "uint8", "string", ... */
void fn_h5_type_name(hid_t type, char *buf, size_t n);

/* Opens an existing file read-only; errors name the path. */
fn_status fn_h5_open_read(hid_t *file, const char *path);

/* Creates "<path>.tmp" (truncating); *tmp is malloc'ed. */
fn_status fn_h5_create_tmp(hid_t *file, const char *path, char **tmp);
/* Closes file, fsyncs the temporary, renames it over path and fsyncs the
 * directory. On failure the temporary is removed and path is untouched. */
fn_status fn_h5_commit(hid_t file, const char *tmp, const char *path);
/* Closes and removes an unfinished temporary. */
void fn_h5_abandon(hid_t file, const char *tmp);

/* Attributes of obj; `where` names obj in messages ("w.h5: group 'layer0'"). */
fn_status fn_h5_put_string(hid_t obj, const char *where, const char *name, const char *value);
fn_status fn_h5_put_int(hid_t obj, const char *where, const char *name, long long value);
fn_status fn_h5_put_double(hid_t obj, const char *where, const char *name, double value);
/* *value is malloc'ed; both fixed and variable length strings are read. */
fn_status fn_h5_get_string(hid_t obj, const char *where, const char *name, char **value);
fn_status fn_h5_get_int(hid_t obj, const char *where, const char *name, long long *value);
fn_status fn_h5_get_double(hid_t obj, const char *where, const char *name, double *value);

/* A float32 dataset of rank 1 or 2 (dims[0] only when rank is 1). Refuses
 * (FN_ERR_NUMERIC) to write a non-finite value: a file with a NaN is never a
 * good one to keep. */
fn_status fn_h5_put_floats(hid_t loc, const char *where, const char *name, const float *data,
                           int rank, const long long *dims);
/* Reads a float32 dataset that must have exactly this rank and these dims
 * and hold finite values only (a weights file's or checkpoint's). */
fn_status fn_h5_get_floats(hid_t loc, const char *where, const char *name, float *data, int rank,
                           const long long *dims);

/* --- the probe (h5util.c says why) ----------------------------------------
 * HDF5 1.10 can itself crash or hang on a corrupt file, so the loaders
 * (fn_data_open, fn_weights_load and _build, fn_checkpoint_load) first run
 * their open-and-read path in a forked child process. */

/* A hang is a bug in HDF5: a weights file, a checkpoint or a set's metadata
 * is read in well under a second, so a minute is generous. */
#define FN_H5_PROBE_SECONDS 60.0

typedef struct fn_h5_child fn_h5_child; /* the probe's end in the child */
typedef fn_status (*fn_h5_probe_fn)(fn_h5_child *probe, void *arg);

/* Runs check(probe, arg) in a child process, which has timeout_s seconds
 * (and the same again after each fn_h5_probe_alive). FN_OK when the child
 * finished: *verified (may be NULL) is 1 when check returned FN_OK there,
 * 0 when it failed cleanly or no child could be started (the caller then
 * runs its path in full itself, as it would without the probe). Otherwise
 * FN_ERR_FORMAT "<path>: corrupt HDF5 file: the HDF5 library crashed
 * (signal S) reading it" or "... did not finish reading it within N s"
 * (the child is killed), or FN_ERR_NOMEM when something else killed it. */
fn_status fn_h5_probe(const char *path, fn_h5_probe_fn check, void *arg, double timeout_s,
                      int *verified);
/* In check: a step is done and the next may take `seconds` (probe NULL:
 * not in a probe, nothing happens). */
void fn_h5_probe_alive(fn_h5_child *probe, double seconds);
/* 1 in a probe's child: the loaders then leave the device alone. */
int fn_h5_probe_child(void);

/* Tests and fuzz harnesses only (one setting per process, made before the
 * first probe): no child at all (a fuzzer stays fast and sees every path;
 * fn_h5_probe then returns FN_OK, *verified 0), a cap on every allowance, so
 * an input that hangs HDF5 costs seconds, and a function the child runs
 * first (after its stdout and stderr went to /dev/null and its crash
 * signals to their defaults), to undo a fuzzer's crash hooks, restore a
 * sanitizer's handlers or keep the child's sanitizer report. NULL: the
 * defaults. */
typedef struct fn_h5_probe_testing {
    int in_process;           /* 1: no child */
    double max_seconds;       /* 0: no cap */
    void (*child_init)(void); /* NULL: none */
} fn_h5_probe_testing;
void fn_h5_probe_set_testing(const fn_h5_probe_testing *testing);

#endif
