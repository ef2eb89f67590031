/* metrics_csv.c — metrics.csv, rewritten when a run starts: a resumed run
 * keeps the lines of the epochs its checkpoint covers and drops any an
 * interrupted run wrote after it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/metrics_csv.h"

struct fn_metrics_csv {
    FILE *file;
};

static const char header[] =
    "epoch,train_loss,train_acc,valid_loss,valid_acc,seconds,samples_per_s\n";

/* The header and the first `epochs` lines of path, malloc'ed; NULL when
 * there is nothing to keep. */
static char *kept_lines(const char *path, long long epochs, size_t *len)
{
    char *kept = NULL;
    *len = 0;
    FILE *old = epochs > 0 ? fopen(path, "r") : NULL;
    if (!old)
        return NULL;
    FILE *mem = open_memstream(&kept, len);
    int c;
    long long lines = 0;
    while (mem && (c = fgetc(old)) != EOF && lines <= epochs) {
        fputc(c, mem);
        lines += c == '\n';
    }
    fclose(old);
    if (mem)
        fclose(mem);
    return kept;
}

fn_status fn_metrics_csv_open(fn_metrics_csv **out, const char *path, long long epochs)
{
    *out = NULL;
    fn_metrics_csv *csv = calloc(1, sizeof *csv);
    if (!csv)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    size_t len = 0;
    char *kept = kept_lines(path, epochs, &len);
    csv->file = fopen(path, "w");
    if (!csv->file) {
        fn_status st = fn_fail(FN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(kept);
        free(csv);
        return st;
    }
    fputs(kept && len ? kept : header, csv->file);
    free(kept);
    fflush(csv->file);
    *out = csv;
    return FN_OK;
}

void fn_metrics_csv_add(fn_metrics_csv *csv, long long epoch, double train_loss, double train_acc,
                        double valid_loss, double valid_acc, double seconds,
                        double samples_per_s)
{
    fprintf(csv->file, "%lld,%.9g,%.9g,%.9g,%.9g,%.3f,%.1f\n", epoch, train_loss, train_acc,
            valid_loss, valid_acc, seconds, samples_per_s);
    fflush(csv->file);
}

void fn_metrics_csv_close(fn_metrics_csv *csv)
{
    if (!csv)
        return;
    fclose(csv->file);
    free(csv);
}
