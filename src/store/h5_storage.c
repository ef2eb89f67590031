/* h5_storage.c — the check that a dataset's data is all there before it is
 * read (h5_storage.h): HDF5 reads missing storage as fill values, so each
 * layout is measured against what it declares: contiguous and chunked data
 * against the file that holds it, external raw data against its files, a
 * virtual dataset against its mappings and sources. Also the naming of
 * links that lead nowhere and of filters this HDF5 lacks. */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/h5_error.h"
#include "store/h5_storage.h"
#include "store/regular_file.h"

enum { NAME_CAP = 1024 };

/* How deep virtual datasets may take their data from other virtual
 * datasets: one that maps itself would otherwise be checked forever. */
enum { MAX_VIRTUAL_DEPTH = 4 };

/* How much larger than its storage a filtered (compressed) dataset may be.
 * deflate (gzip), with or without shuffle, cannot pass 1032:1 even on all
 * zeros; 65536:1 leaves room for filters that store a constant chunk in a
 * few bytes (scale-offset, blosc, zstd) on chunks of up to a few MB, and
 * no real training data compresses like that. */
#define MAX_COMPRESSION 65536.0

/* --- links --------------------------------------------------------------- */

static herr_t find_too_many_links(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    if (err->desc && strstr(err->desc, "too many links"))
        *(int *)data = 1;
    return 0;
}

static herr_t find_open_failure(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    if (err->desc && strstr(err->desc, "unable to open file"))
        *(int *)data = 1;
    return 0;
}

/* Why a link that exists opened nothing, as a message; FN_OK when it is not
 * a soft or external link (the caller's HDF5 text stands). */
static fn_status explain_link(hid_t loc, const char *where, const char *name, int cyclic,
                              int no_file)
{
    H5L_info_t info;
    if (H5Lget_info(loc, name, &info, H5P_DEFAULT) < 0 ||
        (info.type != H5L_TYPE_SOFT && info.type != H5L_TYPE_EXTERNAL))
        return FN_OK;
    char *value = calloc(1, info.u.val_size + 1);
    if (!value || H5Lget_val(loc, name, value, info.u.val_size, H5P_DEFAULT) < 0) {
        free(value);
        return FN_OK;
    }
    char target[2 * NAME_CAP];
    const char *file = NULL, *path = NULL;
    if (info.type == H5L_TYPE_EXTERNAL &&
        H5Lunpack_elink_val(value, info.u.val_size, NULL, &file, &path) >= 0)
        snprintf(target, sizeof target, "%s:%s", file, path);
    else
        snprintf(target, sizeof target, "%s", value);
    free(value);
    const char *kind = info.type == H5L_TYPE_SOFT ? "soft" : "external";
    if (cyclic)
        return fn_fail(FN_ERR_FORMAT, "%s: '%s' is a cyclic %s link to '%s': following it leads "
                       "back to a link (too many links)", where, name, kind, target);
    return fn_fail(FN_ERR_FORMAT, "%s: '%s' is a dangling %s link to '%s': %s", where, name, kind,
                   target, no_file ? "its file cannot be opened" : "no such object");
}

fn_status fn_h5_open_dataset(hid_t loc, const char *where, const char *name, hid_t *set)
{
    *set = H5Dopen2(loc, name, H5P_DEFAULT);
    if (*set >= 0)
        return FN_OK;
    int cyclic = 0, no_file = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, find_too_many_links, &cyclic);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, find_open_failure, &no_file);
    fn_status st = fn_h5_fail(FN_ERR_FORMAT, "%s: '%s' is not a readable dataset", where, name);
    char kept[1024];
    snprintf(kept, sizeof kept, "%s", fn_last_error());
    /* An object that exists and is no dataset (a group) keeps HDF5's text. */
    htri_t exists = H5Oexists_by_name(loc, name, H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    if (exists > 0 || explain_link(loc, where, name, cyclic, no_file) == FN_OK)
        return fn_fail(st, "%s", kept);
    return FN_ERR_FORMAT;
}

