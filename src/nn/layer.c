/* layer.c — the checked entry points of the layer interface: shapes,
 * devices and call order are validated here once, so every ops table
 * (CPU and CUDA) may trust its arguments. */
#include <math.h>
#include <string.h>

#include "fusenet/layer.h"

static const char *kind_of(const fn_layer *l)
{
    return l->ops && l->ops->kind ? l->ops->kind : "layer";
}

/* t must hold data on the layer's device and have shape [rows, cols]. */
static fn_status check_operand(const fn_layer *l, const fn_tensor *t, const char *what, int rows,
                               int cols)
{
    const char *kind = kind_of(l);
    if (!t || !t->data)
        return fn_fail(FN_ERR_INVALID, "%s: %s is NULL", kind, what);
    if (t->device != l->device)
        return fn_fail(FN_ERR_INVALID, "%s: %s is on the %s, the layer on the %s", kind, what,
                       fn_device_name(t->device), fn_device_name(l->device));
    if (t->rows != rows || t->cols != cols)
        return fn_fail(FN_ERR_INVALID, "%s: %s has shape [%d, %d], expected [%d, %d]", kind, what,
                       t->rows, t->cols, rows, cols);
    return FN_OK;
}

static fn_status check_layer(const fn_layer *l, const char *caller)
{
    if (!l)
        return fn_fail(FN_ERR_INVALID, "%s: layer is NULL", caller);
    if (!l->ops || !l->ops->forward || !l->ops->backward)
        return fn_fail(FN_ERR_INVALID, "%s: layer has no ops table", caller);
    return FN_OK;
}

static fn_status check_input(const fn_layer *l, const fn_tensor *x)
{
    const char *kind = kind_of(l);
    if (!x || !x->data)
        return fn_fail(FN_ERR_INVALID, "%s: x is NULL", kind);
    if (x->device != l->device)
        return fn_fail(FN_ERR_INVALID, "%s: x is on the %s, the layer on the %s", kind,
                       fn_device_name(x->device), fn_device_name(l->device));
    if (x->cols != l->in_features)
        return fn_fail(FN_ERR_INVALID, "%s: x has %d columns, expected %d", kind, x->cols,
                       l->in_features);
    if (x->rows < 1 || x->rows > l->max_batch)
        return fn_fail(FN_ERR_INVALID, "%s: x has %d rows, expected 1 to max_batch %d", kind,
                       x->rows, l->max_batch);
    return FN_OK;
}

fn_status fn_layer_forward(fn_layer *l, const fn_tensor *x, fn_tensor *y)
{
    FN_TRY(check_layer(l, "fn_layer_forward"));
    FN_TRY(check_input(l, x));
    FN_TRY(check_operand(l, y, "y", x->rows, l->out_features));
    /* A failed forward leaves nothing backward could use. */
    l->batch = 0;
    FN_TRY(l->ops->forward(l, x, y));
    l->batch = x->rows;
    return FN_OK;
}

fn_status fn_layer_forward_unbiased(fn_layer *l, const fn_tensor *x, fn_tensor *y,
                                    const float **bias)
{
    if (!bias)
        return fn_fail(FN_ERR_INVALID, "fn_layer_forward_unbiased: bias is NULL");
    *bias = NULL;
    FN_TRY(check_layer(l, "fn_layer_forward_unbiased"));
    if (!l->ops->forward_unbiased)
        return fn_layer_forward(l, x, y);
    FN_TRY(check_input(l, x));
    FN_TRY(check_operand(l, y, "y", x->rows, l->out_features));
    l->batch = 0;
    FN_TRY(l->ops->forward_unbiased(l, x, y, bias));
    l->batch = x->rows;
    return FN_OK;
}

void *fn_layer_bf16_input(fn_layer *l)
{
    return l && l->ops && l->ops->bf16_input ? l->ops->bf16_input(l) : NULL;
}

/* forward_bf16's input: x as forward's, or (x NULL) rows rows already in
 * the layer's bfloat16 input. */
static fn_status check_bf16_input(fn_layer *l, const fn_tensor *x, int rows)
{
    if (x)
        return x->rows == rows ? check_input(l, x)
                               : fn_fail(FN_ERR_INVALID, "%s: x has %d rows, rows is %d",
                                         kind_of(l), x->rows, rows);
    if (rows < 1 || rows > l->max_batch)
        return fn_fail(FN_ERR_INVALID, "%s: %d rows, expected 1 to max_batch %d", kind_of(l),
                       rows, l->max_batch);
    if (!fn_layer_bf16_input(l))
        return fn_fail(FN_ERR_INVALID, "%s: x is NULL and the layer takes no bfloat16 input",
                       kind_of(l));
    return FN_OK;
}

fn_status fn_layer_forward_bf16(fn_layer *l, const fn_tensor *x, int rows, fn_tensor *y,
                                void *y_h)
{
    FN_TRY(check_layer(l, "fn_layer_forward_bf16"));
    if (!l->ops->forward_bf16)
        return fn_fail(FN_ERR_INVALID, "%s: no forward with bfloat16 activations on the %s",
                       kind_of(l), fn_device_name(l->device));
    FN_TRY(check_bf16_input(l, x, rows));
    if (!y_h)
        FN_TRY(check_operand(l, y, "y", rows, l->out_features));
    l->batch = 0;
    FN_TRY(l->ops->forward_bf16(l, x, rows, y_h ? NULL : y, y_h));
    l->batch = rows;
    return FN_OK;
}

