/* onnx_graph.c — nodes and initializers of an ONNX graph in protobuf
 * encoding (onnx_graph.h). Field numbers are those of onnx/onnx.proto:
 * NodeProto, AttributeProto, TensorProto. */
#include <stdlib.h>
#include <string.h>

#include "export/onnx_graph.h"

/* NodeProto */
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTRIBUTE = 5 };
/* AttributeProto */
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_INTS = 8, ATTR_TYPE = 20 };
/* TensorProto and its DataType values */
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9 };
enum { DTYPE_FLOAT = 1, DTYPE_INT64 = 7 };
/* GraphProto: where the two lists go */
enum { GRAPH_NODE = 1, GRAPH_INITIALIZER = 5 };

static void attribute(fn_pb *node, const fn_onnx_attr *a)
{
    fn_pb m = {0};
    fn_pb_string(&m, ATTR_NAME, a->name);
    fn_pb_int(&m, ATTR_TYPE, a->type);
    if (a->type == FN_ONNX_FLOAT)
        fn_pb_float(&m, ATTR_F, a->f);
    else if (a->type == FN_ONNX_INT)
        fn_pb_int(&m, ATTR_I, a->i);
    for (int k = 0; a->type == FN_ONNX_INTS && k < a->n_ints; k++)
        fn_pb_int(&m, ATTR_INTS, a->ints[k]);
    fn_pb_message(node, NODE_ATTRIBUTE, &m);
}

void fn_onnx_node(fn_onnx_graph *g, const char *op_type, const char *name,
                  const char *const *inputs, int n_inputs, const char *output,
                  const fn_onnx_attr *attrs, int n_attrs)
{
    fn_pb m = {0};
    for (int k = 0; k < n_inputs; k++)
        fn_pb_string(&m, NODE_INPUT, inputs[k]);
    fn_pb_string(&m, NODE_OUTPUT, output);
    fn_pb_string(&m, NODE_NAME, name);
    fn_pb_string(&m, NODE_OP_TYPE, op_type);
    for (int k = 0; k < n_attrs; k++)
        attribute(&m, &attrs[k]);
    fn_pb_message(&g->nodes, GRAPH_NODE, &m);
}

/* raw_data is little-endian whatever the host. */
static void tensor(fn_onnx_graph *g, const char *name, int dtype, const int64_t *dims, int rank,
                   const unsigned char *raw, size_t n)
{
    fn_pb m = {0};
    for (int k = 0; k < rank; k++)
        fn_pb_int(&m, TENSOR_DIMS, dims[k]);
    fn_pb_int(&m, TENSOR_DATA_TYPE, dtype);
    fn_pb_string(&m, TENSOR_NAME, name);
    fn_pb_bytes(&m, TENSOR_RAW_DATA, raw, n);
    fn_pb_message(&g->initializers, GRAPH_INITIALIZER, &m);
}

static void put_le(unsigned char *out, uint64_t v, int bytes)
{
    for (int k = 0; k < bytes; k++)
        out[k] = (unsigned char)(v >> (8 * k));
}

void fn_onnx_floats(fn_onnx_graph *g, const char *name, const float *data, int rank,
                    const int64_t *dims)
{
    size_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= (size_t)dims[k];
    unsigned char *raw = malloc(n * 4 + 1);
    if (!raw) {
        g->initializers.failed = 1;
        return;
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t bits;
        memcpy(&bits, &data[k], sizeof bits);
        put_le(raw + 4 * k, bits, 4);
    }
    tensor(g, name, DTYPE_FLOAT, dims, rank, raw, n * 4);
    free(raw);
}

void fn_onnx_int64s(fn_onnx_graph *g, const char *name, const int64_t *data, int n)
{
    unsigned char raw[8 * 8];
    if (n > 8) {
        g->initializers.failed = 1;
        return;
    }
    for (int k = 0; k < n; k++)
        put_le(raw + 8 * k, (uint64_t)data[k], 8);
    const int64_t dims[1] = {n};
    tensor(g, name, DTYPE_INT64, dims, 1, raw, (size_t)n * 8);
}

fn_status fn_onnx_param(fn_onnx_graph *g, const char *name, const fn_param *p)
{
    const size_t n = fn_tensor_count(&p->value);
    float *host = malloc(n * sizeof(float) + 1);
    if (!host)
        return fn_fail(FN_ERR_NOMEM, "out of host memory for %s (%zu values)", name, n);
    fn_status st = fn_tensor_download(&p->value, host, n);
    const int matrix = strcmp(p->name, "weight") == 0;
    const int64_t dims[2] = {matrix ? p->value.rows : (int64_t)n, p->value.cols};
    if (st == FN_OK)
        fn_onnx_floats(g, name, host, matrix ? 2 : 1, dims);
    free(host);
    return st;
}

void fn_onnx_graph_free(fn_onnx_graph *g)
{
    fn_pb_free(&g->nodes);
    fn_pb_free(&g->initializers);
}
