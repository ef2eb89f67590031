/* comm_mpi_bf16.c — the MPI backend's gradient sums in bfloat16
 * (dist/comm_mpi_bf16.h), all-reduced or reduced a part to its owner
 * (a reduce-scatter). The operation adds in float and rounds once to
 * bfloat16 (core/bf16.h, the GPU's rounding): the sum of two bfloat16
 * values (8 significant bits) is exact in float unless their exponents are
 * more than 15 apart, so the result is the nearest bfloat16 of the exact
 * sum but for a double rounding there, within (1 + 2^-24)(1 + 2^-8) - 1 of
 * it relatively. It is commutative
 * bit for bit (a + b == b + a in float), which MPI's reductions, free to
 * swap operands, need for every rank to get the same bits. */
#include <stdlib.h>

#include "core/bf16.h"
#include "dist/comm_mpi_bf16.h"

#ifdef FN_MPI_REQUESTS
typedef struct slot {
    uint16_t *half;  /* [cap] the scratch buffer */
    size_t cap;
    float *dst;      /* the tensor the sum goes back to; NULL: nothing pending */
    size_t keep, count; /* its values [keep, keep + count) */
} slot;

struct fn_mpi_bf16 {
    MPI_Op add;
    int rank;        /* this process's in MPI_COMM_WORLD: a reduce's root or not */
    slot *slots;
    int n_slots;
};

/* inout[i] = the nearest bfloat16 of in[i] + inout[i]. */
static void bf16_add(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = fn_bf16_round(fn_bf16_widen(a[i]) + fn_bf16_widen(b[i]));
}

fn_status fn_mpi_bf16_create(fn_mpi_bf16 **out)
{
    fn_mpi_bf16 *s = calloc(1, sizeof *s);
    if (!s)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for the bfloat16 gradient sums");
    MPI_Op_create(bf16_add, 1, &s->add);
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    *out = s;
    return FN_OK;
}

void fn_mpi_bf16_destroy(fn_mpi_bf16 *s)
{
    if (!s)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Op_free(&s->add);
    for (int i = 0; i < s->n_slots; i++)
        free(s->slots[i].half);
    free(s->slots);
    free(s);
}

/* Slot i, with a buffer of at least count values. */
static fn_status slot_of(fn_mpi_bf16 *s, int i, size_t count, slot **out)
{
    if (i >= s->n_slots) {
        const int n = i + 16;
        slot *grown = realloc(s->slots, sizeof *grown * (size_t)n);
        if (!grown)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for the bfloat16 gradient sums");
        for (int k = s->n_slots; k < n; k++)
            grown[k] = (slot){0};
        s->slots = grown;
        s->n_slots = n;
    }
    slot *sl = &s->slots[i];
    if (sl->cap < count) {
        uint16_t *half = realloc(sl->half, sizeof *half * count);
        if (!half)
            return fn_fail(FN_ERR_NOMEM,
                           "out of host memory for a bfloat16 gradient sum of %zu values", count);
        sl->half = half;
        sl->cap = count;
    }
    *out = sl;
    return FN_OK;
}

fn_status fn_mpi_bf16_round(fn_mpi_bf16 *s, fn_tensor *t, int i, size_t keep, size_t n_keep)
{
    const size_t count = (size_t)t->rows * (size_t)t->cols;
    slot *sl = NULL;
    FN_TRY(slot_of(s, i, count, &sl));
    for (size_t k = 0; k < count; k++)
        sl->half[k] = fn_bf16_round(t->data[k]);
    sl->dst = t->data;
    sl->keep = keep;
    sl->count = n_keep;
    return FN_OK;
}

fn_status fn_mpi_bf16_start(fn_mpi_bf16 *s, fn_tensor *t, int i, MPI_Request *request)
{
    const size_t count = (size_t)t->rows * (size_t)t->cols;
    FN_TRY(fn_mpi_bf16_round(s, t, i, 0, count));
    MPI_Iallreduce(MPI_IN_PLACE, s->slots[i].half, (int)count, MPI_UINT16_T, s->add,
                   MPI_COMM_WORLD, request);
    return FN_OK;
}

/* The root receives in place; the others' receive buffer is not read. */
void fn_mpi_bf16_reduce_start(fn_mpi_bf16 *s, int i, size_t first, size_t n, int root,
                              MPI_Request *request)
{
    uint16_t *h = s->slots[i].half + first;
    MPI_Ireduce(root == s->rank ? MPI_IN_PLACE : h, h, (int)n, MPI_UINT16_T, s->add, root,
                MPI_COMM_WORLD, request);
}

void fn_mpi_bf16_finish(fn_mpi_bf16 *s, int first, int end)
{
    for (int i = first; s && i < end && i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        for (size_t k = sl->keep; sl->dst && k < sl->keep + sl->count; k++)
            sl->dst[k] = fn_bf16_widen(sl->half[k]);
        sl->dst = NULL;
    }
}
#endif
