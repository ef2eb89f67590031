/* trainer_provenance.c — the provenance of the files a run writes
 * (provenance.h): made once the run is set up (its config resolved, its
 * device open, its sets read and checksummed as they were opened, a
 * resumed checkpoint's start read), each file then stamped with the time
 * it was written. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fusenet/version.h"
#include "trainer/trainer_impl.h"

/* "2026-01-02T03:04:05Z" */
static void utc_text(time_t when, char *buf, size_t cap)
{
    struct tm tm;
    if (gmtime_r(&when, &tm))
        strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
        snprintf(buf, cap, "?");
}

/* <set>_path, <set>_datasets and <set>_checksum of a set the run read. */
static fn_status add_set(fn_provenance *p, const char *set, fn_data *data)
{
    enum { ABOUT = 512 };
    char name[32], about[ABOUT], checksum[24];
    uint64_t sum = 0;
    FN_TRY(fn_data_fingerprint(data, about, sizeof about, &sum));
    snprintf(checksum, sizeof checksum, "%016llx", (unsigned long long)sum);
    snprintf(name, sizeof name, "%s_path", set);
    /* The absolute path, which still says where the file was when the
     * run's directory is forgotten; a memory set's name as it is. */
    char *absolute = realpath(fn_data_path(data), NULL);
    fn_status st = fn_provenance_set(p, name, absolute ? absolute : fn_data_path(data));
    free(absolute);
    FN_TRY(st);
    snprintf(name, sizeof name, "%s_datasets", set);
    FN_TRY(fn_provenance_set(p, name, about));
    snprintf(name, sizeof name, "%s_checksum", set);
    return fn_provenance_set(p, name, checksum);
}

/* started: when the run began; a resumed run keeps the start its
 * checkpoint records (its own when the checkpoint has none) and adds
 * resumed, when this process took it up. */
static fn_status add_start(const fn_trainer *t, fn_provenance *p)
{
    char now[32];
    utc_text(t->started, now, sizeof now);
    if (!t->resuming)
        return fn_provenance_set(p, "started", now);
    fn_provenance *before = NULL;
    FN_TRY(fn_provenance_read(&before, t->checkpoint_path));
    const char *started = fn_provenance_get(before, "started");
    fn_status st = fn_provenance_set(p, "started", started ? started : now);
    if (st == FN_OK)
        st = fn_provenance_set(p, "resumed", now);
    fn_provenance_destroy(before);
    return st;
}

static fn_status fill(const fn_trainer *t, fn_provenance *p)
{
    char text[256];
    FN_TRY(fn_provenance_set(p, "fusenet_version", fn_version()));
    FN_TRY(fn_provenance_set(p, "fusenet_commit", fn_version_commit()));
    char *config = NULL;
    FN_TRY(fn_config_resolved_text(t->cfg, 1, &config));
    fn_status st = fn_provenance_set(p, "config", config);
    free(config);
    FN_TRY(st);
    fn_context_describe(t->ctx, text, sizeof text);
    FN_TRY(fn_provenance_set(p, "device", text));
    FN_TRY(fn_provenance_set(p, "math", fn_math_name(fn_context_math(t->ctx))));
    snprintf(text, sizeof text, "%d", t->ranks);
    FN_TRY(fn_provenance_set(p, "ranks", text));
    FN_TRY(add_start(t, p));
    FN_TRY(add_set(p, "train", t->train));
    if (t->valid)
        FN_TRY(add_set(p, "valid", t->valid));
    return FN_OK;
}

fn_status fn_trainer_make_provenance(fn_trainer *t)
{
    FN_TRY(fn_provenance_create(&t->provenance));
    return fill(t, t->provenance);
}

fn_status fn_trainer_provenance(fn_trainer *t, const fn_provenance **prov)
{
    char text[32];
    utc_text(time(NULL), text, sizeof text);
    FN_TRY(fn_provenance_set(t->provenance, "ended", text));
    *prov = t->provenance;
    return FN_OK;
}
