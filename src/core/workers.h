/* workers.h (private) — a few threads that run one function over the parts
 * of a job together with the caller (fn_loader gathers a batch's rows with
 * them), and starting a thread that leaves SIGINT and SIGTERM to the others
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

/* pthread_create with SIGINT and SIGTERM blocked in the new thread. */
fn_status fn_thread_start(pthread_t *thread, void *(*main)(void *), void *arg);

#endif
