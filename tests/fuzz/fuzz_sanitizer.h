/* fuzz_sanitizer.h — the sanitizer settings of the fuzz harnesses and of the
 * replay test, built into the programs so a bare run of either behaves like
 * scripts/fuzz.sh (variables in ASAN_OPTIONS etc. still win). Defines the
 * runtime's hook functions: include it from exactly one file per program.
 * Without sanitizers the hooks are never called.
 *
 * Options: CUDA's runtime maps memory where ASan's shadow gap would be;
 * allocation stacks are unwound fully (HDF5 is built without frame
 * pointers), so the suppressions below can see HDF5's own functions — at
 * half the speed, so a program that does not use HDF5 defines
 * FUZZ_FAST_UNWIND before the include; a request for more memory than
 * exists returns NULL (a clean FN_ERR_NOMEM) instead of stopping.
 *
 * Suppressions: leaks inside HDF5 1.10.8 on its error paths, which no
 * caller can free. LeakSanitizer reports only memory nothing points to, and
 * an identifier fusenet forgets to close stays reachable from HDF5's tables
 * (fuzz_entry.h counts open objects instead), so these are HDF5's own bugs:
 *   H5C_protect  a metadata cache entry (object header) read from a corrupt
 *                file and then rejected is not freed: a failed H5Fopen
 *                (H5G_mkroot -> H5O_protect; "actual len exceeds EOA",
 *                "attempting I/O in temporary file space") or a failed
 *                H5Dopen2 (H5O_obj_type -> H5O_protect);
 *   H5F_open     the same for a failed H5Fopen in general;
 *   H5D__layout_oh_read  a failed H5Dopen2 ("message type not found")
 *                does not free the layout message it decoded;
 *   H5HG_read    reading a variable-length string attribute whose global
 *                heap object is corrupt leaks HDF5's copy of it even though
 *                H5Aread succeeds and the caller frees the string (the
 *                caller's string is allocated elsewhere, so a missing
 *                H5free_memory in fusenet is still reported).
 * Inputs: regressions/{data,weights}/hdf5_leak_* and hdf5_open_leak_*. */
#ifndef FN_FUZZ_SANITIZER_H
#define FN_FUZZ_SANITIZER_H

const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__ubsan_default_options(void);

const char *__asan_default_options(void)
{
#ifdef FUZZ_FAST_UNWIND
    return "protect_shadow_gap=0:allocator_may_return_null=1";
#else
    return "protect_shadow_gap=0:fast_unwind_on_malloc=0:allocator_may_return_null=1";
#endif
}

const char *__lsan_default_suppressions(void)
{
    return "leak:H5C_protect\n"
           "leak:H5F_open\n"
           "leak:H5D__layout_oh_read\n"
           "leak:H5HG_read\n";
}

const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

#endif