/* --- filters ------------------------------------------------------------- */

/* Whether the first chunk of set went through filter i of its pipeline:
 * an optional filter (h5py's lzf) is skipped for a chunk it cannot shrink,
 * which then reads without it. 0 when unknown. */
static int first_chunk_filtered(hid_t set, int i)
{
    hid_t space = H5Dget_space(set);
    hsize_t offset[H5S_MAX_RANK];
    unsigned mask = 0;
    haddr_t addr = 0;
    hsize_t size = 0;
    int ok = space >= 0 && H5Dget_chunk_info(set, space, 0, offset, &mask, &addr, &size) >= 0;
    if (space >= 0)
        H5Sclose(space);
    H5Eclear2(H5E_DEFAULT);
    return ok && i < 32 && !(mask & (1u << i));
}

/* The first filter of dcpl's pipeline that this HDF5 cannot run, as
 * "32000 'lzf'" in buf; 0 when all are available. With a dataset `set`
 * (else -1), only a filter its first chunk needs: mandatory, or optional
 * and applied to it. */
static int missing_filter(hid_t dcpl, hid_t set, char *buf, size_t n)
{
    int count = dcpl < 0 ? 0 : H5Pget_nfilters(dcpl);
    for (int i = 0; i < count; i++) {
        unsigned flags = 0, config = 0;
        size_t nvalues = 0;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, NULL, sizeof fname,
                                         fname, &config);
        if (id < 0 || H5Zfilter_avail(id) > 0 ||
            (set >= 0 && (flags & H5Z_FLAG_OPTIONAL) && !first_chunk_filtered(set, i)))
            continue;
        snprintf(buf, n, "%d '%s'", (int)id, fname[0] ? fname : "unnamed");
        return 1;
    }
    return 0;
}

fn_status fn_h5_check_filters(hid_t set, const char *where, const char *name)
{
    char filter[96];
    hid_t dcpl = H5Dget_create_plist(set);
    int missing = missing_filter(dcpl, set, filter, sizeof filter);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Eclear2(H5E_DEFAULT);
    if (!missing)
        return FN_OK;
    return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' is compressed with filter %s, which this HDF5 "
                   "lacks (no such filter built in or installed as a plugin)", where, name,
                   filter);
}

fn_status fn_h5_read_fail(hid_t set, fn_status status, const char *fmt, ...)
{
    char text[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* First, while HDF5's reason is still on its stack. */
    fn_status st = fn_h5_fail(status, "%s", text);
    char kept[1024], filter[96];
    snprintf(kept, sizeof kept, "%s", fn_last_error());
    hid_t dcpl = H5Dget_create_plist(set);
    int missing = missing_filter(dcpl, -1, filter, sizeof filter);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Eclear2(H5E_DEFAULT);
    if (missing)
        return fn_fail(st, "%s: it is compressed with filter %s, which this HDF5 lacks (no such "
                       "filter built in or installed as a plugin)", text, filter);
    return fn_fail(st, "%s", kept);
}

/* --- the extent ---------------------------------------------------------- */

typedef struct extent {
    int rank;
    hsize_t dims[H5S_MAX_RANK], max[H5S_MAX_RANK];
    double values; /* product of dims */
    double bytes;  /* values times the type's size */
    char shape[96]; /* "[24, 6]" */
} extent;

static fn_status read_extent(hid_t set, const char *where, const char *name, extent *e)
{
    hid_t space = H5Dget_space(set), type = H5Dget_type(set);
    e->rank = space < 0 ? -1 : H5Sget_simple_extent_dims(space, e->dims, e->max);
    size_t size = type < 0 ? 0 : H5Tget_size(type);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (e->rank < 0 || size == 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: dataset '%s': cannot read its shape and type", where,
                          name);
    e->values = 1;
    int len = snprintf(e->shape, sizeof e->shape, "[");
    for (int i = 0; i < e->rank; i++) {
        e->values *= (double)e->dims[i];
        len += snprintf(e->shape + len, sizeof e->shape - (size_t)len, "%s%llu", i ? ", " : "",
                        (unsigned long long)e->dims[i]);
        if (len >= (int)sizeof e->shape - 24)
            break;
    }
    snprintf(e->shape + len, sizeof e->shape - (size_t)len, "]");
    e->bytes = e->values * (double)size;
    return FN_OK;
}

/* --- contiguous and chunked data ----------------------------------------- */

/* The chunks the extent needs (0 when unknown); -1 when a chunk is larger
 * than a fixed dimension, which HDF5 never writes (and 1.10.8 crashes
 * reading such a file). */
static double chunks_needed(hid_t dcpl, const extent *e)
{
    hsize_t chunk[H5S_MAX_RANK] = {0};
    if (H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk) != e->rank)
        return 0;
    double n = 1;
    for (int i = 0; i < e->rank; i++) {
        if (e->max[i] != H5S_UNLIMITED && chunk[i] > e->max[i])
            return -1;
        if (chunk[i] == 0)
            return 0;
        n *= (double)((e->dims[i] + chunk[i] - 1) / chunk[i]);
    }
    return n;
}

