/* workers.h (private) — a few threads that run one function over the parts
 * of a job together with the caller (fn_loader gathers a batch's rows with
 * them; a CPU context's element-wise passes run on them), and starting a thread that leaves SIGINT and SIGTERM to the others
 * (train's handlers run on the main thread). */
#ifndef FUSENET_SRC_WORKERS_H
#define FUSENET_SRC_WORKERS_H

#include <pthread.h>

#include "fusenet/status.h"

/* Part `part` of `parts` of a job; parts run at once on different threads. */
typedef void (*fn_work)(void *arg, int part, int parts);

typedef struct fn_workers fn_workers; /* opaque */

/* threads >= 1 in all, the caller included: threads - 1 are started. */
fn_status fn_workers_create(fn_workers **w, int threads);
void fn_workers_destroy(fn_workers *w);
int fn_workers_threads(const fn_workers *w);

/* Runs work(arg, p, threads) for every part p, part 0 on the calling
 * thread, and returns when all are done. One job at a time. */
void fn_workers_run(fn_workers *w, fn_work work, void *arg);

/* Work on the items [begin, end) of a job. */
typedef void (*fn_range_work)(void *arg, int begin, int end);

/* Runs work over the items [0, count), split into contiguous ranges of at
 * least `grain` items, one a thread (all on the caller when w is NULL or
 * count < 2 grain). Which thread takes an item never changes what is
 * computed for it, so a job whose items are independent gives the same bits
 * on any number of threads. */
void fn_workers_for(fn_workers *w, int count, int grain, fn_range_work work, void *arg);

/* pthread_create with SIGINT and SIGTERM blocked in the new thread. */
fn_status fn_thread_start(pthread_t *thread, void *(*main)(void *), void *arg);

#endif
