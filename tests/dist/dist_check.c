/* dist_check.c — data-parallel training against one process, run under
 * `mpirun -np N dist_check DEVICE B [shard] [bf16]` (tests/CMakeLists.txt, with MPI).
 *
 * First the sharded collectives alone (check_collectives): a reduce-scatter
 * and an all-gather of tensors of 1, 2, 5, 7 and 64 values (parts of one
 * value, uneven parts, empty parts where a tensor has fewer values than
 * ranks) whose values are small integers, so every sum is exact and every
 * rank's part must equal the expected values bit for bit.
 *
 * With `shard`, A's optimiser is sharded ([run] shard = optimizer): each
 * rank receives its part of the summed gradient by a reduce-scatter and
 * updates that part alone, then the values are gathered. Its arithmetic
 * per element is the unsharded step's on a sum in another order, so the
 * same checks and bound below hold.
 *
 * Every rank writes the same set of B rows and trains one step of it (one
 * global batch of B rows, SGD with momentum and weight decay, through a
 * dropout layer whose mask each rank must draw for its rows' places in the
 * whole batch) twice:
 *   A: over the world's N ranks (rank 0 writes the output directory),
 *   R: alone (fn_trainer_options.comm = FN_COMM_SELF), the one-process reference.
 * Then it checks, for every parameter element:
 *   N = 1: A equals R bit for bit (one rank takes the whole batch, its loss
 *          gradient is not scaled, and the sums of one rank change nothing:
 *          the run under mpirun is the plain run);
 *   N > 1: |A - R| <= tol, the bound of a different summation order below;
 * and that A holds the same bits on every rank (the trainer checks it too).
 *
 * The bound. The step is w1 = w0 - lr * (g + wd * w0) (momentum's first
 * step is the gradient), g = sum over the B rows r of t_r, t_r the row's
 * contribution (the loss is the batch mean, rows are independent: a block
 * normalises within a row). A sums each rank's rows, then MPI or NCCL adds
 * the N partial sums; R adds all B in one order. Any float32 order of a sum
 * of B terms is within gamma_B * S of the exact sum (gamma_B = B u / (1 - B
 * u), u = 2^-24, S = sum |t_r|: Higham, Accuracy and Stability, 4.2), so
 * the two differ by at most 2 gamma_B S. A rank's loss gradient is its
 * mean's times rows / B: exact when B / rows is a power of two (B = 32, N =
 * 2), else off by a relative 2u, which the backward of the row (linear in
 * its gradient) carries into t_r with a few roundings more: 16 u S covers
 * that and the update's own rounding of lr * g. The update's rounding of w
 * itself differs by at most 2u |w1| in each run: 4u |w1|. So
 *   tol = lr * (2 gamma_B + k u) * S * 1.01 + 4 u |w1|,   k = 16 on the CPU,
 * with S computed here by the same net, one row at a time (each row's
 * backward alone gives its t_r), from the same initial weights, each row
 * at its place in the step's shuffled batch (its dropout mask is the
 * place's: fn_data gives the order the trainer reads). On the GPU
 * cuBLAS may pick other kernels for a share's rows than for the batch's,
 * whose sums over the features (8 and 16 here) may round in another
 * order, so each row's own terms may differ by a few roundings more,
 * scaled by the group normalisation: k = 64 there. A wrong share or scale
 * moves the weights by lr |g|, orders of magnitude above either bound.
 *
 * With `bf16` the world's run A sums in bfloat16 ([run] grad_sum = bf16;
 * R still float32), with two checks more:
 *
 * The communicator alone (check_comm). Rank k holds values g_k (float32,
 * of mixed signs and magnitudes, known to every rank); the bfloat16 sum s
 * of each element against the float64 sum E = sum_k g_k (exact: N <= 3
 * float32 values of magnitudes 2^-6 to 2^7 span at most 7 + 6 + 23 + 2 =
 * 38 bits). Each g_k is rounded once to bfloat16, b_k = g_k (1 + e_k), |e_k|
 * <= u = 2^-8 (8 significant bits, to nearest), or off by at most 2^-134
 * among the subnormals; the N - 1 additions of the reduction (a tree of
 * some order: every element's sum is a tree of N - 1 additions over the N
 * inputs) each add in float (relative 2^-24) and round to bfloat16 (u),
 * so each is exact times (1 + d), |d| <= u' = (1 + 2^-24)(1 + u) - 1. As
 * for any summation tree (Higham, Accuracy and Stability, 2nd ed., 4.2,
 * with lemma 3.1 for the products of the (1 + d)), the tree's result
 * is sum_k b_k (1 + theta_k), |theta_k| <= gamma'_{N-1} = (N-1) u' /
 * (1 - (N-1) u'). So
 *   |s - E| <= (u + gamma'_{N-1} (1 + u)) S + N 2^-133,  S = sum_k |g_k|,
 * first order N u S: u S on one rank (the rounding alone), 2u S on two, 3u S
 * on three. The check also asserts that every s is a bfloat16 widened (its
 * low 16 bits zero), so a float32 sum fails it; on one rank s is exactly
 * g_0 rounded; sums of 2 g_k are exactly 2 s (a second round through the
 * same buffers); tickets waited for out of order each get theirs. The
 * reduce-scatter in bfloat16 likewise (check_reduce_scatter_bf16): each
 * rank's part of tensors of 1 to 1000 values (uneven and empty parts) is
 * a tree of N - 1 bfloat16 additions over the N rounded values, the same
 * bound, every value a widened bfloat16 and most off the float32 sum; a
 * gather started beside it stays float32 (exact).
 *
 * The training step against the one-process float32 run R. A's gradient
 * is the bfloat16 sum of the ranks' float32 partial gradients p_k, which
 * sum exactly (in real numbers) to within the float32 bound above of R's
 * g; the bfloat16 sum adds at most (u + gamma'_{N-1} (1 + u)) sum_k |p_k|,
 * and |p_k| <= |P_k| + gamma_B S_k with P_k = sum of rank k's rows' t_r
 * (its share of the step's batch in the batch's order: rows [B k / N, B
 * (k+1) / N)), summed here in float64 from the rows' own gradients. So
 *   tol_bf16 = tol + lr (u + gamma'_{N-1} (1 + u)) (sum_k |P_k| + gamma_B S) * 1.01
 *              + lr N 2^-133.
 * That the bfloat16 path ran: some element is off by more than the
 * float32 bound tol (the float32 sums stay within it, above), and two runs
 * of A give the same bits.
 *
 * With `shard bf16` A is sharded and sums in bfloat16: its reduce-scatter
 * gives each element the bfloat16 reduction of the same N rounded partial
 * gradients (a tree of N - 1 additions, as the all-reduce's), so tol_bf16
 * holds as it stands, and so do the two checks that the bfloat16 path ran:
 * a reduce-scatter in float32 would stay within tol. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bf16.h"
#include "fusenet/comm.h"
#include "fusenet/config.h"
#include "fusenet/data.h"
#include "fusenet/loss.h"
#include "fusenet/model.h"
#include "fusenet/trainer.h"

enum { IN = 8, CLASSES = 4, PATH_CAP = 512, SKIP = 77 };
static const double LR = 0.1;
static const uint64_t SEED = 3;

static int rank_, size_;
static int bf16_; /* the world's run sums in bfloat16 */

