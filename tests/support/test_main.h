/* test_main.h — a test file's main: its cmocka tests run as one group,
 * with the group's setup and teardown (NULL: none), or each test with the
 * same per-test setup and teardown; its exit status test_program_status's
 * or gpu_program_status's (expect.h: 77, skipped, when a test skipped for
 * want of the test hooks or a GPU). Include after <cmocka.h>. */
#ifndef FN_TEST_MAIN_H
#define FN_TEST_MAIN_H

#include "expect.h"

#define TEST_MAIN(setup, teardown, ...)                                              \
    int main(void)                                                                   \
    {                                                                                \
        const struct CMUnitTest tests_[] = {__VA_ARGS__};                            \
        return test_program_status(cmocka_run_group_tests(tests_, setup, teardown)); \
    }

/* TEST_MAIN for a GPU test program: its status as gpu_program_status
 * (expect.h) makes it, so a machine without a GPU reports the tests as
 * skipped. */
#define GPU_TEST_MAIN(setup, teardown, ...)                                         \
    int main(void)                                                                  \
    {                                                                               \
        const struct CMUnitTest tests_[] = {__VA_ARGS__};                           \
        return gpu_program_status(cmocka_run_group_tests(tests_, setup, teardown)); \
    }

/* A test file's main whose tests each run between the same per-test setup
 * and teardown (a fresh fixture for each), named once:
 * TEST_MAIN_EACH(setup, teardown, cmocka_unit_test(a), cmocka_unit_test(b)). */
#define TEST_MAIN_EACH(setup, teardown, ...)                                    \
    int main(void)                                                              \
    {                                                                           \
        struct CMUnitTest tests_[] = {__VA_ARGS__};                             \
        for (size_t i_ = 0; i_ < sizeof tests_ / sizeof tests_[0]; i_++) {      \
            tests_[i_].setup_func = setup;                                      \
            tests_[i_].teardown_func = teardown;                                \
        }                                                                       \
        return test_program_status(cmocka_run_group_tests(tests_, NULL, NULL)); \
    }

#endif
