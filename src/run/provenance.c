/* provenance.c — where a file came from (provenance.h): the list of named
 * texts, the group /provenance that holds them in an HDF5 file, and its
 * one-line summary. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/provenance_impl.h"
#include "store/h5util.h"

#define GROUP "provenance"

typedef struct entry {
    char *name, *value;
} entry;

struct fn_provenance {
    entry *entries; /* [n] */
    int n, cap;
};

fn_status fn_provenance_create(fn_provenance **prov)
{
    if (!prov)
        return fn_fail(FN_ERR_INVALID, "fn_provenance_create: prov is NULL");
    *prov = calloc(1, sizeof **prov);
    return *prov ? FN_OK : fn_fail(FN_ERR_NOMEM, "out of host memory for a provenance");
}

void fn_provenance_destroy(fn_provenance *prov)
{
    if (!prov)
        return;
    for (int i = 0; i < prov->n; i++) {
        free(prov->entries[i].name);
        free(prov->entries[i].value);
    }
    free(prov->entries);
    free(prov);
}

static int find(const fn_provenance *prov, const char *name)
{
    for (int i = 0; prov && name && i < prov->n; i++)
        if (strcmp(prov->entries[i].name, name) == 0)
            return i;
    return -1;
}

fn_status fn_provenance_set(fn_provenance *prov, const char *name, const char *value)
{
    if (!prov || !name || !name[0] || !value)
        return fn_fail(FN_ERR_INVALID, "fn_provenance_set: a NULL argument or an empty name");
    char *copy = strdup(value);
    if (!copy)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a provenance");
    const int i = find(prov, name);
    if (i >= 0) {
        free(prov->entries[i].value);
        prov->entries[i].value = copy;
        return FN_OK;
    }
    if (prov->n == prov->cap) {
        const int cap = prov->cap ? 2 * prov->cap : 16;
        entry *grown = realloc(prov->entries, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(copy);
            return fn_fail(FN_ERR_NOMEM, "out of host memory for a provenance");
        }
        prov->entries = grown;
        prov->cap = cap;
    }
    char *name_copy = strdup(name);
    if (!name_copy) {
        free(copy);
        return fn_fail(FN_ERR_NOMEM, "out of host memory for a provenance");
    }
    prov->entries[prov->n++] = (entry){name_copy, copy};
    return FN_OK;
}

const char *fn_provenance_get(const fn_provenance *prov, const char *name)
{
    const int i = find(prov, name);
    return i >= 0 ? prov->entries[i].value : NULL;
}

int fn_provenance_count(const fn_provenance *prov) { return prov ? prov->n : 0; }

const char *fn_provenance_name(const fn_provenance *prov, int i)
{
    return prov && i >= 0 && i < prov->n ? prov->entries[i].name : NULL;
}

const char *fn_provenance_value(const fn_provenance *prov, int i)
{
    return prov && i >= 0 && i < prov->n ? prov->entries[i].value : NULL;
}

/* Whether line (of n bytes) is "<key> = ..."; *value then points after "= ". */
static int setting_line(const char *line, size_t n, const char *key, const char **value)
{
    const size_t k = strlen(key);
    if (n < k + 3 || strncmp(line, key, k) != 0 || strncmp(line + k, " = ", 3) != 0)
        return 0;
    *value = line + k + 3;
    return 1;
}

int fn_provenance_setting(const fn_provenance *prov, const char *section, const char *key,
                          char *value, size_t cap)
{
    const char *text = fn_provenance_get(prov, "config");
    int in_section = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *v = NULL;
        if (line[0] == '[')
            in_section = n == strlen(section) + 2 && strncmp(line + 1, section, n - 2) == 0 &&
                         line[n - 1] == ']';
        else if (in_section && setting_line(line, n, key, &v)) {
            /* The value ends where its source comment begins ("  ; "). */
            const char *stop = strstr(v, "  ;");
            size_t len = stop && stop < line + n ? (size_t)(stop - v) : n - (size_t)(v - line);
            while (len > 0 && v[len - 1] == ' ')
                len--;
            snprintf(value, cap, "%.*s", (int)len, v);
            return 1;
        }
        line = end ? end + 1 : line + n;
    }
    return 0;
}

/* --- the group ------------------------------------------------------------- */

fn_status fn_provenance_write(hid_t file, const char *path, const fn_provenance *prov)
{
    if (!prov)
        return FN_OK;
    char where[1200];
    snprintf(where, sizeof where, "%s: group '" GROUP "'", path);
    hid_t group = H5Gcreate2(file, GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_IO, "%s: cannot create the group", where);
    fn_status st = fn_h5_put_string(group, where, "provenance_version", FN_PROVENANCE_VERSION);
    for (int i = 0; st == FN_OK && i < prov->n; i++)
        st = fn_h5_put_string(group, where, prov->entries[i].name, prov->entries[i].value);
    H5Gclose(group);
    return st;
}

typedef struct read_job {
    fn_provenance *prov;
    const char *where;
    fn_status st;
} read_job;

/* One attribute of the group: a scalar string is kept, anything else (a
 * later version's other types) is passed over. */
static herr_t read_attr(hid_t group, const char *name, const H5A_info_t *info, void *arg)
{
    (void)info;
    read_job *job = arg;
    hid_t attr = H5Aopen(group, name, H5P_DEFAULT);
    hid_t type = attr < 0 ? -1 : H5Aget_type(attr);
    const int is_string = type >= 0 && H5Tget_class(type) == H5T_STRING;
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    if (!is_string)
        return 0;
    char *value = NULL;
    job->st = fn_h5_get_string(group, job->where, name, &value);
    if (job->st == FN_OK)
        job->st = fn_provenance_set(job->prov, name, value);
    free(value);
    return job->st == FN_OK ? 0 : -1;
}