/* After a forward: dy [batch, out] and, when given, dx [batch, in]. */
static fn_status check_backward(const fn_layer *l, const fn_tensor *dy, const fn_tensor *dx)
{
    if (l->batch < 1)
        return fn_fail(FN_ERR_INVALID, "%s: backward before forward", kind_of(l));
    FN_TRY(check_operand(l, dy, "dy", l->batch, l->out_features));
    if (dx)
        FN_TRY(check_operand(l, dx, "dx", l->batch, l->in_features));
    return FN_OK;
}

/* A layer made for forward passes only has no gradients to write. */
static fn_status check_trainable(const fn_layer *l)
{
    if (l->forward_only)
        return fn_fail(FN_ERR_INVALID, "%s: made for forward passes only (no gradients): no "
                       "backward", kind_of(l));
    return FN_OK;
}

fn_status fn_layer_backward(fn_layer *l, const fn_tensor *dy, fn_tensor *dx)
{
    FN_TRY(check_layer(l, "fn_layer_backward"));
    FN_TRY(check_trainable(l));
    FN_TRY(check_backward(l, dy, dx));
    FN_TRY(fn_layer_restore_grads(l)); /* where a fused step released them */
    return l->ops->backward(l, dy, dx);
}

fn_status fn_layer_backward_sgd(fn_layer *l, const fn_tensor *dy, fn_tensor *dx, float lr)
{
    FN_TRY(check_layer(l, "fn_layer_backward_sgd"));
    FN_TRY(check_trainable(l));
    if (!l->ops->backward_sgd)
        return fn_fail(FN_ERR_INVALID, "%s: no fused backward and SGD step on the %s",
                       kind_of(l), fn_device_name(l->device));
    if (!(lr > 0.0f) || !isfinite(lr))
        return fn_fail(FN_ERR_INVALID, "%s: lr %g must be positive and finite", kind_of(l),
                       (double)lr);
    FN_TRY(check_backward(l, dy, dx));
    FN_TRY(l->ops->backward_sgd(l, dy, dx, lr));
    return fn_layer_refresh_bf16(l);
}

/* After the updates, which the products made where they can write only
 * fp32 (cuBLAS adding -lr dW into W): the copies rounded afresh, one pass
 * over W, the one the next forward would otherwise make. */
fn_status fn_layer_refresh_bf16(fn_layer *l)
{
    for (int i = 0; l && i < l->n_params; i++)
        FN_TRY(fn_param_refresh_bf16(&l->params[i], l->ctx));
    return FN_OK;
}

void fn_layer_destroy(fn_layer *l)
{
    if (l && l->ops && l->ops->destroy)
        l->ops->destroy(l);
}

fn_status fn_layer_set_pass(fn_layer *l, const fn_pass *pass)
{
    if (!l || !pass)
        return fn_fail(FN_ERR_INVALID, "fn_layer_set_pass: %s is NULL", !l ? "layer" : "pass");
    if (pass->step < 0 || pass->row0 < 0)
        return fn_fail(FN_ERR_INVALID, "%s: pass step %lld and row %lld must be >= 0", kind_of(l),
                       pass->step, pass->row0);
    l->pass = *pass;
    l->pass.training = pass->training && !l->forward_only;
    return l->ops && l->ops->set_pass ? l->ops->set_pass(l) : FN_OK;
}

fn_status fn_layer_zero_grad(fn_layer *l)
{
    if (!l)
        return fn_fail(FN_ERR_INVALID, "fn_layer_zero_grad: layer is NULL");
    for (int i = 0; i < l->n_params; i++) {
        if (!l->forward_only && !l->params[i].grad.data)
            continue; /* released: restored zeroed (fn_layer_release_grads) */
        fn_status st = fn_tensor_zero(&l->params[i].grad);
        if (st != FN_OK) {
            fn_error_prefix("%s: %s grad: ", kind_of(l), l->params[i].name);
            return st;
        }
    }
    return FN_OK;
}

fn_param *fn_layer_param(fn_layer *l, const char *name)
{
    if (!l || !name)
        return NULL;
    for (int i = 0; i < l->n_params; i++)
        if (strcmp(l->params[i].name, name) == 0)
            return &l->params[i];
    return NULL;
}

long long fn_layer_param_count(const fn_layer *l)
{
    long long n = 0;
    for (int i = 0; l && i < l->n_params; i++)
        n += (long long)fn_tensor_count(&l->params[i].value);
    return n;
}

size_t fn_layer_param_bytes(const fn_layer *l)
{
    size_t n = 0;
    for (int i = 0; l && i < l->n_params; i++)
        n += fn_tensor_count(&l->params[i].value) * sizeof(float);
    return n;
}

size_t fn_layer_grad_bytes(const fn_layer *l)
{
    size_t n = 0;
    for (int i = 0; l && i < l->n_params; i++)
        n += fn_tensor_count(&l->params[i].grad) * sizeof(float);
    return n;
}
