/* trainer_agree.c — the ranks of a run agree on what they run before they
 * share anything else. Each rank's fingerprint, the resolved value of
 * every config key that changes the run (fn_config_key_text), the device
 * it resolved to, whether it resumes, and each data set it reads (its
 * file, datasets, shapes, stored types and a checksum of every value:
 * fn_data_fingerprint), goes to rank 0 in one MPI_Igather; rank 0 compares
 * every rank's with its own and sends its verdict to all in one MPI_Ibcast.
 * A difference fails every rank with the same message, naming the first
 * key or file that differs, both values and the ranks that differ
 * (FN_ERR_RANKS_DIFFER). Paths are not compared (a node's own copy of a
 * file may sit elsewhere): a set's content is; an init file's and a
 * resumed checkpoint's are, as the parameters they give, by the hash of
 * every parameter at the start (trainer_dist.c). It runs before the
 * communicator is made (an NCCL backend's set-up is a collective of its
 * own) and before any step, whose collectives would otherwise meet
 * mismatched ones inside MPI (another batch size or row count) or train
 * on silently (another file of the same shape). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "fusenet/config.h"
#include "trainer/trainer_impl.h"

/* Every item travels as a fixed record, so every rank sends the same
 * number of bytes whatever its values: the hash of the whole value and as
 * much of its text as a message needs (the end of a long one). */
enum { NAME_CAP = 40, VALUE_CAP = 216, MAX_ITEMS = 64, VERDICT_CAP = 960, TEXT_CAP = 8192 };

typedef struct agree_item {
    uint64_t hash;
    char name[NAME_CAP];   /* "[train] batch_size", "[data] train" */
    char value[VALUE_CAP]; /* the value's text, its end when too long */
} agree_item;

typedef struct fingerprint {
    int32_t n, unused;
    agree_item items[MAX_ITEMS];
} fingerprint;

/* An item compared by the hash of `compared` and shown as `text`. */
static fn_status add_item(fingerprint *f, const char *name, const char *text, const char *compared)
{
    if (f->n >= MAX_ITEMS)
        return fn_fail(FN_ERR_INVALID, "the ranks' fingerprint has more than %d items", MAX_ITEMS);
    agree_item *it = &f->items[f->n++];
    it->hash = fn_hash_bytes(FN_HASH_START, compared, strlen(compared));
    snprintf(it->name, sizeof it->name, "%s", name);
    const size_t len = strlen(text);
    if (len < sizeof it->value)
        memcpy(it->value, text, len + 1);
    else
        snprintf(it->value, sizeof it->value, "...%s", text + len - (sizeof it->value - 4));
    return FN_OK;
}

/* A set is compared by its content (datasets, shapes, types, checksum),
 * not by its path, and shown with the path. */
static fn_status add_set(fingerprint *f, const char *name, fn_data *set, char *text)
{
    if (!set)
        return add_item(f, name, "none", "none");
    enum { ABOUT = 512 };
    char about[ABOUT];
    uint64_t checksum = 0;
    FN_TRY(fn_data_fingerprint(set, about, ABOUT - 32, &checksum));
    size_t len = strlen(about);
    snprintf(about + len, ABOUT - len, ", checksum %016llx", (unsigned long long)checksum);
    snprintf(text, TEXT_CAP, "%s: %s", fn_data_path(set), about);
    return add_item(f, name, text, about);
}

/* This rank's items, in an order every rank of one build shares. */
static fn_status fill(const fn_trainer *t, fingerprint *f, char *text)
{
    char name[NAME_CAP];
    for (int i = 0; i < fn_config_n_keys(); i++) {
        const int len = fn_config_key_text(t->cfg, i, name, sizeof name, text, TEXT_CAP);
        if (len < 0)
            continue;
        if (len < TEXT_CAP) {
            FN_TRY(add_item(f, name, text, text));
            continue;
        }
        char *whole = malloc((size_t)len + 1); /* a value longer than the buffer */
        if (!whole)
            return fn_fail(FN_ERR_NOMEM, "out of host memory for the ranks' set-up");
        fn_config_key_text(t->cfg, i, name, sizeof name, whole, (size_t)len + 1);
        fn_status st = add_item(f, name, whole, whole);
        free(whole);
        FN_TRY(st);
    }
    const char *device = fn_context_device(t->ctx) == FN_CUDA ? "cuda" : "cpu";
    FN_TRY(add_item(f, "[run] device (as resolved)", device, device));
    const char *resume = t->resuming ? "given" : "not given";
    FN_TRY(add_item(f, "--resume", resume, resume));
    FN_TRY(add_set(f, "[data] train", t->train, text));
    return add_set(f, "[data] valid", t->valid, text);
}

