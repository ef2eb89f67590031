/* fuzz_data.c — libFuzzer harness for the HDF5 data loader. Each input is
 * written to a private scratch file and opened with fn_data_open three ways
 * (labels for cross-entropy, float targets read in slabs, inputs only), then
 * one epoch's batches are taken and the set is seeked (fuzz_entry.h). Any
 * crash, leak, undefined behaviour, HDF5 object left open or failure without
 * a message naming the file aborts. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_entry.h"
#include "fuzz_file.h"
#include "fuzz_sanitizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *data_path;
static fn_context *cpu;

static void release_context(void) { fn_context_destroy(cpu); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_h5_init(0); /* in one process, without the probe (fuzz_entry.h) */
    fuzz_setup(fn_context_create(&cpu, FN_CPU, -1, FN_MATH_FP32), "fuzz_data");
    atexit(release_context);
    fuzz_make_dir("data");
    data_path = fuzz_path("set.h5");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(data_path, data, size);
    if (fuzz_data_run(cpu, data_path) != 0)
        abort();
    return 0;
}
