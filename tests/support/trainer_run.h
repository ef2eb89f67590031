/* trainer_run.h — a test's run of fn_trainer on a config file, with --set
 * style overrides, an optional stop after N steps and an optional deferral
 * lag (the test hook FN_TEST_DEFER_LAG), and what tests compare between two
 * runs: the weights bit for bit, metrics.csv without its times. Shared by
 * test_defer (the CPU's deferred steps), test_step_graph_cuda and
 * test_optim_cuda. */
#ifndef FN_TEST_TRAINER_RUN_H
#define FN_TEST_TRAINER_RUN_H

#include <stddef.h>

#include "fusenet/config.h"
#include "fusenet/net.h"
#include "fusenet/trainer.h"
#include "program.h"
#include "sets.h"

/* A run of the config file `ini` with output.dir = <dir>/<out> and the
 * overrides `sets` (";"-separated, may be NULL), --overwrite, resumed when
 * `resume`, stopped after `stop_after` steps (-1: never), with
 * FN_TEST_DEFER_LAG set to `defer_lag` during it (NULL: unset). *st is its
 * status, msg (msg_cap bytes) its message ("" when it succeeded). The
 * caller destroys the trainer, then *cfg. */
fn_trainer *trainer_run(const char *dir, const char *ini, const char *out, const char *defer_lag,
                        const char *sets, int resume, long long stop_after, fn_config **cfg,
                        fn_status *st, char *msg, size_t msg_cap);

/* The folder of the deferred-step tests (test_defer, test_step_graph_cuda):
 * train.h5 (`rows` rows from `seed`) and valid.h5 (64 rows from seed + 1)
 * of shape, and run.ini training `layers` (groups 4) in batches of `batch`
 * for `epochs` epochs with SGD (lr 0.05, momentum 0.9, seed 5) under a
 * cosine schedule after a 9-step warm-up, on `device`, logging per epoch
 * only. Free it with program_files_free. */
program_files *deferred_run_files(const char *prefix, const set_shape *shape, int rows,
                                  uint64_t seed, const char *layers, const char *device,
                                  int batch, int epochs);

/* A cmocka teardown for them: the folder removed, FN_TEST_DEFER_LAG unset. */
int deferred_run_teardown(void **state);

/* A run of `ini` into <dir>/parts stopped after stop_after steps and
 * resumed, both with the deferral lag `lag`, must end as the whole run
 * into <dir>/whole with lag `whole_lag`: the same weights bit for bit and
 * metrics.csv (times aside). Returns the resumed trainer, its config in
 * *cfg, for further checks; the caller destroys both. */
fn_trainer *expect_resumed_as_whole(const char *dir, const char *ini, const char *whole_lag,
                                    const char *lag, long long stop_after, fn_config **cfg);

/* "a;b" into buf (cap bytes), either list of --set overrides NULL or
 * empty; returns buf. */
const char *sets_join(char *buf, size_t cap, const char *a, const char *b);

/* --set overrides under which run.ini's training diverges (lr 30 with
 * momentum) after an epoch or two, past a checkpoint: for the tests of a
 * non-finite stop. */
extern const char *const trainer_run_diverge;

/* Fails the test unless msg is eager_msg with the first mention of the
 * output folder eager_dir replaced by dir: two runs that stopped alike. */
void expect_message_but_folder(const char *msg, const char *eager_msg, const char *eager_dir,
                               const char *dir);

/* The diverging run (trainer_run_diverge) into <dir>/<out> with defer_lag,
 * which must stop at a non-finite loss (FN_ERR_NUMERIC, "loss is" in its
 * message, msg); the trainer, and its config in *cfg. */
fn_trainer *trainer_run_diverging(const char *dir, const char *ini, const char *out,
                                  const char *defer_lag, fn_config **cfg, char *msg,
                                  size_t msg_cap);

/* The diverging run (trainer_run_diverge) into <dir>/<out> with defer_lag:
 * it must stop at a non-finite loss as `eager` did into <dir>/<eager_out>
 * with eager_msg (the message but the folder's name, the weights bit for
 * bit, the step and the optimiser's steps). */
void expect_same_stop(const char *dir, const char *ini, const fn_trainer *eager,
                      const char *eager_msg, const char *eager_out, const char *out,
                      const char *defer_lag);

/* The end of a run: the trainer destroyed, then its config. */
void trainer_release(fn_trainer *t, fn_config *cfg);

/* Fails the test unless the two nets' parameters hold the same bits. */
void expect_same_weights(const fn_net *a, const fn_net *b);
/* 1 when the two nets' parameters hold the same bits, else 0. */
int same_weights(const fn_net *a, const fn_net *b);

/* <dir>/<out>/metrics.csv without the columns of times (seconds,
 * samples_per_s: the 6th and 7th); free it. */
char *metrics_without_times(const char *dir, const char *out);
/* Runs t[1 .. n) the same as t[0]: their weights bit for bit, and their
 * metrics.csv (<dir>/<out[i]>) but for the times; t[0]'s metrics hold
 * more than a header. */
void expect_runs_same_as_first(const char *dir, fn_trainer *const *t, const char (*out)[64],
                               int n);

#endif
