/* test_main.h — a test file's main: its cmocka tests run as one group,
 * with the group's setup and teardown (NULL: none). Include after
 * <cmocka.h>. */
#ifndef FN_TEST_MAIN_H
#define FN_TEST_MAIN_H

#define TEST_MAIN(setup, teardown, ...)                          \
    int main(void)                                               \
    {                                                            \
        const struct CMUnitTest tests_[] = {__VA_ARGS__};        \
        return cmocka_run_group_tests(tests_, setup, teardown);  \
    }

#endif
