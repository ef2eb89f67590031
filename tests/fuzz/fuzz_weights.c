/* fuzz_weights.c — libFuzzer harness for the HDF5 weights and checkpoint
 * loaders. Each input is written to a private scratch file, then a network
 * is built from it (fn_weights_build) and it is loaded into a fixed network
 * as weights (fn_weights_load) and as a checkpoint with momentum buffers
 * (fn_checkpoint_load), and its provenance is summarised
 * (fn_provenance_file_summary) (fuzz_entry.h). Any crash, leak, undefined
 * behaviour, HDF5 object left open or failure without a message naming the
 * file aborts. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_entry.h"
#include "fuzz_file.h"
#include "fuzz_sanitizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *weights_path;
static fuzz_model model;

static void release_model(void) { fuzz_model_destroy(&model); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_h5_init(0); /* in one process, without the probe (fuzz_entry.h) */
    fuzz_setup(fuzz_model_create(&model), "fuzz_weights");
    atexit(release_model);
    fuzz_make_dir("weights");
    weights_path = fuzz_path("weights.h5");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(weights_path, data, size);
    if (fuzz_weights_run(&model, weights_path) != 0)
        abort();
    return 0;
}