/* A failed check ends every rank. */
static void check(int ok, const char *fmt, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dist_check: rank %d of %d: FAILED: ", rank_, size_);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void check_ok(fn_status st, const char *what)
{
    check(st == FN_OK, "%s: %s", what, fn_last_error());
}

/* The same B rows on every rank (a fixed generator): inputs in [-1, 1),
 * labels 0..CLASSES-1. */
static void write_set(const char *path, int rows, float *x, int32_t *y)
{
    uint64_t s = 12345;
    for (int i = 0; i < rows * IN; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
    }
    for (int r = 0; r < rows; r++)
        y[r] = (int32_t)(r % CLASSES);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    check(f >= 0, "cannot create %s", path);
    hsize_t dx[2] = {(hsize_t)rows, IN}, dy[1] = {(hsize_t)rows};
    hid_t sx = H5Screate_simple(2, dx, NULL), sy = H5Screate_simple(1, dy, NULL);
    hid_t ds = H5Dcreate2(f, "x", H5T_NATIVE_FLOAT, sx, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0,
          "writing %s", path);
    H5Dclose(ds);
    ds = H5Dcreate2(f, "y", H5T_NATIVE_INT32, sy, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) >= 0,
          "writing %s", path);
    H5Dclose(ds);
    H5Sclose(sx);
    H5Sclose(sy);
    H5Fclose(f);
}

