/* config_text.c — the resolved configuration as INI text (config.h:
 * fn_config_resolved_text): every key, default or given, with the value the
 * run uses and, on request, where that value came from. `train
 * --print-config` prints it with its sources; the provenance of every file
 * a run writes stores it the same way (provenance.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/config_impl.h"

/* A growing text buffer; ok 0 once memory ran out. */
typedef struct text_buf {
    char *s;
    size_t len, cap;
    int ok;
} text_buf;

static void append(text_buf *b, const char *piece)
{
    const size_t n = strlen(piece);
    if (!b->ok)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->ok = 0;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, piece, n + 1);
    b->len += n;
}

/* "; default", "; config.ini:12" or "; --set train.lr=0.1". */
static void source_comment(const fn_config *cfg, int i, char *buf, size_t cap)
{
    const char *assignment = NULL;
    const int line = fn_config_key_origin(cfg, i, &assignment);
    if (assignment)
        snprintf(buf, cap, "  ; --set %s", assignment);
    else if (line > 0)
        snprintf(buf, cap, "  ; %s:%d", cfg->path, line);
    else
        snprintf(buf, cap, "  ; default");
}

/* Key i as "name = value" with its source; value: room for cap bytes. */
static fn_status append_key(text_buf *b, const fn_config *cfg, int i, int sources, char *value,
                            size_t cap)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", fn_config_key_section(i), fn_config_key_name(i));
    FN_TRY(fn_config_get(cfg, key, value, cap));
    append(b, fn_config_key_name(i));
    append(b, " = ");
    append(b, value);
    if (sources) {
        char comment[1200];
        source_comment(cfg, i, comment, sizeof comment);
        append(b, comment);
    }
    append(b, "\n");
    return FN_OK;
}

/* Whether key i is the first of its section (the optimisers' keys, which
 * follow [output] in the numbering, join [train]). */
static int first_of_section(int i)
{
    for (int j = 0; j < i; j++)
        if (strcmp(fn_config_key_section(j), fn_config_key_section(i)) == 0)
            return 0;
    return 1;
}

/* Every key of section i's section, under its header. */
static fn_status append_section(text_buf *b, const fn_config *cfg, int i, int sources,
                                char *value, size_t cap)
{
    const char *section = fn_config_key_section(i);
    append(b, b->len ? "\n[" : "[");
    append(b, section);
    append(b, "]\n");
    for (int k = i; k < fn_config_n_keys(); k++)
        if (strcmp(fn_config_key_section(k), section) == 0)
            FN_TRY(append_key(b, cfg, k, sources, value, cap));
    return FN_OK;
}

fn_status fn_config_resolved_text(const fn_config *cfg, int sources, char **text)
{
    if (!text)
        return fn_fail(FN_ERR_INVALID, "fn_config_resolved_text: text is NULL");
    *text = NULL;
    if (!cfg)
        return fn_fail(FN_ERR_INVALID, "fn_config_resolved_text: cfg is NULL");
    enum { VALUE_CAP = 1 << 16 }; /* a path, or the text of many layers */
    char *value = malloc(VALUE_CAP);
    text_buf b = {.ok = value != NULL};
    fn_status st = FN_OK;
    for (int i = 0; st == FN_OK && b.ok && i < fn_config_n_keys(); i++)
        if (first_of_section(i))
            st = append_section(&b, cfg, i, sources, value, VALUE_CAP);
    free(value);
    if (st == FN_OK && !b.ok)
        st = fn_fail(FN_ERR_NOMEM, "out of host memory for the resolved configuration");
    if (st != FN_OK) {
        free(b.s);
        return st;
    }
    *text = b.s;
    return FN_OK;
}
