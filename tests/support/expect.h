/* expect.h — the checks the tests of the library's API share: a call that
 * must return FN_OK (else the test fails with the library's message), and
 * the skip of a CUDA test on a machine without a GPU. Include after
 * <cmocka.h>: these fail and skip through cmocka. */
#ifndef FN_TEST_EXPECT_H
#define FN_TEST_EXPECT_H

#include "fusenet/device.h"
#include "fusenet/net.h"
#include "fusenet/status.h"
#include "fusenet/tensor.h"

/* Fails the test unless `call` returns FN_OK, with file:line, the call's
 * text and fn_last_error(). */
#define EXPECT_OK(call)                                                                  \
    do {                                                                                 \
        fn_status st_ = (call);                                                          \
        if (st_ != FN_OK)                                                                \
            fail_msg("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, fn_last_error()); \
    } while (0)

/* Fails the test unless `call` returns `status` and fn_last_error()
 * contains `needle`, with file:line. */
#define EXPECT_FAIL(call, status, needle) \
    expect_fail_at((call), (status), (needle), __FILE__, __LINE__)
void expect_fail_at(fn_status got, fn_status want, const char *needle, const char *file,
                    int line);

/* Fails the test unless st is FN_OK, with the status' name and
 * fn_last_error(). */
void must(fn_status st);

/* A check run on each device as two cmocka tests: test_<name>_cpu calls
 * check(FN_CPU), test_<name>_cuda check(FN_CUDA). */
#define TESTS_ON_EACH_DEVICE(name, check)            \
    static void test_##name##_cpu(void **state)      \
    {                                                \
        (void)state;                                 \
        check(FN_CPU);                               \
    }                                                \
    static void test_##name##_cuda(void **state)     \
    {                                                \
        (void)state;                                 \
        check(FN_CUDA);                              \
    }

/* Skips the test (with a line saying why) when there is no CUDA GPU, and
 * counts the skip for gpu_program_status. */
void skip_without_gpu(void);

/* Skips the test (with a line saying why) when the library was built
 * without FN_TEST_HOOKS (the tests that stop or slow a run from inside),
 * and counts the skip for test_program_status. */
void skip_without_test_hooks(void);

/* The exit status ctest reads as "skipped" (SKIP_RETURN_CODE of every
 * test program in tests/CMakeLists.txt). */
enum { GPU_TESTS_SKIPPED = 77 };

/* The exit status of a test program (TEST_MAIN) whose group ended with
 * `failed` failures: those when any, else GPU_TESTS_SKIPPED when a test
 * skipped for want of the test hooks, so that a build without them shows
 * the program skipped, not passed (its other tests still ran and passed). */
int test_program_status(int failed);

/* The exit status of a GPU test program (test_*_cuda.c) whose group ended
 * with `failed` failures: those when any, else GPU_TESTS_SKIPPED when a
 * test skipped for want of a GPU, so that ctest's summary shows the
 * program skipped, not passed (its CPU-only tests, where it has some, still
 * ran and passed); else test_program_status's. */
int gpu_program_status(int failed);

/* An fp32 context on device (GPU 0 for CUDA); skips the test for CUDA
 * without a GPU, fails it when the context cannot be made. */
fn_context *context_or_skip(fn_device device);

/* A new host array (free it) holding t's values, on whichever device t is. */
float *tensor_to_host(const fn_tensor *t);

/* Fails the test, "<what> differs", unless a and b hold the same count of
 * values with the same bits, on whichever devices they are. */
void expect_tensors_equal(const fn_tensor *a, const fn_tensor *b, const char *what);

/* cmocka group fixtures: *state is an fp32 CPU context, and its release. */
int setup_cpu_context(void **state);
int teardown_context(void **state);

/* fn_net_find_nonfinite(net, with_grads) must succeed and name layer
 * `layer` (-1: nothing found), of kind `kind` and value `what` where
 * those are not NULL; returns what it found, for the element's checks. */
fn_nonfinite expect_nonfinite(const fn_net *net, int with_grads, int layer, const char *kind,
                              const char *what);

#endif
