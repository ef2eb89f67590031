/* under_asan.h — UNDER_ASAN: 1 in a build with AddressSanitizer (GCC's
 * __SANITIZE_ADDRESS__ or clang's feature), else 0; for the tests that
 * must skip what ASan cannot run (a child under RLIMIT_AS). */
#ifndef FN_TEST_UNDER_ASAN_H
#define FN_TEST_UNDER_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#endif