/* "1, 3, 4" of the ranks flagged in differs[1..size), at most a few. */
static void rank_list(const int *differs, int size, char *buf, size_t cap)
{
    enum { SHOWN = 8 };
    size_t len = 0;
    int listed = 0, count = 0;
    buf[0] = '\0';
    for (int r = 1; r < size; r++) {
        if (!differs[r])
            continue;
        if (listed++ < SHOWN && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%d", count ? ", " : "", r);
        count++;
    }
    if (count > SHOWN && len < cap)
        snprintf(buf + len, cap - len, " and %d more", count - SHOWN);
}

static int item_differs(const fingerprint *all, int r, int i)
{
    const agree_item *a = &all[0].items[i], *b = &all[r].items[i];
    return a->hash != b->hash || strcmp(a->name, b->name) != 0;
}

/* The first item where any rank differs from rank 0, or -1; *others: how
 * many later items differ too. */
static int first_difference(const fingerprint *all, int size, int *others)
{
    int first = -1;
    *others = 0;
    for (int i = 0; i < all[0].n; i++)
        for (int r = 1; r < size; r++)
            if (item_differs(all, r, i)) {
                if (first < 0)
                    first = i;
                else
                    ++*others;
                break;
            }
    return first;
}

/* Rank 0's verdict on every rank's fingerprint: "" when they agree. */
static void judge(const fingerprint *all, int size, char *verdict, size_t cap)
{
    verdict[0] = '\0';
    for (int r = 1; r < size; r++)
        if (all[r].n != all[0].n) {
            snprintf(verdict, cap,
                     "rank %d runs another build of fusenet than rank 0 (its set-up compares %d "
                     "settings, rank 0's %d): run one build on every rank",
                     r, (int)all[r].n, (int)all[0].n);
            return;
        }
    int others = 0;
    const int i = first_difference(all, size, &others);
    if (i < 0)
        return;
    int *differs = calloc((size_t)size, sizeof *differs), shown = 0;
    if (!differs) {
        snprintf(verdict, cap, "out of host memory comparing the ranks' set-ups");
        return;
    }
    for (int r = size - 1; r >= 1; r--)
        if ((differs[r] = item_differs(all, r, i)))
            shown = r;
    char ranks[128], more[64] = "";
    rank_list(differs, size, ranks, sizeof ranks);
    free(differs);
    if (others)
        snprintf(more, sizeof more, "; %d more setting%s or file%s differ%s too", others,
                 others == 1 ? "" : "s", others == 1 ? "" : "s", others == 1 ? "s" : "");
    snprintf(verdict, cap,
             "the ranks differ before the first step: %s is '%s' on rank 0 but '%s' on rank %d "
             "(ranks that differ from rank 0: %s%s); every rank must run the same config on the "
             "same data",
             all[0].items[i].name, all[0].items[i].value, all[shown].items[i].value, shown, ranks,
             more);
}

fn_status fn_trainer_agree(fn_trainer *t)
{
    if (fn_world_size() < 2)
        return FN_OK;
    fingerprint *mine = calloc(1, sizeof *mine);
    char *text = malloc(TEXT_CAP);
    const int root = fn_world_rank() == 0;
    fingerprint *all = root ? calloc((size_t)fn_world_size(), sizeof *all) : NULL;
    char verdict[VERDICT_CAP] = "";
    fn_status st = mine && text && (all || !root)
                       ? FN_OK
                       : fn_fail(FN_ERR_NOMEM, "out of host memory for the ranks' set-up");
    /* A rank that fails here ends the job (the program's fn_world_abort). */
    if (st == FN_OK)
        st = fill(t, mine, text);
    if (st == FN_OK)
        st = fn_world_gather_bytes(mine, (int)sizeof *mine, all);
    if (st == FN_OK && root)
        judge(all, fn_world_size(), verdict, sizeof verdict);
    if (st == FN_OK)
        st = fn_world_broadcast_bytes(verdict, (int)sizeof verdict);
    free(mine);
    free(text);
    free(all);
    FN_TRY(st);
    verdict[sizeof verdict - 1] = '\0';
    return verdict[0] ? fn_fail(FN_ERR_RANKS_DIFFER, "%s", verdict) : FN_OK;
}