static double allocated_chunks(hid_t set)
{
    /* HDF5 1.10.8 takes no H5S_ALL here. If the count fails, the read
     * itself will say what is wrong. */
    hsize_t allocated = 0;
    hid_t space = H5Dget_space(set);
    int ok = space >= 0 && H5Dget_num_chunks(set, space, &allocated) >= 0;
    if (space >= 0)
        H5Sclose(space);
    H5Eclear2(H5E_DEFAULT);
    return ok ? (double)allocated : -1;
}

/* The filters of dcpl's pipeline that may store less than they are given
 * (deflate, szip, plugins): a checksum (Fletcher-32, as fusenet writes its
 * weights) or a byte shuffle stores every value, so data with only those
 * must be stored in full. */
static int compressing_filters(hid_t dcpl)
{
    int count = H5Pget_nfilters(dcpl), n = 0;
    for (int i = 0; i < count; i++) {
        unsigned flags = 0, config = 0;
        size_t nvalues = 0;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, NULL, 0, NULL,
                                         &config);
        n += id != H5Z_FILTER_FLETCHER32 && id != H5Z_FILTER_SHUFFLE;
    }
    return n;
}

/* Fill values need no storage, so a dataset can declare far more than its
 * file holds (72 bytes declaring 2^47 rows), and reading it would allocate
 * and convert all of it. Uncompressed data must be stored in full; filtered
 * (compressed) data must have every chunk its extent needs and declare at
 * most MAX_COMPRESSION times what it stores, and store it in full when
 * none of its filters compresses (a checksum). Nor may the storage exceed
 * the file that holds it (HDF5 allocates what the layout claims before it
 * reads; through an external link that is the link's target) or a chunk a
 * fixed dimension. */
