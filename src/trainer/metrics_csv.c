/* metrics_csv.c — metrics.csv, rewritten when a run starts (atomically: a
 * temporary renamed over it): a resumed run keeps the lines of the epochs
 * its checkpoint covers and drops any an interrupted run wrote after it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/atomic_file.h"
#include "store/regular_file.h"
#include "trainer/metrics_csv.h"

struct fn_metrics_csv {
    FILE *file;
};

static const char header[] =
    "epoch,train_loss,train_acc,valid_loss,valid_acc,seconds,samples_per_s,lr,grad_norm\n";

/* The header and the first `epochs` lines of path in *kept (malloc'ed;
 * NULL when there is nothing to keep: no file, or a fresh run). A path
 * that is not a regular file is refused (a FIFO would block the read). */
static fn_status kept_lines(const char *path, long long epochs, char **kept, size_t *len)
{
    *kept = NULL;
    *len = 0;
    int fd = -1;
    long long size = 0;
    if (epochs <= 0 || (access(path, F_OK) != 0 && errno == ENOENT))
        return FN_OK;
    FN_TRY(fn_open_regular_file(path, &fd, &size));
    FILE *old = fdopen(fd, "r");
    if (!old) {
        close(fd);
        return fn_fail(FN_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    FILE *mem = open_memstream(kept, len);
    int c;
    long long lines = 0;
    while (mem && (c = fgetc(old)) != EOF && lines <= epochs) {
        fputc(c, mem);
        lines += c == '\n';
    }
    fclose(old);
    if (!mem)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    fclose(mem);
    return FN_OK;
}

/* The kept lines (or the header) go to a new temporary that is synced and
 * renamed over path (atomic_file.h), so a kill during the rewrite leaves
 * the old file whole; the epochs to come are appended to the new one. */
static fn_status rewrite(fn_metrics_csv *csv, const char *path, const char *text)
{
    char *tmp = NULL;
    int fd = -1;
    FN_TRY(fn_atomic_create(path, &tmp, &fd));
    fn_status st = FN_OK;
    csv->file = fdopen(fd, "w");
    if (!csv->file) {
        close(fd);
        st = fn_fail(FN_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    } else if (fputs(text, csv->file) == EOF || fflush(csv->file) != 0) {
        st = fn_fail(FN_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    }
    if (st == FN_OK)
        st = fn_atomic_commit(tmp, path); /* removes tmp when it fails */
    else
        fn_atomic_abandon(tmp);
    free(tmp);
    return st;
}

fn_status fn_metrics_csv_open(fn_metrics_csv **out, const char *path, long long epochs)
{
    *out = NULL;
    fn_metrics_csv *csv = calloc(1, sizeof *csv);
    if (!csv)
        return fn_fail(FN_ERR_NOMEM, "out of memory");
    size_t len = 0;
    char *kept = NULL;
    fn_status st = kept_lines(path, epochs, &kept, &len);
    if (st == FN_OK)
        st = rewrite(csv, path, kept && len ? kept : header);
    free(kept);
    if (st != FN_OK) {
        fn_metrics_csv_close(csv);
        return st;
    }
    *out = csv;
    return FN_OK;
}

void fn_metrics_csv_add(fn_metrics_csv *csv, long long epoch, double train_loss, double train_acc,
                        double valid_loss, double valid_acc, double seconds,
                        double samples_per_s, double lr, double grad_norm)
{
    fprintf(csv->file, "%lld,%.9g,%.9g,%.9g,%.9g,%.3f,%.1f,%.9g,%.9g\n", epoch, train_loss,
            train_acc, valid_loss, valid_acc, seconds, samples_per_s, lr, grad_norm);
    fflush(csv->file);
}

void fn_metrics_csv_close(fn_metrics_csv *csv)
{
    if (!csv)
        return;
    if (csv->file)
        fclose(csv->file);
    free(csv);
}
