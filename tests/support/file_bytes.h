/* file_bytes.h — a whole file's bytes in memory, for the tests that damage
 * a file, put it back, or check that a run left it as it was. */
#ifndef FN_TEST_FILE_BYTES_H
#define FN_TEST_FILE_BYTES_H

#include <stddef.h>

typedef struct file_bytes {
    unsigned char *data; /* [size]; free it */
    size_t size;
} file_bytes;

/* The file's bytes; fails the test when it cannot be read. */
file_bytes file_bytes_read(const char *path);
/* Writes b as the file at path (replacing it); fails the test on error. */
void file_bytes_write(const char *path, const file_bytes *b);
/* from's bytes written as to. */
void file_bytes_copy(const char *from, const char *to);

#endif
