/* test_init_curand.c — the CPU's Philox uniforms (src/core/philox.c) are
 * cuRAND's: bit for bit the output of cuRAND's host Philox4x32-10 generator
 * (curandCreateGeneratorHost, which needs no GPU) for seeds that use both
 * key words, offsets on and off a block of four, across the 65536
 * subsequences and past 2^32 values, and lengths not a multiple of four.
 * Built only where the CUDA toolkit is (tests/CMakeLists.txt); runs on the
 * CPU. Also fn_init_uniform's CPU draw, continued over two calls, equals
 * one draw of both. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <curand.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "fusenet/init.h"
#include "fusenet/tensor.h"
#include "test_main.h"

static void expect_curand(uint64_t seed, uint64_t offset, size_t n)
{
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    assert_non_null(want);
    assert_non_null(got);
    curandGenerator_t gen;
    assert_int_equal(curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10),
                     CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetPseudoRandomGeneratorSeed(gen, seed), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandSetGeneratorOffset(gen, offset), CURAND_STATUS_SUCCESS);
    assert_int_equal(curandGenerateUniform(gen, want, n), CURAND_STATUS_SUCCESS);
    curandDestroyGenerator(gen);
    fn_philox_uniform(got, n, seed, offset);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            fail_msg("seed %llu offset %llu: value %zu is %a, cuRAND's %a",
                     (unsigned long long)seed, (unsigned long long)offset, i, (double)got[i],
                     (double)want[i]);
    free(want);
    free(got);
}

static void test_philox_is_curand(void **state)
{
    (void)state;
    const uint64_t seeds[] = {0, 1, 42, 0x123456789abcdefULL, UINT64_MAX};
    /* 262141: three values before block 65536, the first of the second step. */
    const uint64_t offsets[] = {0, 1, 3, 4, 7, 262141, 1000001, (1ULL << 34) + 3};
    for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++)
        for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++)
            expect_curand(seeds[s], offsets[o], 300007);
    expect_curand(7, 0, 1);
    expect_curand(7, 5, 2);
}

static void test_init_uniform_continues(void **state)
{
    (void)state;
    fn_tensor whole = {0}, first = {0}, second = {0};
    assert_int_equal(fn_tensor_alloc(&whole, 3, 37, FN_CPU), FN_OK);
    assert_int_equal(fn_tensor_alloc(&first, 1, 37, FN_CPU), FN_OK);
    assert_int_equal(fn_tensor_alloc(&second, 2, 37, FN_CPU), FN_OK);
    fn_rng a = {.seed = 9, .offset = 11}, b = a;
    assert_int_equal(fn_init_uniform(&whole, -0.5f, 0.25f, &a), FN_OK);
    assert_int_equal(fn_init_uniform(&first, -0.5f, 0.25f, &b), FN_OK);
    assert_int_equal(fn_init_uniform(&second, -0.5f, 0.25f, &b), FN_OK);
    assert_int_equal(a.offset, b.offset);
    assert_memory_equal(whole.data, first.data, 37 * sizeof(float));
    assert_memory_equal(whole.data + 37, second.data, 74 * sizeof(float));
    fn_tensor_free(&whole);
    fn_tensor_free(&first);
    fn_tensor_free(&second);
}

TEST_MAIN(NULL, NULL, cmocka_unit_test(test_philox_is_curand),
          cmocka_unit_test(test_init_uniform_continues))