/* The run's config, writing into out; shard: [run] shard = optimizer. */
static fn_config *config(const char *dir, const char *device, int batch, const char *out_dir,
                         const char *grad_sum, int shard)
{
    char ini[PATH_CAP + 32];
    snprintf(ini, sizeof ini, "%s/rank%d_%s.ini", dir, rank_, grad_sum);
    FILE *out = fopen(ini, "w");
    check(out != NULL, "cannot write %s", ini);
    fprintf(out,
            "[data]\ntrain = %s/rank%d.h5\ninputs = x\ntargets = y\n"
            "[model]\nlayers = block 16, dropout 0.25, block 16, linear %d\ngroups = 4\n"
            "[train]\nbatch_size = %d\nepochs = 1\nlr = %g\nmomentum = 0.9\n"
            "weight_decay = 0.001\nseed = %llu\n[run]\ndevice = %s\nmath = fp32\nlog_every = 0\n"
            "grad_sum = %s\nshard = %s\n[output]\ndir = %s\n",
            dir, rank_, CLASSES, batch, LR, (unsigned long long)SEED, device, grad_sum,
            shard ? "optimizer" : "none", out_dir);
    fclose(out);
    fn_config *cfg = NULL;
    check_ok(fn_config_load(&cfg, ini), "fn_config_load");
    check_ok(fn_config_finish(cfg), "fn_config_finish");
    return cfg;
}

/* Every parameter value of a net, in order, on the host. */
static float *params_of(fn_net *net, size_t *n)
{
    *n = 0;
    for (int i = 0; i < fn_net_n_params(net); i++) {
        const fn_tensor *v = &fn_net_param(net, i)->value;
        *n += (size_t)v->rows * (size_t)v->cols;
    }
    float *out = malloc(sizeof *out * *n), *p = out;
    check(out != NULL, "out of memory");
    for (int i = 0; i < fn_net_n_params(net); i++) {
        const fn_tensor *v = &fn_net_param(net, i)->value;
        const size_t k = (size_t)v->rows * (size_t)v->cols;
        check_ok(fn_tensor_download(v, p, k), "download");
        p += k;
    }
    return out;
}

/* One step of the config's run; the weights after it. */
static float *train_once(const fn_config *cfg, int single, size_t *n)
{
    const fn_trainer_options opt = {.overwrite = 1, .comm = single ? FN_COMM_SELF : FN_COMM_WORLD};
    fn_trainer *t = NULL;
    check_ok(fn_trainer_create(&t, cfg, &opt), single ? "reference trainer" : "world trainer");
    check_ok(fn_trainer_run(t), single ? "reference run" : "world run");
    check(fn_trainer_state(t)->global_step == 1, "expected one step, took %lld",
          fn_trainer_state(t)->global_step);
    float *w = params_of(fn_trainer_net(t), n);
    fn_trainer_destroy(t);
    return w;
}

/* The file's row at each place of the step's batch: the training set is
 * shuffled, and a row's dropout mask is its place's, so S takes each row
 * with the mask of where the trainer puts it. */
static int64_t *batch_order(const char *path, int rows)
{
    const fn_data_options opt = {.inputs = "x", .targets = "y", .target_kind = FN_DATA_LABELS,
                                 .out_features = CLASSES, .batch_size = rows,
                                 .memory_budget = (size_t)1 << 30, .shuffle = 1, .seed = SEED};
    fn_data *data = NULL;
    check_ok(fn_data_open(&data, path, &opt), "fn_data_open");
    fn_batch_rows b;
    check_ok(fn_data_seek(data, 0, 0), "fn_data_seek");
    check_ok(fn_data_next_rows(data, &b), "fn_data_next_rows");
    check(b.rows == rows && b.first == 0, "expected the whole set as the first batch");
    int64_t *order = malloc(sizeof *order * (size_t)rows);
    check(order != NULL, "out of memory");
    memcpy(order, b.order, sizeof *order * (size_t)rows);
    fn_data_close(data);
    return order;
}

/* The first place of rank k's share of a batch of `rows` (loader.h). */
static int share_begin(int rows, int k) { return (int)((long long)rows * k / size_); }

/* S = sum over rows of |t_r|, each row's gradient alone (see the top);
 * into *shares, sum over the ranks k of |P_k|, P_k the sum of the t_r of
 * rank k's share. */