static fn_status check_in_file(hid_t set, hid_t dcpl, const char *where, const char *name,
                               const extent *e)
{
    double stored = (double)H5Dget_storage_size(set);
    int filters = H5Pget_nfilters(dcpl), compressing = compressing_filters(dcpl);
    int chunked = H5Pget_layout(dcpl) == H5D_CHUNKED;
    double needed = chunked ? chunks_needed(dcpl, e) : 0;
    hsize_t file_size = 0;
    hid_t file = H5Iget_file_id(set);
    int sized = file >= 0 && H5Fget_filesize(file, &file_size) >= 0;
    if (file >= 0)
        H5Fclose(file);
    if (sized && stored > (double)file_size)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' claims %.0f bytes of storage in a file of "
                       "%llu bytes: truncated or corrupt", where, name, stored,
                       (unsigned long long)file_size);
    if (needed < 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' has chunks larger than its fixed "
                       "dimensions: corrupt", where, name);
    if (e->values > 0 && stored == 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s but stores nothing: it was "
                       "never written", where, name, e->shape);
    if (filters <= 0 ? stored < e->bytes : e->bytes > MAX_COMPRESSION * stored)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s but stores only %.0f bytes: "
                       "truncated or corrupt", where, name, e->shape, stored);
    /* Counted only once the sizes are sane: the index of a corrupt file is
     * walked by HDF5 here. */
    double allocated = chunked && needed > 0 ? allocated_chunks(set) : -1;
    if (allocated >= 0 && allocated < needed)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s in %.0f chunks but stores only "
                       "%.0f of them: the others would read as zeros", where, name, e->shape,
                       needed, allocated);
    /* Every chunk there, yet less than the values when nothing compresses:
     * short chunks (a checksum alone stores every value). */
    if (!compressing && stored < e->bytes)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s but stores only %.0f bytes "
                       "and is not compressed: truncated or corrupt", where, name, e->shape, stored);
    return FN_OK;
}

/* --- external raw data --------------------------------------------------- */

/* The directory of the HDF5 file holding set, with a trailing '/' ("" for
 * the working directory). */
static void file_dir(hid_t set, char *dir, size_t n)
{
    char path[NAME_CAP] = "";
    dir[0] = '\0';
    if (H5Fget_name(set, path, sizeof path) <= 0 || !strchr(path, '/'))
        return;
    snprintf(dir, n, "%s/", dirname(path));
}

/* Where HDF5 1.10 looks for an external raw file (H5Pset_efile_prefix): the
 * name after HDF5_EXTFILE_PREFIX or the access list's prefix, "${ORIGIN}"
 * standing for the HDF5 file's directory; with neither, the name as it is. */
static void external_path(hid_t set, const char *fname, char *path, size_t n)
{
    char prefix[NAME_CAP] = "";
    const char *env = getenv("HDF5_EXTFILE_PREFIX");
    hid_t dapl = H5Dget_access_plist(set);
    if (env)
        snprintf(prefix, sizeof prefix, "%s", env);
    else if (dapl >= 0 && H5Pget_efile_prefix(dapl, prefix, sizeof prefix) < 0)
        prefix[0] = '\0';
    if (dapl >= 0)
        H5Pclose(dapl);
    H5Eclear2(H5E_DEFAULT);
    if (fname[0] == '/' || !prefix[0] || strcmp(prefix, ".") == 0) {
        snprintf(path, n, "%s", fname);
        return;
    }
    if (strncmp(prefix, "${ORIGIN}", 9) == 0) {
        char dir[NAME_CAP];
        file_dir(set, dir, sizeof dir);
        snprintf(path, n, "%s%s/%s", dir[0] ? dir : "./", prefix + 9, fname);
    } else {
        snprintf(path, n, "%s/%s", prefix, fname);
    }
}

/* HDF5 reads an external file's missing bytes as zeros: every segment the
 * declared bytes need must lie within its file. */
static fn_status check_external(hid_t set, hid_t dcpl, const char *where, const char *name,
                                const extent *e)
{
    int count = H5Pget_external_count(dcpl);
    double need = e->bytes, provided = 0;
    for (int i = 0; i < count && need > 0; i++) {
        char fname[NAME_CAP] = "", path[2 * NAME_CAP];
        off_t offset = 0;
        hsize_t size = 0;
        if (H5Pget_external(dcpl, (unsigned)i, sizeof fname, fname, &offset, &size) < 0)
            return fn_h5_fail(FN_ERR_FORMAT, "%s: dataset '%s': cannot read its external file "
                              "list", where, name);
        double take = size == H5F_UNLIMITED || (double)size > need ? need : (double)size;
        external_path(set, fname, path, sizeof path);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' keeps its data in external file '%s', "
                           "which %s", where, name, path,
                           stat(path, &st) != 0 ? "is missing" : "is not a regular file");
        if ((double)st.st_size < (double)offset + take)
            return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s, which needs %.0f bytes "
                           "from byte %lld of external file '%s', a file of %lld bytes: "
                           "truncated", where, name, e->shape, take, (long long)offset, path,
                           (long long)st.st_size);
        need -= take;
        provided += take;
    }
    if (need > 0)
        return fn_fail(FN_ERR_FORMAT, "%s: dataset '%s' declares %s (%.0f bytes) but its external "
                       "files provide only %.0f", where, name, e->shape, e->bytes, provided);
    return FN_OK;
}

