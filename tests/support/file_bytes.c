/* file_bytes.c — a whole file's bytes in memory (file_bytes.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "file_bytes.h"

file_bytes file_bytes_read(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        fail_msg("cannot read %s", path);
    file_bytes b = {0};
    fseek(in, 0, SEEK_END);
    b.size = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    b.data = malloc(b.size ? b.size : 1);
    assert_non_null(b.data);
    assert_int_equal(fread(b.data, 1, b.size, in), b.size);
    fclose(in);
    return b;
}

void file_bytes_write(const char *path, const file_bytes *b)
{
    FILE *out = fopen(path, "wb");
    if (!out)
        fail_msg("cannot write %s", path);
    assert_int_equal(fwrite(b->data, 1, b->size, out), b->size);
    fclose(out);
}

void file_bytes_copy(const char *from, const char *to)
{
    file_bytes b = file_bytes_read(from);
    file_bytes_write(to, &b);
    free(b.data);
}
