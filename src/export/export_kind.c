/* export_kind.c — the export table: per layer kind, its parameters'
 * state_dict names and its ONNX nodes (export_kind.h). The names follow
 * scripts/weights_to_torch.py: a block is a module with children `linear`
 * (torch.nn.Linear), `norm` (torch.nn.GroupNorm) and `act`, and so is a
 * residual layer; a relu or gelu layer is a module with children `linear`
 * and `act`; a linear layer is a torch.nn.Linear itself; a dropout layer
 * (torch.nn.Dropout) has no parameters. */
#include <stdio.h>
#include <string.h>

#include "export/export_kind.h"

static const fn_export_kind kinds[] = {
    {.kind = "block",
     .keys = {{"weight", "linear.weight"},
              {"bias", "linear.bias"},
              {"gamma", "norm.weight"},
              {"beta", "norm.bias"}},
     .n_keys = 4,
     .onnx = fn_onnx_block},
    {.kind = "residual",
     .keys = {{"weight", "linear.weight"},
              {"bias", "linear.bias"},
              {"gamma", "norm.weight"},
              {"beta", "norm.bias"}},
     .n_keys = 4,
     .onnx = fn_onnx_residual},
    {.kind = "relu",
     .keys = {{"weight", "linear.weight"}, {"bias", "linear.bias"}},
     .n_keys = 2,
     .onnx = fn_onnx_relu},
    {.kind = "gelu",
     .keys = {{"weight", "linear.weight"}, {"bias", "linear.bias"}},
     .n_keys = 2,
     .onnx = fn_onnx_gelu},
    {.kind = "linear",
     .keys = {{"weight", "weight"}, {"bias", "bias"}},
     .n_keys = 2,
     .onnx = fn_onnx_linear},
    {.kind = "dropout", .n_keys = 0, .onnx = fn_onnx_dropout},
};

enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

static void kind_list(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_KINDS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i == 0 ? "" :
                                i + 1 == N_KINDS ? " and " : ", ", kinds[i].kind);
}

fn_status fn_export_kind_of(const fn_layer *l, int index, const fn_export_kind **kind)
{
    const char *name = l->ops && l->ops->kind ? l->ops->kind : "(none)";
    for (int i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i].kind, name) == 0) {
            *kind = &kinds[i];
            return FN_OK;
        }
    char list[128];
    kind_list(list, sizeof list);
    return fn_fail(FN_ERR_INVALID, "layer %d (%s): kind '%s' has no export mapping (%s ha%s "
                   "one; a kind's row goes in src/export/export_kind.c)",
                   index, name, name, list, N_KINDS > 1 ? "ve" : "s");
}

fn_status fn_export_param_name(const fn_export_kind *k, const char *prefix, const fn_param *p,
                               char *name, size_t cap)
{
    for (int i = 0; i < k->n_keys; i++)
        if (strcmp(k->keys[i].param, p->name) == 0) {
            snprintf(name, cap, "%s.%s", prefix, k->keys[i].key);
            return FN_OK;
        }
    return fn_fail(FN_ERR_INVALID, "%s (%s): parameter '%s' has no state_dict name in "
                   "src/export/export_kind.c", prefix, k->kind, p->name);
}