static double *row_sums(const fn_config *cfg, const char *path, fn_device device, int rows,
                        const float *x, const int32_t *y, size_t n, double **shares)
{
    int64_t *order = batch_order(path, rows);
    fn_context *ctx = NULL;
    check_ok(fn_context_create(&ctx, device, device == FN_CUDA ? 0 : -1, FN_MATH_FP32), "context");
    fn_net *net = NULL;
    check_ok(fn_model_build(&net, ctx, cfg, IN), "fn_model_build");
    fn_tensor xr, loss, dy;
    int32_t *label = NULL;
    check_ok(fn_tensor_alloc(&xr, 1, IN, device), "alloc");
    check_ok(fn_tensor_alloc(&loss, 1, 1, device), "alloc");
    check_ok(fn_tensor_alloc(&dy, 1, CLASSES, device), "alloc");
    fn_tensor lab; /* one float's room on the device, for one int32 label's bits */
    check_ok(fn_tensor_alloc(&lab, 1, 1, device), "alloc");
    label = (int32_t *)lab.data;
    double *s = calloc(n, sizeof *s), *part = calloc(n, sizeof *part);
    double *p_abs = calloc(n, sizeof *p_abs);
    float *g = malloc(sizeof *g * n);
    check(s && g && part && p_abs, "out of memory");
    int share = 0;
    for (int r = 0; r < rows; r++) {
        /* Place r of the step's batch: its row, with its dropout mask. */
        const fn_pass pass = {.training = 1, .step = 0, .row0 = r};
        check_ok(fn_net_set_pass(net, &pass), "fn_net_set_pass");
        check_ok(fn_tensor_upload(&xr, x + (size_t)order[r] * IN, IN), "upload");
        float yr;
        memcpy(&yr, &y[order[r]], sizeof yr);
        check_ok(fn_tensor_upload(&lab, &yr, 1), "upload label");
        fn_tensor out;
        check_ok(fn_net_forward(net, &xr, &out), "forward");
        check_ok(fn_cross_entropy_loss(ctx, &out, label, &loss, &dy), "loss");
        check_ok(fn_comm_scale(ctx, &dy, (float)(1.0 / rows)), "scale");
        check_ok(fn_net_zero_grad(net), "zero_grad");
        check_ok(fn_net_backward(net, &dy), "backward");
        float *p = g;
        for (int i = 0; i < fn_net_n_params(net); i++) {
            const fn_tensor *gr = &fn_net_param(net, i)->grad;
            const size_t k = (size_t)gr->rows * (size_t)gr->cols;
            check_ok(fn_tensor_download(gr, p, k), "download");
            p += k;
        }
        for (size_t i = 0; i < n; i++) {
            s[i] += fabs((double)g[i]);
            part[i] += (double)g[i];
        }
        while (share < size_ && r + 1 == share_begin(rows, share + 1)) { /* its share ends */
            for (size_t i = 0; i < n; i++) {
                p_abs[i] += fabs(part[i]);
                part[i] = 0;
            }
            share++;
        }
    }
    *shares = p_abs;
    free(part);
    free(g);
    free(order);
    fn_tensor_free(&lab);
    fn_tensor_free(&dy);
    fn_tensor_free(&loss);
    fn_tensor_free(&xr);
    fn_net_destroy(net);
    fn_context_destroy(ctx);
    return s;
}

/* --- the communicator's sums in bfloat16 ---------------------------------------- */

/* gamma'_{N-1} of the bfloat16 reduction over N ranks, and u (see the top). */
static const double U_BF16 = 0x1p-8;
static double bf16_gamma(int ranks)
{
    const double u1 = (1 + 0x1p-24) * (1 + U_BF16) - 1, k = ranks - 1;
    return k * u1 / (1 - k * u1);
}

static uint64_t hash(const float *w, size_t n);

enum { SUM_A = 1000, SUM_B = 37 }; /* two tensors' values */

/* Rank k's value at element i of tensor `which`: signs mixed, magnitudes
 * 2^-6 to 2^6, 24-bit mantissas (so rounding to bfloat16 changes them). */
static float value_of(int k, int which, int i)
{
    uint64_t z = ((uint64_t)k << 40) ^ ((uint64_t)which << 32) ^ (uint64_t)i;
    z = (z + 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
    z ^= z >> 29;
    const double mant = 1.0 + (double)(z & 0xffffff) / (double)(1 << 24);
    const int expo = (int)((z >> 24) % 13) - 6;
    return (float)((z >> 40 & 1 ? -1.0 : 1.0) * ldexp(mant, expo));
}

static int is_bf16(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0xffffu) == 0;
}

static void fill(fn_tensor *t, int which, int n, float scale)
{
    float *h = malloc(sizeof *h * (size_t)n);
    check(h != NULL, "out of memory");
    for (int i = 0; i < n; i++)
        h[i] = scale * value_of(rank_, which, i);
    check_ok(fn_tensor_upload(t, h, (size_t)n), "upload");
    free(h);
}

/* Tensor `which`'s bfloat16 sums at elements [from, to) (in *got, which
 * holds all n) against the float64 sum of every rank's values: the bound at
 * the top; the worst difference over its bound into *worst. How many
 * differ from the float32 sum. */
