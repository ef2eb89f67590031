/* binding.c — the public enum constants by name and the sizes of the
 * public structs a binding mirrors (binding.h). In the top layer: it sees
 * every public header. A constant or struct a binding needs adds its line. */
#include <string.h>

#include "fusenet/binding.h"
#include "fusenet/block.h"
#include "fusenet/block_memory.h"
#include "fusenet/comm.h"
#include "fusenet/data.h"
#include "fusenet/device.h"
#include "fusenet/trainer.h"

#define ENTRY(c) {#c, (long long)(c)}

static const struct {
    const char *name;
    long long value;
} constants[] = {
    ENTRY(FN_OK), ENTRY(FN_ERR_INVALID), ENTRY(FN_ERR_NOMEM), ENTRY(FN_ERR_IO),
    ENTRY(FN_ERR_FORMAT), ENTRY(FN_ERR_CUDA), ENTRY(FN_ERR_NODEV), ENTRY(FN_ERR_NUMERIC),
    ENTRY(FN_ERR_INTERRUPTED), ENTRY(FN_ERR_RANKS_DIFFER),
    ENTRY(FN_CPU), ENTRY(FN_CUDA),
    ENTRY(FN_MATH_FP32), ENTRY(FN_MATH_TF32), ENTRY(FN_MATH_TF32X3), ENTRY(FN_MATH_BF16),
    ENTRY(FN_DATA_NO_TARGETS), ENTRY(FN_DATA_LABELS), ENTRY(FN_DATA_FLOATS),
    ENTRY(FN_COMM_WORLD), ENTRY(FN_COMM_SELF), ENTRY(FN_COMM_SELF_DEVICE),
    ENTRY(FN_TRAIN_UNFINISHED), ENTRY(FN_TRAIN_DONE), ENTRY(FN_TRAIN_STOPPED),
    ENTRY(FN_TRAIN_STOPPED_AT_START),
};

#define SIZE(s) {#s, sizeof(s)}

static const struct {
    const char *name;
    size_t size;
} structs[] = {
    SIZE(fn_train_metrics),     SIZE(fn_train_epoch),     SIZE(fn_train_progress),
    SIZE(fn_train_layer),       SIZE(fn_train_memory),    SIZE(fn_train_model),
    SIZE(fn_trainer_callbacks), SIZE(fn_trainer_options), SIZE(fn_block_config),
    SIZE(fn_block_memory),
};

fn_status fn_binding_constant(const char *name, long long *value)
{
    for (size_t i = 0; name && value && i < sizeof constants / sizeof constants[0]; i++)
        if (strcmp(constants[i].name, name) == 0)
            return *value = constants[i].value, FN_OK;
    return fn_fail(FN_ERR_INVALID, "fn_binding_constant: the library has no constant '%s'",
                   name ? name : "(NULL)");
}

size_t fn_binding_struct_size(const char *name)
{
    for (size_t i = 0; name && i < sizeof structs / sizeof structs[0]; i++)
        if (strcmp(structs[i].name, name) == 0)
            return structs[i].size;
    return 0;
}
