/* suggest.c — the nearest name to a mistyped word (suggest.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/suggest.h"

enum { LONGEST = 64 }; /* words and names beyond this are not compared */

int fn_name_find_nocase(const char *word, const char *const *names, int n)
{
    for (int i = 0; word && i < n; i++)
        if (strcasecmp(word, names[i]) == 0)
            return i;
    return -1;
}

/* Optimal string alignment distance of a and b, ignoring case: insertions,
 * deletions, changes and swaps of neighbours. */
static int edits(const char *a, const char *b)
{
    const int la = (int)strlen(a), lb = (int)strlen(b);
    int d[LONGEST + 1][LONGEST + 1];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        for (int j = 1; j <= lb; j++) {
            const int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Whether the shorter of a and b (3 letters at least) begins the other. */
static int begins(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b), shorter = la < lb ? la : lb;
    return shorter >= 3 && strncasecmp(a, b, shorter) == 0;
}

/* Whether name is the initials of word's '_'-separated parts (two or more). */
static int initials(const char *word, const char *name)
{
    size_t k = 0;
    for (const char *p = word; *p; p++) {
        if (p != word && p[-1] != '_')
            continue;
        if (*p == '_' || tolower((unsigned char)*p) != tolower((unsigned char)name[k]))
            return 0;
        k++;
    }
    return k >= 2 && name[k] == '\0';
}

const char *fn_suggest(const char *word, const char *const *names, int n)
{
    if (!word || !word[0] || strlen(word) > LONGEST)
        return NULL;
    const char *best = NULL;
    int best_edits = 0;
    for (int i = 0; i < n; i++) {
        const size_t len = strlen(names[i]);
        if (len == 0 || len > LONGEST)
            continue;
        const size_t shorter = len < strlen(word) ? len : strlen(word);
        const int allowed = shorter / 3 > 1 ? (int)(shorter / 3) : 1;
        const int e = edits(word, names[i]);
        const int near = e <= allowed || begins(word, names[i]) || initials(word, names[i]);
        if (near && (!best || e < best_edits)) {
            best = names[i];
            best_edits = e;
        }
    }
    return best;
}

fn_status fn_suggest_fix(fn_status st, const char *before, const char *suggestion,
                         const char *after)
{
    if (st == FN_OK || !suggestion)
        return st;
    char message[1024];
    snprintf(message, sizeof message, "%s", fn_last_error());
    return fn_fail(st, "%s; did you mean %s%s%s?", message, before, suggestion, after);
}