static size_t check_range(const fn_tensor *t, int which, int n, int from, int to, float *got,
                          double *worst)
{
    check_ok(fn_tensor_download(t, got, (size_t)n), "download");
    const double bound_rel = U_BF16 + bf16_gamma(size_) * (1 + U_BF16);
    size_t off_f32 = 0;
    for (int i = from; i < to; i++) {
        double e = 0, s = 0;
        float f32 = 0;
        for (int k = 0; k < size_; k++) {
            e += (double)value_of(k, which, i);
            s += fabs((double)value_of(k, which, i));
            f32 += value_of(k, which, i);
        }
        const double d = fabs((double)got[i] - e), tol = bound_rel * s + size_ * 0x1p-133;
        check(is_bf16(got[i]), "tensor %d element %d: %.9g is no bfloat16: the sum was not "
              "made in bfloat16", which, i, got[i]);
        check(d <= tol, "tensor %d element %d: bfloat16 sum %.9g, exact %.17g: difference %.3g "
              "above the bound %.3g (S %.3g)", which, i, got[i], e, d, tol, s);
        if (size_ == 1)
            check(got[i] == fn_bf16_widen(fn_bf16_round(value_of(0, which, i))),
                  "tensor %d element %d: one rank's sum %.9g is not its value %.9g rounded",
                  which, i, got[i], value_of(0, which, i));
        off_f32 += got[i] != f32;
        if (d / tol > *worst)
            *worst = d / tol;
    }
    return off_f32;
}

/* Tensor `which`'s all-reduced bfloat16 sums (check_range over all n). */
static void check_sums(const fn_tensor *t, int which, int n, float *got, double *worst)
{
    const size_t off_f32 = check_range(t, which, n, 0, n, got, worst);
    check(off_f32 > (size_t)n / 2, "tensor %d: only %zu of %d sums differ from float32's", which,
          off_f32, n);
}

static float owned(size_t j, int rank);
static void fill_counted(fn_tensor *t, size_t count, float (*value)(size_t j, int rank),
                         fn_device device);

/* The reduce-scatter in bfloat16 (see the top): each rank's part of
 * tensors of 1, 2, 5, 7, 64 and SUM_A values (parts of one value, uneven
 * parts, empty parts where a tensor has fewer values than ranks) within
 * the bound of the sums, every value a widened bfloat16; and a gather
 * started in the same ticket order stays float32 (its values, 1001 and up,
 * are no bfloat16, and must arrive exactly). */