static fn_status read_group(hid_t file, const char *path, fn_provenance *prov)
{
    if (H5Lexists(file, GROUP, H5P_DEFAULT) <= 0)
        return FN_OK;
    char where[1200];
    snprintf(where, sizeof where, "%s: group '" GROUP "'", path);
    hid_t group = H5Gopen2(file, GROUP, H5P_DEFAULT);
    if (group < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: cannot open it", where);
    read_job job = {prov, where, FN_OK};
    hsize_t at = 0;
    herr_t it = H5Aiterate2(group, H5_INDEX_NAME, H5_ITER_INC, &at, read_attr, &job);
    H5Gclose(group);
    FN_TRY(job.st);
    return it < 0 ? fn_h5_fail(FN_ERR_FORMAT, "%s: cannot read its attributes", where) : FN_OK;
}

/* The root's fusenet_version, which files before the group have too
 * ("" when absent). */
static void root_version(hid_t file, const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    char *v = NULL;
    if (H5Aexists(file, "fusenet_version") > 0 &&
        fn_h5_get_string(file, path, "fusenet_version", &v) == FN_OK)
        snprintf(buf, cap, "%s", v);
    free(v);
}

typedef struct file_job {
    const char *path;
    fn_provenance *prov;
    char version[64];
} file_job;

static fn_status read_file(const char *path, fn_provenance *prov, char *version, size_t cap)
{
    hid_t file = -1;
    FN_TRY(fn_h5_open_read(&file, path));
    fn_status st = read_group(file, path, prov);
    if (st == FN_OK)
        root_version(file, path, version, cap);
    H5Fclose(file);
    return st;
}

/* The probe's child reads what the caller will: the whole group and the
 * root's version, into a provenance of its own. */
static fn_status probe_read(fn_h5_child *probe, void *arg)
{
    (void)probe;
    const file_job *job = arg;
    fn_provenance *prov = NULL;
    char version[sizeof job->version];
    FN_TRY(fn_provenance_create(&prov));
    fn_status st = read_file(job->path, prov, version, sizeof version);
    fn_provenance_destroy(prov);
    return st;
}

static fn_status read_checked(file_job *job)
{
    FN_TRY(fn_h5_probe(job->path, probe_read, job, FN_H5_PROBE_SECONDS, NULL));
    return read_file(job->path, job->prov, job->version, sizeof job->version);
}

fn_status fn_provenance_read(fn_provenance **prov, const char *path)
{
    if (!prov || !path)
        return fn_fail(FN_ERR_INVALID, "fn_provenance_read: a NULL argument");
    FN_TRY(fn_provenance_create(prov));
    file_job job = {.path = path, .prov = *prov};
    fn_status st = read_checked(&job);
    if (st != FN_OK) {
        fn_provenance_destroy(*prov);
        *prov = NULL;
    }
    return st;
}

/* --- the summary ----------------------------------------------------------- */

static const char *or_unknown(const fn_provenance *prov, const char *name)
{
    const char *v = fn_provenance_get(prov, name);
    return v && v[0] ? v : "?";
}

/* "; train data/t.h5 'X' [..] float64, checksum 0123..." when the set is there. */
static size_t summarise_set(const fn_provenance *prov, const char *set, char *line, size_t cap)
{
    char path[32], datasets[32], checksum[32];
    snprintf(path, sizeof path, "%s_path", set);
    snprintf(datasets, sizeof datasets, "%s_datasets", set);
    snprintf(checksum, sizeof checksum, "%s_checksum", set);
    if (!fn_provenance_get(prov, path))
        return 0;
    const int n = snprintf(line, cap, "; %s %s %s, checksum %s", set, or_unknown(prov, path),
                           or_unknown(prov, datasets), or_unknown(prov, checksum));
    return n > 0 ? (size_t)n : 0;
}

void fn_provenance_summary(const fn_provenance *prov, char *line, size_t cap)
{
    if (!line || cap == 0)
        return;
    if (fn_provenance_count(prov) == 0) {
        snprintf(line, cap, "no provenance recorded");
        return;
    }
    const char *ranks = or_unknown(prov, "ranks");
    int n = snprintf(line, cap, "fusenet %s (commit %s), %s, math %s, %s rank%s, %s to %s",
                     or_unknown(prov, "fusenet_version"), or_unknown(prov, "fusenet_commit"),
                     or_unknown(prov, "device"), or_unknown(prov, "math"), ranks,
                     strcmp(ranks, "1") == 0 ? "" : "s", or_unknown(prov, "started"),
                     or_unknown(prov, "ended"));
    size_t len = n > 0 ? (size_t)n : 0;
    if (len < cap)
        len += summarise_set(prov, "train", line + len, cap - len);
    if (len < cap)
        summarise_set(prov, "valid", line + len, cap - len);
}

fn_status fn_provenance_file_summary(const char *path, char *line, size_t cap)
{
    if (!path || !line || cap == 0)
        return fn_fail(FN_ERR_INVALID, "fn_provenance_file_summary: a NULL argument or no room");
    line[0] = '\0';
    file_job job = {.path = path};
    FN_TRY(fn_provenance_create(&job.prov));
    fn_status st = read_checked(&job);
    if (st == FN_OK && fn_provenance_count(job.prov) == 0)
        snprintf(line, cap, "no provenance recorded (the file predates it%s%s)",
                 job.version[0] ? "; written by fusenet " : "", job.version);
    else if (st == FN_OK)
        fn_provenance_summary(job.prov, line, cap);
    fn_provenance_destroy(job.prov);
    return st;
}
