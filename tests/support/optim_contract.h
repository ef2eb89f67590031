/* optim_contract.h — what every optimiser's test checks alike: the
 * contract of optimizer.h on an optimiser made over two parameters, its
 * hand-worked cases run on each device, and the bit-for-bit comparison
 * those cases need. Include after <cmocka.h>. */
#ifndef FN_TEST_OPTIM_CONTRACT_H
#define FN_TEST_OPTIM_CONTRACT_H

#include "fusenet/optimizer.h"

/* Whether t's first n values are want's bits, printing the first
 * difference as "    <name>, <what> [i]: got ..., expected ...". */
int same_bits(const char *what, const char *name, const fn_tensor *t, const float *want, int n);

/* run(ctx, i) for each of n cases on a context of device (the test is
 * skipped without one), each printing its line; fails the test when any
 * returned 0. */
void run_cases(fn_device device, int n, int (*run)(fn_context *ctx, int i));

/* run_cases(device, n, run) as the tests test_<name>_cpu and _cuda. */
#define CASES_ON_EACH_DEVICE(name, run, n)                                      \
    static void check_##name(fn_device device) { run_cases(device, (int)(n), run); } \
    TESTS_ON_EACH_DEVICE(name, check_##name)

/* Prints a case's line, "    <name> ok" or FAIL; returns ok. */
int case_line(const char *name, int ok);

/* The inputs of the comparisons with torch.optim at its defaults: theta
 * [1, -2, 0.5] and three steps' gradients. */
extern const float contract_theta0[3];
extern const float contract_torch_grads[3][3];

/* The two parameters an optimiser's tests step, on device: "weight"
 * [1, n] and "bias" [1, 1], with values theta and gradients g (the bias:
 * their first column); list points at them, as the optimisers take them. */
void contract_params(fn_param params[2], fn_param *list[2], int n, const float *theta,
                     const float *g, fn_device device);
/* An interface check's fixture: a context on device (the test skipped
 * without one) and the two parameters contract_params makes;
 * contract_close frees both. */
typedef struct contract {
    fn_context *ctx;
    fn_param params[2];
    fn_param *list[2];
} contract;
void contract_open(contract *k, fn_device device, int n, const float *theta, const float *g);
void contract_close(contract *k);

/* New gradients g for both (the bias: g[0]). */
void contract_grads(fn_param params[2], int n, const float *g);
/* Both parameters back at values theta and gradients g, as contract_params
 * made them. */
void contract_restart(fn_param params[2], int n, const float *theta, const float *g);
/* Asserts that the weight holds want's bits after two steps of
 * "fn_optimizer" and the bias want[0]'s. */
void expect_after2(const fn_param params[2], int n, const float *want);

/* Two steps of opt over the two parameters: from their gradients as they
 * are, then from g2 (contract_grads); asserts the count 2 and want's
 * values after them (expect_after2). */
void contract_two_steps(fn_optimizer *opt, fn_param params[2], int n, const float *g2,
                        const float *want);

/* Fails the test at the first of the count values where the tensors on
 * the CPU and on the GPU differ in bits: "<what> [i]: CPU x, CUDA y". */
void expect_cpu_gpu_same(const char *what, const fn_tensor *cpu, const fn_tensor *gpu, int count);

/* Whether the n values of `value` lie within tol of torch's (want),
 * printing the largest difference as "    <run> largest difference from
 * torch ...". */
int near_torch(const char *run, const fn_tensor *value, const double *want, int n, double tol);
void contract_params_free(fn_param params[2]);

/* optimizer.h's contract on opt, made over two parameters with state to
 * publish: its name; the n_state kinds of state it publishes, called
 * state_names, a tensor for each parameter, NULL past the last kind and
 * the last parameter; a step with a learning rate of NaN refused
 * (FN_ERR_INVALID, the message naming "<name> step <N>") and not counted.
 * The learning rate is left NaN. */
void expect_optimizer_contract(fn_optimizer *opt, const char *name,
                               const char *const *state_names, int n_state);

#endif