/* --- virtual datasets ---------------------------------------------------- */

static fn_status check_set(hid_t set, const char *where, const char *name, int depth);

/* How many of the dataset's values the mappings cover (overlaps counted
 * once); -1 when HDF5 cannot count them (unlimited mappings). */
static double covered_values(hid_t dcpl, size_t count, const extent *e)
{
    hid_t cover = -1;
    for (size_t i = 0; i < count; i++) {
        hid_t vspace = H5Pget_virtual_vspace(dcpl, i);
        if (vspace < 0)
            break;
        if (H5Sget_select_type(vspace) == H5S_SEL_ALL) {
            H5Sclose(vspace);
            if (cover >= 0)
                H5Sclose(cover);
            return e->values;
        }
        hid_t next = cover < 0 ? H5Scopy(vspace) : H5Scombine_select(cover, H5S_SELECT_OR, vspace);
        H5Sclose(vspace);
        if (cover >= 0)
            H5Sclose(cover);
        cover = next;
        if (cover < 0)
            break;
    }
    hssize_t n = cover < 0 ? -1 : H5Sget_select_npoints(cover);
    if (cover >= 0)
        H5Sclose(cover);
    H5Eclear2(H5E_DEFAULT);
    return cover < 0 && count > 0 ? -1 : (double)(n < 0 ? 0 : n);
}

/* Opens the file holding source `fname` of the virtual dataset set where
 * HDF5 1.10 looks for it (H5Pset_virtual_prefix): "." is set's own file; an
 * absolute name as it is; else beside the virtual dataset's file, then in
 * the working directory. *path is what was opened, for messages. */
static fn_status open_source_file(hid_t set, const char *where, const char *name,
                                  const char *fname, hid_t *file, char *path, size_t n)
{
    if (strcmp(fname, ".") == 0) {
        *file = H5Iget_file_id(set);
        H5Fget_name(set, path, n);
        return *file < 0 ? fn_h5_fail(FN_ERR_FORMAT, "%s: '%s': cannot get its file", where, name)
                         : FN_OK;
    }
    char dir[NAME_CAP];
    file_dir(set, dir, sizeof dir);
    snprintf(path, n, "%s%s", fname[0] == '/' ? "" : dir, fname);
    if (access(path, F_OK) != 0)
        snprintf(path, n, "%s", fname);
    if (access(path, F_OK) != 0)
        return fn_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' takes its data from '%s', which is "
                       "missing (HDF5 would read zeros)", where, name, fname);
    FN_TRY(fn_require_regular_file(path));
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' takes its data from '%s', "
                          "which is not a readable HDF5 file", where, name, path);
    return FN_OK;
}

/* Source i must exist, hold the values its selection names and have its
 * own storage all there. */
