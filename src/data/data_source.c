/* data_source.c — a set opened from its source (data.h's fn_data_source):
 * an HDF5 file (data.c) or a program's memory set (data_memory.c), above
 * both, so neither source's file calls the other. */
#include "fusenet/data.h"

fn_status fn_data_open_source(fn_data **data, const fn_data_source *source,
                              const fn_data_options *opt)
{
    *data = NULL;
    if (!source || !opt || (source->path && source->memory))
        return fn_fail(FN_ERR_INVALID, "fn_data_open_source: %s", !source || !opt
                       ? "the source or the options are NULL"
                       : "give a file or a memory set, not both");
    if (source->memory)
        return fn_data_open_memory(data, source->memory, opt);
    if (!source->path)
        return fn_fail(FN_ERR_INVALID, "fn_data_open_source: no file and no memory set");
    return fn_data_open(data, source->path, opt);
}
