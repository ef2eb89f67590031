/* workers.c — a fixed set of helper threads that wait for a job, each run
 * its part, and report back; the caller runs part 0 and waits for the rest.
 * Every shared field is read and written under the one mutex. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/workers.h"

struct fn_workers {
    int threads;         /* parts of a job, the caller's included */
    int started;         /* helper threads running */
    pthread_t *helpers;  /* [threads - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a job or quit */
    pthread_cond_t done; /* a helper finished its part */
    unsigned long job;   /* bumped for each job */
    fn_work work;
    void *arg;
    int pending;         /* helpers' parts not done yet */
    int quit;
};

typedef struct helper_arg {
    fn_workers *w;
    int part;
} helper_arg;

static void *helper_main(void *p)
{
    helper_arg a = *(helper_arg *)p;
    free(p);
    fn_workers *w = a.w;
    unsigned long seen = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && w->job == seen)
            pthread_cond_wait(&w->wake, &w->mu);
        if (w->quit)
            break;
        seen = w->job;
        fn_work work = w->work;
        void *arg = w->arg;
        pthread_mutex_unlock(&w->mu);
        work(arg, a.part, w->threads);
        pthread_mutex_lock(&w->mu);
        if (--w->pending == 0)
            pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
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
        helper_arg *a = malloc(sizeof *a);
        if (!a)
            return fn_fail(FN_ERR_NOMEM, "out of memory for a worker thread");
        *a = (helper_arg){w, i};
        fn_status st = fn_thread_start(&w->helpers[i - 1], helper_main, a);
        if (st != FN_OK) {
            free(a);
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
    w->helpers = calloc((size_t)threads, sizeof *w->helpers);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    fn_status st = w->helpers ? start_helpers(w)
                              : fn_fail(FN_ERR_NOMEM, "out of memory for worker threads");
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
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->started; i++)
        pthread_join(w->helpers[i], NULL);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->mu);
    free(w->helpers);
    free(w);
}

int fn_workers_threads(const fn_workers *w) { return w->threads; }

void fn_workers_run(fn_workers *w, fn_work work, void *arg)
{
    if (w->threads > 1) {
        pthread_mutex_lock(&w->mu);
        w->work = work;
        w->arg = arg;
        w->pending = w->threads - 1;
        w->job++;
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->mu);
    }
    work(arg, 0, w->threads);
    if (w->threads > 1) {
        pthread_mutex_lock(&w->mu);
        while (w->pending > 0)
            pthread_cond_wait(&w->done, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
}

/* fn_workers_for's job: part p of `parts` takes its share of [0, count). */
typedef struct range_job {
    fn_range_work work;
    void *arg;
    int count, parts;
} range_job;

static void range_part(void *p, int part, int threads)
{
    (void)threads;
    const range_job *j = p;
    if (part >= j->parts)
        return;
    const int begin = (int)((long long)j->count * part / j->parts);
    const int end = (int)((long long)j->count * (part + 1) / j->parts);
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
    range_job j = {work, arg, count, parts};
    fn_workers_run(w, range_part, &j);
}
