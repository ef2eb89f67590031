/* fuzz_file.c — the harnesses' scratch files (fuzz_file.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"

enum { FUZZ_PATH_CAP = 512, FUZZ_MAX_FILES = 4 };

static char dir[FUZZ_PATH_CAP];
static char files[FUZZ_MAX_FILES][FUZZ_PATH_CAP];
static int n_files;

static void cleanup(void)
{
    for (int i = 0; i < n_files; i++)
        remove(files[i]);
    if (dir[0])
        rmdir(dir);
}

/* Creates the private directory; exits on failure (nothing can be fuzzed). */
void fuzz_make_dir(const char *harness)
{
    const char *base = getenv("TMPDIR");
    if (!base || !base[0])
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/fn_%s_XXXXXX", base, harness);
    if (!mkdtemp(dir)) {
        perror("fuzz: mkdtemp");
        exit(1);
    }
    atexit(cleanup);
}

/* The path of `name` in the private directory, registered for removal. */
const char *fuzz_path(const char *name)
{
    if (n_files == FUZZ_MAX_FILES) {
        fprintf(stderr, "fuzz: more than %d scratch files\n", FUZZ_MAX_FILES);
        exit(1);
    }
    char *p = files[n_files++];
    snprintf(p, FUZZ_PATH_CAP, "%s/%s", dir, name);
    return p;
}

/* Replaces the file at path with data[0, size): a new inode each time, so
 * nothing cached for the previous input can match it. Exits on failure. */
void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    remove(path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror("fuzz: writing the input");
        exit(1);
    }
}

