/* onnx.c — a network as an ONNX model (export.h): the graph's input
 * "input" [batch, in] (batch a named, free dimension), the input
 * standardisation when the network has one ((x - mean) / std: Sub, then
 * Div, as fusenet applies it), each layer's nodes from its row of the
 * export table, the output "output" [batch, out]; the entries (the
 * architecture, config, provenance) as metadata_props. Field numbers are
 * those of onnx/onnx.proto: ModelProto, GraphProto, ValueInfoProto,
 * TypeProto, TensorShapeProto. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "export/export_impl.h"
#include "export/export_kind.h"
#include "export/onnx_graph.h"
#include "fusenet/version.h"

enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_PRODUCER_VERSION = 3,
       MODEL_DOC_STRING = 6, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8, MODEL_METADATA = 14 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { ENTRY_KEY = 1, ENTRY_VALUE = 2 };
enum { GRAPH_NAME = 2, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { VALUE_NAME = 1, VALUE_TYPE = 2 };
enum { TYPE_TENSOR = 1, TENSOR_ELEM_TYPE = 1, TENSOR_SHAPE = 2, SHAPE_DIM = 1 };
enum { DIM_VALUE = 1, DIM_PARAM = 2 };
enum { ELEM_FLOAT = 1 };

/* ValueInfoProto of a float tensor [batch, features]. */
static void value_info(fn_pb *graph, int field, const char *name, int features)
{
    fn_pb batch = {0}, width = {0}, shape = {0}, tensor = {0}, type = {0}, info = {0};
    fn_pb_string(&batch, DIM_PARAM, "batch");
    fn_pb_int(&width, DIM_VALUE, features);
    fn_pb_message(&shape, SHAPE_DIM, &batch);
    fn_pb_message(&shape, SHAPE_DIM, &width);
    fn_pb_int(&tensor, TENSOR_ELEM_TYPE, ELEM_FLOAT);
    fn_pb_message(&tensor, TENSOR_SHAPE, &shape);
    fn_pb_message(&type, TYPE_TENSOR, &tensor);
    fn_pb_string(&info, VALUE_NAME, name);
    fn_pb_message(&info, VALUE_TYPE, &type);
    fn_pb_message(graph, field, &info);
}

/* (input - mean) / std, into "input_norm/x". */
static const char *standardise(fn_onnx_graph *g, const fn_input_norm *norm)
{
    const int64_t dims[1] = {fn_input_norm_features(norm)};
    fn_onnx_floats(g, "input_norm.mean", fn_input_norm_mean(norm), 1, dims);
    fn_onnx_floats(g, "input_norm.std", fn_input_norm_std(norm), 1, dims);
    const char *sub_in[2] = {"input", "input_norm.mean"};
    const char *div_in[2] = {"input_norm/centred", "input_norm.std"};
    fn_onnx_node(g, "Sub", "input_norm/centred", sub_in, 2, "input_norm/centred", NULL, 0);
    fn_onnx_node(g, "Div", "input_norm/x", div_in, 2, "input_norm/x", NULL, 0);
    return "input_norm/x";
}

static fn_status layers(fn_onnx_graph *g, const fn_net *net, const fn_input_norm *norm)
{
    const int n = fn_net_n_layers(net);
    char in[FN_EXPORT_NAME_CAP], out[FN_EXPORT_NAME_CAP], prefix[32];
    snprintf(in, sizeof in, "%s", norm ? standardise(g, norm) : "input");
    for (int i = 0; i < n; i++) {
        const fn_layer *l = fn_net_layer(net, i);
        const fn_export_kind *k = NULL;
        FN_TRY(fn_export_kind_of(l, i, &k));
        snprintf(prefix, sizeof prefix, "layer%d", i);
        if (i + 1 < n)
            snprintf(out, sizeof out, "%s/y", prefix);
        else
            snprintf(out, sizeof out, "output");
        FN_TRY(k->onnx(g, l, prefix, in, out));
        snprintf(in, sizeof in, "%s", out);
    }
    return FN_OK;
}

static fn_status graph(fn_pb *model, const fn_net *net, const fn_input_norm *norm)
{
    fn_onnx_graph g = {0};
    fn_status st = layers(&g, net, norm);
    if (st != FN_OK) {
        fn_onnx_graph_free(&g);
        return st;
    }
    fn_pb m = {0};
    fn_pb_fields(&m, &g.nodes);
    fn_pb_string(&m, GRAPH_NAME, "fusenet");
    fn_pb_fields(&m, &g.initializers);
    value_info(&m, GRAPH_INPUT, "input", fn_net_in_features(net));
    value_info(&m, GRAPH_OUTPUT, "output", fn_net_out_features(net));
    fn_pb_message(model, MODEL_GRAPH, &m);
    return FN_OK;
}

static void header(fn_pb *model)
{
    fn_pb opset = {0};
    fn_pb_int(model, MODEL_IR_VERSION, FN_ONNX_IR_VERSION);
    fn_pb_string(model, MODEL_PRODUCER_NAME, "fusenet");
    fn_pb_string(model, MODEL_PRODUCER_VERSION, fn_version());
    fn_pb_string(model, MODEL_DOC_STRING, "a fusenet network: blocks (Linear -> GroupNorm -> "
                 "LeakyReLU -> x + x) and linear layers");
    fn_pb_string(&opset, OPSET_DOMAIN, "");
    fn_pb_int(&opset, OPSET_VERSION, FN_ONNX_OPSET);
    fn_pb_message(model, MODEL_OPSET_IMPORT, &opset);
}

static void metadata(fn_pb *model, const fn_export_meta *all)
{
    for (int i = 0; i < fn_export_meta_count(all); i++) {
        fn_pb entry = {0};
        fn_pb_string(&entry, ENTRY_KEY, fn_export_meta_key(all, i));
        fn_pb_string(&entry, ENTRY_VALUE, fn_export_meta_value(all, i));
        fn_pb_message(model, MODEL_METADATA, &entry);
    }
}

fn_status fn_export_onnx(const fn_net *net, const fn_input_norm *norm, const fn_export_meta *all,
                         const char *path, char **tmp)
{
    fn_pb model = {0};
    header(&model);
    fn_status st = graph(&model, net, norm);
    metadata(&model, all);
    if (st == FN_OK)
        st = fn_pb_status(&model, path);
    /* protobuf's own limit on one message: larger models need ONNX's
     * external data, which this writer does not produce. */
    if (st == FN_OK && model.len > (size_t)INT32_MAX)
        st = fn_fail(FN_ERR_INVALID, "%s: the model takes %zu bytes, more than the 2 GiB a "
                     "protobuf message may hold; export it as safetensors", path, model.len);
    const void *parts[1] = {model.data};
    const size_t sizes[1] = {model.len};
    if (st == FN_OK)
        st = fn_export_file_stage(path, parts, sizes, 1, tmp);
    fn_pb_free(&model);
    return st;
}
