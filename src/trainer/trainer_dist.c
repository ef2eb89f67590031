/* trainer_dist.c — what data-parallel training over the ranks of an MPI
 * world (docs/many-processes.md, fusenet/comm.h) needs besides its step
 * (step_dist.c): the communicator, a rank's GPU and share of a batch, the
 * stop every rank agrees on ([run] grad_sum: the type of the sums), the sums of a validation over the ranks, rank
 * 0's writes waited for by every rank, and the ranks' parameters compared
 * bit for bit (a 64-bit FNV-1a hash of every value) when the run starts
 * and when it ends. Rank 0 alone writes the output directory's files
 * (fn_trainer_writes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/test_hooks.h"
#include "trainer/trainer_impl.h"

fn_status fn_trainer_dist_setup(fn_trainer *t, fn_comm_scope scope)
{
    FN_TRY(fn_comm_create(&t->comm, t->ctx, scope));
    t->dist = !fn_comm_is_single(t->comm);
    /* Alone there is nothing to sum: the plan says float32, and a notice
     * says the key changed nothing (trainer_notices.c). */
    return t->dist ? fn_comm_set_sum(t->comm, t->cfg->grad_sum) : FN_OK;
}

int fn_trainer_dist_rows(const fn_trainer *t)
{
    const int b = t->cfg->batch_size;
    return t->dist ? (b + t->ranks - 1) / t->ranks : b;
}

int fn_trainer_dist_gpu(const fn_trainer *t, int configured, int found)
{
    return t->ranks > 1 ? fn_world_local_rank() % found : configured;
}

/* --- agreement ------------------------------------------------------------------ */

int fn_trainer_dist_stop(fn_trainer *t)
{
    if (!t->dist || t->stop_agreed)
        return t->stop;
    int flag = t->stop;
    /* MPI's errors end the job (comm_mpi.c): this one cannot fail here. */
    if (fn_comm_any(t->comm, &flag) != FN_OK)
        flag = 1;
    t->stop = t->stop_agreed = flag;
    return flag;
}

fn_status fn_trainer_dist_sum_metrics(fn_trainer *t, double *loss_sum, double *weight_sum,
                                      long long *correct, long long *seen)
{
    if (!t->dist)
        return FN_OK;
    double v[4] = {*loss_sum, *weight_sum, (double)*correct, (double)*seen};
    FN_TRY(fn_comm_sum_doubles(t->comm, v, 4));
    *loss_sum = v[0];
    *weight_sum = v[1];
    *correct = (long long)v[2];
    *seen = (long long)v[3];
    return FN_OK;
}

fn_status fn_trainer_dist_written(fn_trainer *t, fn_status st)
{
    if (!t->dist)
        return st;
    int failed = st != FN_OK;
    FN_TRY(fn_comm_any(t->comm, &failed));
    if (!failed)
        return FN_OK;
    t->failed_together = 1;
    return st != FN_OK ? st
                       : fn_fail(FN_ERR_IO, "rank 0 could not write %s (its message says why)",
                                 t->checkpoint_path);
}

/* --- the same weights on every rank ------------------------------------------------ */

/* Every parameter value's bits, hashed in order. */
static fn_status hash_params(fn_trainer *t, uint64_t *hash)
{
    *hash = FN_HASH_START;
    for (int i = 0; i < fn_net_n_params(t->net); i++) {
        const fn_tensor *v = &fn_net_param(t->net, i)->value;
        const size_t n = (size_t)v->rows * (size_t)v->cols;
        float *host = malloc(sizeof *host * n);
        if (!host)
            return fn_fail(FN_ERR_NOMEM, "out of host memory comparing the ranks' weights");
        fn_status st = fn_tensor_download(v, host, n);
        if (st == FN_OK)
            *hash = fn_hash_bytes(*hash, host, sizeof *host * n);
        free(host);
        FN_TRY(st);
    }
    return FN_OK;
}

/* FN_TEST_PERTURB_RANK: the lowest bit of the first value flipped. */
static fn_status perturb(fn_trainer *t)
{
    fn_tensor *v = &fn_net_param(t->net, 0)->value;
    const size_t n = (size_t)v->rows * (size_t)v->cols;
    float *host = malloc(sizeof *host * n);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory");
    fn_status st = fn_tensor_download(v, host, n);
    uint32_t bits;
    memcpy(&bits, &host[0], sizeof bits);
    bits ^= 1u;
    memcpy(&host[0], &bits, sizeof bits);
    if (st == FN_OK)
        st = fn_tensor_upload(v, host, n);
    if (st == FN_OK)
        st = fn_param_refresh_bf16(fn_net_param(t->net, 0), t->ctx);
    free(host);
    return st;
}

fn_status fn_trainer_dist_check_same(fn_trainer *t, const char *when)
{
    if (!t->dist)
        return FN_OK;
    if (t->state.global_step == 0 && fn_test_rank_perturbed(t->rank))
        FN_TRY(perturb(t));
    uint64_t hash = 0;
    FN_TRY(hash_params(t, &hash));
    int same = 0;
    FN_TRY(fn_comm_same(t->comm, hash, &same));
    if (same)
        return FN_OK;
    t->failed_together = 1;
    return fn_fail(FN_ERR_NUMERIC,
                   "%s (step %lld) the parameters differ between the %d ranks (rank %d's hash "
                   "%016llx): the ranks must start from the same weights and sum the same "
                   "gradients",
                   when, t->state.global_step, fn_comm_size(t->comm), t->rank,
                   (unsigned long long)hash);
}
