/* fuzz_config.c — libFuzzer harness for the config loader. Each input is an
 * INI file, written to a private directory (which also holds empty
 * train.h5 and valid.h5, so relative data paths can resolve) and read with
 * fn_config_load; its "#--set section.key=value" lines, comments to inih,
 * are then applied with fn_config_set, and fn_config_finish runs the checks
 * across keys. Any crash, leak, undefined behaviour or failure without a
 * message naming the file aborts (fuzz_entry.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_entry.h"
#include "fuzz_file.h"
#define FUZZ_FAST_UNWIND /* no HDF5 here */
#include "fuzz_sanitizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *config_path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_make_dir("config");
    fuzz_write(fuzz_path("train.h5"), NULL, 0);
    fuzz_write(fuzz_path("valid.h5"), NULL, 0);
    config_path = fuzz_path("config.ini");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(config_path, data, size);
    if (fuzz_config_run(config_path, data, size) != 0)
        abort();
    return 0;
}
