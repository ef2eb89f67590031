/* protobuf.h (private) — the few parts of Protocol Buffers' wire format
 * that an ONNX file needs, written directly: varints, 32-bit floats, and
 * length-delimited fields (strings, bytes, nested messages). ONNX's schema
 * is a handful of message types, all written once by onnx.c; a generated
 * encoder (protobuf-c and its compiler) would add a build dependency and a
 * generated file larger than this one.
 *
 * A message is built in a buffer; a nested message is built in a buffer of
 * its own and appended as one length-delimited field. Allocation failures
 * are remembered by the buffer (`failed`) and reported once, by
 * fn_pb_status, so the writers stay a straight list of fields. */
#ifndef FUSENET_SRC_EXPORT_PROTOBUF_H
#define FUSENET_SRC_EXPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "fusenet/status.h"

typedef struct fn_pb {
    unsigned char *data;
    size_t len, cap;
    int failed; /* an allocation failed: the content is incomplete */
} fn_pb;

void fn_pb_free(fn_pb *b);
/* FN_OK, or FN_ERR_NOMEM naming `what` when an append failed. */
fn_status fn_pb_status(const fn_pb *b, const char *what);

/* Field `field` with wire type varint: an int64 (a negative value takes ten
 * bytes, as protobuf's int64 does) or an enum. */
void fn_pb_int(fn_pb *b, int field, int64_t value);
/* Wire type 32-bit: a float, little-endian. */
void fn_pb_float(fn_pb *b, int field, float value);
/* Wire type length-delimited: bytes, a string, a nested message's bytes. */
void fn_pb_bytes(fn_pb *b, int field, const void *data, size_t n);
void fn_pb_string(fn_pb *b, int field, const char *s);
/* Appends fields already encoded (a list built in its own buffer), and
 * frees them. */
void fn_pb_fields(fn_pb *b, fn_pb *fields);
/* Appends sub (a message built apart) as field `field`, and frees sub. A
 * failure of sub's is carried into b. */
void fn_pb_message(fn_pb *b, int field, fn_pb *sub);

#endif