static fn_status check_source(hid_t set, hid_t dcpl, size_t i, const char *where,
                              const char *name, int depth)
{
    char fname[NAME_CAP] = "", dname[NAME_CAP] = "", path[NAME_CAP] = "";
    if (H5Pget_virtual_filename(dcpl, i, fname, sizeof fname) < 0 ||
        H5Pget_virtual_dsetname(dcpl, i, dname, sizeof dname) < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s': cannot read mapping %zu",
                          where, name, i);
    hid_t file = -1, src = -1;
    FN_TRY(open_source_file(set, where, name, fname, &file, path, sizeof path));
    htri_t exists = H5Oexists_by_name(file, dname, H5P_DEFAULT);
    src = exists > 0 ? H5Dopen2(file, dname, H5P_DEFAULT) : -1;
    H5Eclear2(H5E_DEFAULT);
    fn_status st = src < 0 ? fn_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' takes its data from "
                                     "dataset '%s' of '%s', which is missing (HDF5 would read "
                                     "zeros)", where, name, dname, path)
                           : FN_OK;
    hid_t sel = st == FN_OK ? H5Pget_virtual_srcspace(dcpl, i) : -1;
    hid_t space = src >= 0 ? H5Dget_space(src) : -1;
    hsize_t start[H5S_MAX_RANK] = {0}, end[H5S_MAX_RANK] = {0}, dims[H5S_MAX_RANK] = {0};
    int rank = space < 0 ? -1 : H5Sget_simple_extent_dims(space, dims, NULL);
    if (st == FN_OK && sel >= 0 && H5Sget_select_bounds(sel, start, end) >= 0 &&
        rank == H5Sget_simple_extent_ndims(sel)) {
        for (int k = 0; k < rank; k++)
            if (end[k] >= dims[k])
                st = fn_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' maps index %llu in dimension "
                             "%d of dataset '%s' of '%s', whose size there is %llu (HDF5 would "
                             "read zeros)",
                             where, name, (unsigned long long)end[k], k, dname, path,
                             (unsigned long long)dims[k]);
    }
    H5Eclear2(H5E_DEFAULT);
    if (sel >= 0)
        H5Sclose(sel);
    if (space >= 0)
        H5Sclose(space);
    if (st == FN_OK)
        st = check_set(src, path, dname, depth + 1);
    if (src >= 0)
        H5Dclose(src);
    H5Fclose(file);
    return st;
}

/* A virtual dataset reads fill values (zeros) wherever no mapping reaches
 * and from every source it cannot find, and HDF5 fills 2^40 unmapped rows
 * as patiently as 24: so every value must be mapped and every source be
 * there, before anything is read. */
static fn_status check_virtual(hid_t set, hid_t dcpl, const char *where, const char *name,
                               const extent *e, int depth)
{
    if (depth >= MAX_VIRTUAL_DEPTH)
        return fn_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' takes its data through more than "
                       "%d virtual datasets (a cycle?)", where, name, MAX_VIRTUAL_DEPTH);
    size_t count = 0;
    if (H5Pget_virtual_count(dcpl, &count) < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s': cannot read its mappings",
                          where, name);
    double covered = covered_values(dcpl, count, e);
    if (covered >= 0 && covered < e->values)
        return fn_fail(FN_ERR_FORMAT, "%s: virtual dataset '%s' declares %s but maps sources to "
                       "only %.0f of its %.0f values (HDF5 would read zeros for the rest)",
                       where, name, e->shape, covered, e->values);
    for (size_t i = 0; i < count; i++)
        FN_TRY(check_source(set, dcpl, i, where, name, depth));
    return FN_OK;
}

/* --- the check ----------------------------------------------------------- */

static fn_status check_set(hid_t set, const char *where, const char *name, int depth)
{
    extent e;
    FN_TRY(read_extent(set, where, name, &e));
    hid_t dcpl = H5Dget_create_plist(set);
    if (dcpl < 0)
        return fn_h5_fail(FN_ERR_FORMAT, "%s: dataset '%s': cannot read its layout", where, name);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    fn_status st;
    if (layout == H5D_VIRTUAL)
        st = check_virtual(set, dcpl, where, name, &e, depth);
    else if (H5Pget_external_count(dcpl) > 0)
        st = check_external(set, dcpl, where, name, &e);
    else
        st = check_in_file(set, dcpl, where, name, &e);
    H5Pclose(dcpl);
    return st;
}

fn_status fn_h5_check_storage(hid_t set, const char *where, const char *name)
{
    return check_set(set, where, name, 0);
}
