/* fuzz_file.h — the harnesses' scratch files: one private directory per
 * fuzzing process (under $TMPDIR, else /dev/shm, else /tmp), into which each
 * input is written before the real loader opens it by path. The directory
 * and its files are removed at exit. Errors here stop the process: nothing
 * can be fuzzed without them. */
#ifndef FN_FUZZ_FILE_H
#define FN_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Creates the private directory fn_<harness>_XXXXXX. */
void fuzz_make_dir(const char *harness);
/* The path of `name` in the private directory, registered for removal. */
const char *fuzz_path(const char *name);
/* Replaces the file at path with data[0, size): a new inode each time, so
 * nothing HDF5 cached for the previous input can match it. */
void fuzz_write(const char *path, const uint8_t *data, size_t size);

#endif
