/* workers.c — a fixed set of helper threads, each waiting on its own
 * semaphore for a part of a job; the caller runs part 0, posts only the
 * helpers a job has parts for, and waits for as many "done"s. The job's
 * fields are written before the posts and read after the waits, which
 * order them (POSIX semaphores synchronise memory). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/workers.h"

typedef struct helper {
    fn_workers *w;
    int part;
    sem_t go; /* a part to run, or quit */
    pthread_t thread;
} helper;

struct fn_workers {
    int threads;      /* parts of a full job, the caller's included */
    int started;      /* helper threads running */
    helper *helpers;  /* [threads - 1] */
    sem_t done;       /* a helper started, or finished its part */
    fn_work work;     /* the job in flight */
    void *arg;
    int parts;        /* its parts, the caller's included */
    int quit;
};

static void wait_for(sem_t *s)
{
    while (sem_wait(s) != 0 && errno == EINTR)
        ;
}

static void *helper_main(void *p)
{
    helper *h = p;
    fn_workers *w = h->w;
    sem_post(&w->done); /* started: fn_workers_create may return */
    for (;;) {
        wait_for(&h->go);
        if (w->quit)
            return NULL;
        w->work(w->arg, h->part, w->parts);
        sem_post(&w->done);
    }
}

fn_status fn_thread_start(pthread_t *thread, void *(*main)(void *), void *arg)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int err = pthread_create(thread, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err)
        return fn_fail(FN_ERR_NOMEM, "cannot start a thread: %s", strerror(err));
    return FN_OK;
}

static fn_status start_helpers(fn_workers *w)
{
    for (int i = 1; i < w->threads; i++) {
        helper *h = &w->helpers[i - 1];
        *h = (helper){.w = w, .part = i};
        if (sem_init(&h->go, 0, 0) != 0)
            return fn_fail(FN_ERR_NOMEM, "cannot make a worker's semaphore: %s",
                           strerror(errno));
        fn_status st = fn_thread_start(&h->thread, helper_main, h);
        if (st != FN_OK) {
            sem_destroy(&h->go);
            return st;
        }
        w->started++;
    }
    return FN_OK;
}

fn_status fn_workers_create(fn_workers **out, int threads)
{
    *out = NULL;
    if (threads < 1)
        return fn_fail(FN_ERR_INVALID, "fn_workers_create: %d threads", threads);
    fn_workers *w = calloc(1, sizeof *w);
    if (!w)
        return fn_fail(FN_ERR_NOMEM, "out of memory for worker threads");
    w->threads = threads;
    if (sem_init(&w->done, 0, 0) != 0) {
        free(w);
        return fn_fail(FN_ERR_NOMEM, "cannot make a semaphore: %s", strerror(errno));
    }
    w->helpers = calloc((size_t)threads, sizeof *w->helpers);
    fn_status st = w->helpers ? start_helpers(w)
                              : fn_fail(FN_ERR_NOMEM, "out of memory for worker threads");
    /* Each started helper is waiting for work before this returns: a thread
     * still starting may hold the allocator's locks (a sanitizer's runtime
     * sets a new thread up with them), and a fork then (the HDF5 probe's)
     * would leave them held in the child. */
    for (int i = 0; i < w->started; i++)
        wait_for(&w->done);
    if (st != FN_OK) {
        fn_workers_destroy(w);
        return st;
    }
    *out = w;
    return FN_OK;
}

void fn_workers_destroy(fn_workers *w)
{
    if (!w)
        return;
    w->quit = 1;
    for (int i = 0; i < w->started; i++)
        sem_post(&w->helpers[i].go);
    for (int i = 0; i < w->started; i++) {
        pthread_join(w->helpers[i].thread, NULL);
        sem_destroy(&w->helpers[i].go);
    }
    sem_destroy(&w->done);
    free(w->helpers);
    free(w);
}

int fn_workers_threads(const fn_workers *w) { return w->threads; }

/* Runs parts 0 .. parts-1 of a job, 0 on the caller, 1 .. on helpers. */
static void run_parts(fn_workers *w, int parts, fn_work work, void *arg)
{
    w->work = work;
    w->arg = arg;
    w->parts = parts;
    for (int i = 1; i < parts; i++)
        sem_post(&w->helpers[i - 1].go);
    work(arg, 0, parts);
    for (int i = 1; i < parts; i++)
        wait_for(&w->done);
}

void fn_workers_run(fn_workers *w, fn_work work, void *arg) { run_parts(w, w->threads, work, arg); }

/* fn_workers_for's job: part p of `parts` takes its share of [0, count). */
typedef struct range_job {
    fn_range_work work;
    void *arg;
    int count;
} range_job;

static void range_part(void *p, int part, int parts)
{
    const range_job *j = p;
    const int begin = (int)((long long)j->count * part / parts);
    const int end = (int)((long long)j->count * (part + 1) / parts);
    j->work(j->arg, begin, end);
}

void fn_workers_for(fn_workers *w, int count, int grain, fn_range_work work, void *arg)
{
    const int most = grain > 0 ? count / grain : count;
    const int parts = !w ? 1 : most < w->threads ? most : w->threads;
    if (parts < 2) {
        work(arg, 0, count);
        return;
    }
    range_job j = {work, arg, count};
    run_parts(w, parts, range_part, &j);
}