static void check_reduce_scatter_bf16(fn_comm *comm, fn_device device)
{
    enum { N_T = 6, FIRST_WHICH = 10 };
    const size_t counts[N_T] = {1, 2, 5, 7, 64, SUM_A};
    fn_tensor whole[N_T], gathered[N_T];
    fn_tensor *w[N_T], *g[N_T];
    for (int i = 0; i < N_T; i++) {
        check_ok(fn_tensor_alloc(&whole[i], 1, (int)counts[i], device), "alloc");
        fill(&whole[i], FIRST_WHICH + i, (int)counts[i], 1.0f);
        fill_counted(&gathered[i], counts[i], owned, device);
        w[i] = &whole[i], g[i] = &gathered[i];
    }
    int t0 = -1, t1 = -1;
    check_ok(fn_comm_reduce_scatter_start(comm, w, N_T, &t0), "reduce-scatter");
    check_ok(fn_comm_gather_start(comm, g, N_T, &t1), "gather");
    check_ok(fn_comm_sum_wait(comm, t0), "reduce-scatter wait");
    check_ok(fn_comm_settle(comm), "settle");
    float *got = malloc(sizeof *got * SUM_A);
    check(got != NULL, "out of memory");
    double worst = 0;
    unsigned long long counted[2] = {0, 0}; /* values checked, of them off float32's sum */
    for (int i = 0; i < N_T; i++) {
        size_t first = 0, n = 0;
        fn_comm_part(comm, counts[i], rank_, &first, &n);
        counted[1] += check_range(&whole[i], FIRST_WHICH + i, (int)counts[i], (int)first,
                                  (int)(first + n), got, &worst);
        counted[0] += n;
        check_ok(fn_tensor_download(&gathered[i], got, counts[i]), "download");
        for (int r = 0; r < size_; r++) {
            fn_comm_part(comm, counts[i], r, &first, &n);
            for (size_t j = first; j < first + n; j++)
                check(got[j] == owned(j, r), "gather of %zu values with bfloat16 sums: element "
                      "%zu is %.9g, rank %d's %.9g: the gather must stay float32", counts[i], j,
                      got[j], r, owned(j, r));
        }
        fn_tensor_free(&whole[i]);
        fn_tensor_free(&gathered[i]);
    }
    MPI_Allreduce(MPI_IN_PLACE, counted, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    check(counted[1] > counted[0] / 2, "only %llu of the %llu reduce-scattered sums differ from "
          "float32's", counted[1], counted[0]);
    if (rank_ == 0)
        printf("dist_check: %d rank%s: bfloat16 reduce-scatter of 1 to %d values within its "
               "bound, the largest at %.3f of it; the gather float32\n", size_,
               size_ == 1 ? "" : "s", SUM_A, worst);
    free(got);
}

/* The communicator's bfloat16 sums (see the top). */
static void check_comm(fn_device device)
{
    const int gpu = device == FN_CUDA ? fn_world_local_rank() % fn_cuda_device_count() : -1;
    fn_context *ctx = NULL;
    check_ok(fn_context_create(&ctx, device, gpu, FN_MATH_FP32), "context");
    fn_comm *comm = NULL;
    check_ok(fn_comm_create(&comm, ctx, FN_COMM_WORLD), "fn_comm_create");
    check(fn_comm_sum_of(comm) == FN_COMM_SUM_FLOAT32, "a communicator's sums start as float32");
    check_ok(fn_comm_set_sum(comm, FN_COMM_SUM_BF16), "fn_comm_set_sum");
    check(strcmp(fn_comm_sum_name(fn_comm_sum_of(comm)), "bf16") == 0, "the type's name");
    fn_tensor a, b;
    check_ok(fn_tensor_alloc(&a, 40, SUM_A / 40, device), "alloc");
    check_ok(fn_tensor_alloc(&b, 1, SUM_B, device), "alloc");
    float *got_a = malloc(sizeof *got_a * SUM_A), *got_b = malloc(sizeof *got_b * SUM_B);
    float *again = malloc(sizeof *again * SUM_A);
    check(got_a && got_b && again, "out of memory");
    double worst = 0;
    for (int round = 0; round < 2; round++) {
        /* Round 1: every value doubled, through the same scratch buffers:
         * rounding and adding commute with a power of two, so the sums
         * double exactly. */
        const float scale = round ? 2.0f : 1.0f;
        fill(&a, 0, SUM_A, scale);
        fill(&b, 1, SUM_B, scale);
        fn_tensor *ta[1] = {&a}, *tb[1] = {&b};
        int ticket_a = -1, ticket_b = -1;
        check_ok(fn_comm_sum_start(comm, ta, 1, &ticket_a), "sum start");
        check_ok(fn_comm_sum_start(comm, tb, 1, &ticket_b), "sum start");
        check(fn_comm_set_sum(comm, FN_COMM_SUM_FLOAT32) != FN_OK,
              "the type changed while sums were in flight");
        check_ok(fn_comm_sum_wait(comm, ticket_b), "sum wait"); /* out of order */
        check_ok(fn_comm_sum_wait(comm, ticket_a), "sum wait");
        check_ok(fn_comm_settle(comm), "settle");
        check_ok(fn_context_sync(ctx), "sync");
        if (round == 0) {
            check_sums(&a, 0, SUM_A, got_a, &worst);
            check_sums(&b, 1, SUM_B, got_b, &worst);
        } else {
            check_ok(fn_tensor_download(&a, again, SUM_A), "download");
            for (int i = 0; i < SUM_A; i++)
                check(again[i] == 2 * got_a[i], "element %d: the doubled values' sum %.9g is "
                      "not twice the sum %.9g", i, again[i], got_a[i]);
        }
    }
    /* Every rank holds the same bits. */
    uint64_t mine = hash(got_a, SUM_A) ^ hash(got_b, SUM_B), first = mine;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    check(mine == first, "the bfloat16 sums differ from rank 0's");
    if (rank_ == 0)
        printf("dist_check: %d rank%s: bfloat16 sums of %d and %d values within their bound, "
               "the largest at %.3f of it\n", size_, size_ == 1 ? "" : "s", SUM_A, SUM_B, worst);
    check_reduce_scatter_bf16(comm, device);
    free(again);
    free(got_a);
    free(got_b);
    fn_tensor_free(&a);
    fn_tensor_free(&b);
    fn_comm_destroy(comm);
    fn_context_destroy(ctx);
}

static uint64_t hash(const float *w, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *p = (const unsigned char *)w;
    for (size_t i = 0; i < n * sizeof *w; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void compare(const float *a, const float *ref, const double *s, const double *shares,
                    size_t n, int rows, fn_device device, int shard)
{
    const double k = device == FN_CUDA ? 64 : 16; /* see the top */
    const double u = ldexp(1.0, -24), gamma = rows * u / (1 - rows * u);
    const double bf16_rel = U_BF16 + bf16_gamma(size_) * (1 + U_BF16);
    double worst = 0;
    size_t differ = 0, beyond_f32 = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)ref[i]);
        differ += a[i] != ref[i];
        if (bf16_) {
            const double tol32 =
                LR * (2 * gamma + k * u) * s[i] * 1.01 + 4 * u * fabs((double)ref[i]);
            const double tol = tol32 + LR * bf16_rel * (shares[i] + gamma * s[i]) * 1.01 +
                               LR * size_ * 0x1p-133;
            check(d <= tol, "parameter element %zu: %.9g on %d ranks summing in bfloat16, %.9g "
                  "on one in float32: difference %.3g above the bound %.3g (S %.3g, sum |P_k| %.3g)",
                  i, a[i], size_, ref[i], d, tol, s[i], shares[i]);
            beyond_f32 += d > tol32;
            if (tol > 0 && d / tol > worst)
                worst = d / tol;
            continue;
        }
        if (size_ == 1) {
            check(memcmp(&a[i], &ref[i], sizeof *a) == 0,
                  "one rank under MPI differs from the plain run at parameter element %zu: "
                  "%.9g against %.9g",
                  i, a[i], ref[i]);
            continue;
        }
        const double tol = LR * (2 * gamma + k * u) * s[i] * 1.01 + 4 * u * fabs((double)ref[i]);
        check(d <= tol, "parameter element %zu: %.9g on %d ranks, %.9g on one: difference %.3g "
              "above the bound %.3g (S %.3g)", i, a[i], size_, ref[i], d, tol, s[i]);
        if (tol > 0 && d / tol > worst)
            worst = d / tol;
    }
    /* Rounded to 8 bits, the gradient moves elements beyond float32's bound:
     * none would mean the sums were not bfloat16. */
    check(!bf16_ || beyond_f32 > 0, "no parameter element is beyond the float32 sums' bound: "
          "were the sums bfloat16?");
    if (rank_ == 0)
        printf("dist_check: %d rank%s, batch %d%s%s: %zu of %zu parameter elements differ "
               "from the one-process run (%zu beyond the float32 sums' bound), the largest at "
               "%.3f of its bound\n",
               size_, size_ == 1 ? "" : "s", rows, shard ? ", optimiser sharded" : "",
               bf16_ ? ", sums in bfloat16" : "", differ, n, beyond_f32, worst);
}

