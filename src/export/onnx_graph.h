/* onnx_graph.h (private) — an ONNX graph being built: its nodes and its
 * initializers (the weights, as float32 raw data), in protobuf encoding
 * (protobuf.h). Each layer kind's nodes are added by its row of the export
 * table (export_kind.h); onnx.c wraps the graph into a model. */
#ifndef FUSENET_SRC_EXPORT_ONNX_GRAPH_H
#define FUSENET_SRC_EXPORT_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "export/protobuf.h"
#include "fusenet/param.h"

/* The opset the graph is written for: opset 17 (ONNX 1.12, ONNX Runtime
 * 1.12 and later), the last one whose ReduceMean takes its axes as an
 * attribute; IR version 8 goes with it. */
enum { FN_ONNX_OPSET = 17, FN_ONNX_IR_VERSION = 8 };

typedef struct fn_onnx_graph {
    fn_pb nodes;        /* repeated NodeProto, encoded as GraphProto field 1 */
    fn_pb initializers; /* repeated TensorProto, as GraphProto field 5 */
} fn_onnx_graph;

/* A node attribute: a float, an int or a list of ints. */
typedef enum fn_onnx_attr_type {
    FN_ONNX_FLOAT = 1,
    FN_ONNX_INT = 2,
    FN_ONNX_INTS = 7
} fn_onnx_attr_type; /* AttributeProto.AttributeType's values */

typedef struct fn_onnx_attr {
    const char *name;
    fn_onnx_attr_type type;
    float f;
    int64_t i;
    const int64_t *ints;
    int n_ints;
} fn_onnx_attr;

/* A node op_type(inputs) -> output, named `name` (unique in the graph). */
void fn_onnx_node(fn_onnx_graph *g, const char *op_type, const char *name,
                  const char *const *inputs, int n_inputs, const char *output,
                  const fn_onnx_attr *attrs, int n_attrs);

/* Initializers: float32 data of rank 0 to 2 (dims[rank]), and int64 data
 * of rank 1 (a Reshape's shape). */
void fn_onnx_floats(fn_onnx_graph *g, const char *name, const float *data, int rank,
                    const int64_t *dims);
void fn_onnx_int64s(fn_onnx_graph *g, const char *name, const int64_t *data, int n);
/* A parameter's values as an initializer called `name`: weight [out, in],
 * every other parameter [out], as PyTorch shapes them. */
fn_status fn_onnx_param(fn_onnx_graph *g, const char *name, const fn_param *p);

void fn_onnx_graph_free(fn_onnx_graph *g);

#endif
