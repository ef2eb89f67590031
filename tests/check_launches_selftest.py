#!/usr/bin/env python3
"""check_launches_selftest.py — scripts/check_launches.py catches each breach
of the launch rules (src/core/kernel_launch_cuda.cuh) and passes clean code.

Each case writes one kernels/x_cuda.cu into a fresh temporary tree, runs the
check on it and expects its exit status and, on failure, a message naming
the file and the problem.

Usage: check_launches_selftest.py <path of check_launches.py>; exit 1 on the
first case that does not behave.
"""
import sys

from selftest_tree import selftest

CLEAN = """
/* a comment may say <<< and __global__ void f() { } */
__global__ void __launch_bounds__(256) good_kernel(float *x, int n)
{
    FN_GRID_WAIT();
    __shared__ float s[32];
    if (n == 0) return;
    x[0] = s[0];
}
__global__ void declared_kernel(float *x);
template <int Q>
__global__ void tmpl_kernel(float *x) { FN_GRID_WAIT(); x[0] = Q; }
static fn_status go(fn_context *ctx, float *x, int n, cudaStream_t s)
{
    if (n > 4)
        fn_launch(ctx, good_kernel, 1, 256, 0, s, x, n);
    else
        fn_launch(ctx, tmpl_kernel<2>, 1, 256, 0, s, x);
    FN_CUDA_CHECK_LAUNCH(good_kernel);
    with([&] {
        fn_launch(ctx, good_kernel, 1, 256, 0, s, x, n);
    });
    FN_CUDA_CHECK_LAUNCH(good_kernel);
    fn_launch(ctx, good_kernel, 1, 256, 0, s, x, n);
    FN_CUDA_CHECK(cudaGetLastError());
    return FN_OK;
}
"""

# (name, source, the message's words); each breaks one rule.
BROKEN = [
    ("chevron launch", CLEAN.replace(
        "    return FN_OK;", "    good_kernel<<<1, 256, 0, s>>>(x, n);\n    return FN_OK;"),
     "`<<<` launch"),
    ("kernel without the wait", CLEAN.replace(
        "    FN_GRID_WAIT();\n    __shared__", "    __shared__"), "good_kernel does not open"),
    ("the wait after an early return", CLEAN.replace(
        "    FN_GRID_WAIT();\n    __shared__ float s[32];\n    if (n == 0) return;",
        "    if (n == 0) return;\n    FN_GRID_WAIT();"), "good_kernel does not open"),
    ("one-line kernel without the wait", CLEAN.replace(
        "{ FN_GRID_WAIT(); x[0] = Q; }", "{ x[0] = Q; }"), "tmpl_kernel does not open"),
    ("launch without its check", CLEAN.replace(
        "    FN_CUDA_CHECK(cudaGetLastError());\n", ""), "not followed by"),
    ("launch attribute outside the helper", CLEAN.replace(
        "    return FN_OK;",
        "    int a = cudaLaunchAttributeProgrammaticStreamSerialization;\n    return FN_OK;"),
     "ProgrammaticStreamSerialization outside"),
    ("own wait outside the helper", CLEAN.replace(
        "x[0] = s[0];", "cudaGridDependencySynchronize(); x[0] = s[0];"),
     "cudaGridDependencySynchronize outside"),
]


def main(argv):
    cases = [(name, {"kernels/x_cuda.cu": source}, f"'{words}'",
              lambda out, words=words: words in out and "kernels/x_cuda.cu:" in out)
             for name, source, words in BROKEN]
    return selftest(argv[1], {"kernels/x_cuda.cu": CLEAN}, cases, "clean code")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