/* --- the sharded collectives -------------------------------------------------------- */

/* A tensor of the collectives' check: `count` values on the device. */
static void fill_counted(fn_tensor *t, size_t count, float (*value)(size_t j, int rank),
                         fn_device device)
{
    float *host = malloc(sizeof *host * count);
    check(host != NULL, "out of memory");
    for (size_t j = 0; j < count; j++)
        host[j] = value(j, rank_);
    check_ok(fn_tensor_alloc(t, 1, (int)count, device), "alloc");
    check_ok(fn_tensor_upload(t, host, count), "upload");
    free(host);
}

static float summand(size_t j, int rank) { return (float)((rank + 1) * (int)(j + 1)); }
/* A rank's own part of the gathered tensor holds its mark; the rest 0. */
static float owned(size_t j, int rank) { return (float)(1000 * (rank + 1) + (int)j); }

static void check_collectives(fn_device device)
{
    enum { N_T = 5 };
    const size_t counts[N_T] = {1, 2, 5, 7, 64};
    const int gpu = device == FN_CUDA ? fn_world_local_rank() % fn_cuda_device_count() : -1;
    fn_context *ctx = NULL;
    check_ok(fn_context_create(&ctx, device, gpu, FN_MATH_FP32), "context");
    fn_comm *comm = NULL;
    check_ok(fn_comm_create(&comm, ctx, FN_COMM_WORLD), "fn_comm_create");
    fn_tensor whole[N_T], gathered[N_T];
    fn_tensor *w[N_T], *g[N_T];
    for (int i = 0; i < N_T; i++) {
        fill_counted(&whole[i], counts[i], summand, device);
        fill_counted(&gathered[i], counts[i], owned, device);
        w[i] = &whole[i], g[i] = &gathered[i];
    }
    int t0 = -1, t1 = -1;
    check_ok(fn_comm_reduce_scatter_start(comm, w, N_T, &t0), "reduce-scatter");
    check_ok(fn_comm_gather_start(comm, g, N_T, &t1), "gather");
    check_ok(fn_comm_settle(comm), "settle");
    const float triangle = (float)(size_ * (size_ + 1) / 2);
    for (int i = 0; i < N_T; i++) {
        float host[64];
        size_t first = 0, n = 0;
        fn_comm_part(comm, counts[i], rank_, &first, &n);
        check_ok(fn_tensor_download(&whole[i], host, counts[i]), "download");
        for (size_t j = first; j < first + n; j++)
            check(host[j] == triangle * (float)(j + 1),
                  "reduce-scatter of %zu values: element %zu is %g, expected %g", counts[i], j,
                  host[j], triangle * (float)(j + 1));
        check_ok(fn_tensor_download(&gathered[i], host, counts[i]), "download");
        for (int r = 0; r < size_; r++) {
            fn_comm_part(comm, counts[i], r, &first, &n);
            for (size_t j = first; j < first + n; j++)
                check(host[j] == owned(j, r), "gather of %zu values: element %zu is %g, rank "
                      "%d's %g", counts[i], j, host[j], r, owned(j, r));
        }
        fn_tensor_free(&whole[i]);
        fn_tensor_free(&gathered[i]);
    }
    fn_comm_destroy(comm);
    fn_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    check_ok(fn_world_init(&argc, &argv), "fn_world_init");
    check(fn_world_mpi(), "not started by mpirun (%s)", fn_world_build());
    rank_ = fn_world_rank();
    size_ = fn_world_size();
    int shard = 0;
    for (int i = 3; i < argc; i++) {
        shard += strcmp(argv[i], "shard") == 0;
        bf16_ += strcmp(argv[i], "bf16") == 0;
    }
    check(argc >= 3 && shard <= 1 && bf16_ <= 1 && 3 + shard + bf16_ == argc,
          "usage: mpirun -np N dist_check cpu|cuda BATCH [shard] [bf16]");
    const fn_device device = strcmp(argv[1], "cuda") == 0 ? FN_CUDA : FN_CPU;
    const int rows = atoi(argv[2]);
    check(rows > 0 && rows <= 4096, "batch %s", argv[2]);
    if (device == FN_CUDA && fn_cuda_device_count() < size_) {
        if (rank_ == 0)
            printf("dist_check: skipped, %d GPU(s) for %d ranks\n", fn_cuda_device_count(),
                   size_);
        fn_world_finalize();
        return SKIP;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    check_collectives(device);
    char dir[PATH_CAP] = "";
    if (rank_ == 0) {
        snprintf(dir, sizeof dir, "/tmp/fn_dist_check_XXXXXX");
        check(mkdtemp(dir) != NULL, "mkdtemp");
    }
    MPI_Bcast(dir, PATH_CAP, MPI_CHAR, 0, MPI_COMM_WORLD);

    float *x = malloc(sizeof *x * (size_t)rows * IN);
    int32_t *y = malloc(sizeof *y * (size_t)rows);
    check(x && y, "out of memory");
    char path[PATH_CAP + 32];
    snprintf(path, sizeof path, "%s/rank%d.h5", dir, rank_);
    write_set(path, rows, x, y);
    char out[PATH_CAP + 32];
    snprintf(out, sizeof out, "%s/world", dir);
    if (bf16_)
        check_comm(device);
    fn_config *cfg = config(dir, argv[1], rows, out, bf16_ ? "bf16" : "float32", shard);
    snprintf(out, sizeof out, "%s/alone%d", dir, rank_);
    fn_config *cfg_alone = config(dir, argv[1], rows, out, "float32", 0);
    size_t n = 0, n_ref = 0;
    float *a = train_once(cfg, 0, &n);
    float *ref = train_once(cfg_alone, 1, &n_ref);
    check(n == n_ref, "parameter counts differ");
    if (bf16_) { /* the same bits run to run */
        size_t n2 = 0;
        float *a2 = train_once(cfg, 0, &n2);
        check(n2 == n && memcmp(a, a2, sizeof *a * n) == 0,
              "two runs summing in bfloat16 give different weights");
        free(a2);
    }
    double *shares = NULL;
    double *s = row_sums(cfg, path, device, rows, x, y, n, &shares);
    compare(a, ref, s, shares, n, rows, device, shard);

    /* The same bits on every rank. */
    uint64_t mine = hash(a, n), first = mine;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    check(mine == first, "weights differ from rank 0's after the step");

    free(s);
    free(shares);
    free(ref);
    free(a);
    free(x);
    free(y);
    fn_config_destroy(cfg);
    fn_config_destroy(cfg_alone);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) {
        char cmd[PATH_CAP + 16];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "dist_check: could not remove %s\n", dir);
    }
    fn_world_finalize();
    return 0;
}
