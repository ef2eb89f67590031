#!/usr/bin/python3
"""make_corpus.py — writes the HDF5 files of the bad-input corpus
(tests/bad_inputs/*.h5) that tests/test_bad_inputs.c runs ./train and
./predict on. The generated files are committed, so the tests need no Python;
run this again (with /usr/bin/python3 and Debian's python3-h5py) only to
change the corpus:

    /usr/bin/python3 tests/bad_inputs/make_corpus.py

The good files match tests/bad_inputs/train.ini: inputs X float32 [24, 6],
labels y int32 [24] in 0..3, regression targets t float32 [24, 4], and a
network `block 8 (groups 2), linear 4`. Each bad file differs from a good
one by one defect, named by the file. The .ini files of the corpus are
written by hand, not by this script."""

import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N, IN, OUT, HIDDEN, GROUPS = 24, 6, 4, 8, 2

rng = np.random.RandomState(6)
X = rng.uniform(-1, 1, size=(N, IN)).astype(np.float32)
Y = (np.arange(N) % OUT).astype(np.int32)
T = rng.uniform(-1, 1, size=(N, OUT)).astype(np.float32)


def path(name):
    return os.path.join(HERE, name)


def data(name, **sets):
    """A data file with the given datasets; None leaves one out."""
    with h5py.File(path(name), "w") as f:
        for key, value in sets.items():
            if value is not None:
                f.create_dataset(key, data=value)


def good_layers():
    r = np.random.RandomState(1)
    return [
        {"kind": "block", "in": IN, "out": HIDDEN, "groups": GROUPS,
         "weight": r.uniform(-0.4, 0.4, (HIDDEN, IN)).astype(np.float32),
         "bias": r.uniform(-0.4, 0.4, HIDDEN).astype(np.float32),
         "gamma": np.ones(HIDDEN, np.float32), "beta": np.zeros(HIDDEN, np.float32)},
        {"kind": "linear", "in": HIDDEN, "out": OUT,
         "weight": r.uniform(-0.35, 0.35, (OUT, HIDDEN)).astype(np.float32),
         "bias": r.uniform(-0.35, 0.35, OUT).astype(np.float32)},
    ]


def weights(name, layers=None, fmt="fusenet-weights", version=1, names=None, edit=None):
    """A weights file in the layout of docs/formats.md; edit(f) may spoil it."""
    layers = good_layers() if layers is None else layers
    with h5py.File(path(name), "w") as f:
        f.attrs["format"] = fmt
        f.attrs["format_version"] = np.int32(version)
        f.attrs["config"] = "; written by tests/bad_inputs/make_corpus.py\n"
        f.attrs["layers"] = names if names is not None else ",".join(
            "layer%d" % i for i in range(len(layers)))
        for i, l in enumerate(layers):
            g = f.create_group("layer%d" % i)
            g.attrs["kind"] = l["kind"]
            g.attrs["in_features"] = np.int32(l["in"])
            g.attrs["out_features"] = np.int32(l["out"])
            if l["kind"] == "block":
                g.attrs["groups"] = np.int32(l["groups"])
                g.attrs["eps"] = np.float64(1e-5)
                g.attrs["negative_slope"] = np.float64(0.01)
            for p in ("weight", "bias", "gamma", "beta"):
                if p in l:
                    g.create_dataset(p, data=l[p])
        if edit:
            edit(f)


def overwrite(name, source, offset, length, byte=0xA5):
    """A copy of source with `length` bytes from `offset` overwritten."""
    with open(path(source), "rb") as f:
        content = bytearray(f.read())
    content[offset:offset + length] = bytes([byte]) * length
    with open(path(name), "wb") as f:
        f.write(content)


def truncate(name, source, fraction):
    with open(path(source), "rb") as f:
        content = f.read()
    with open(path(name), "wb") as f:
        f.write(content[:int(len(content) * fraction)])


def object_header(name, dataset):
    with h5py.File(path(name), "r") as f:
        return h5py.h5o.get_info(f[dataset].id).addr


def raw_data(name, dataset):
    with h5py.File(path(name), "r") as f:
        return f[dataset].id.get_offset()


def virtual(name, shape, sources, y=Y):
    """A virtual X of this shape: sources are (rows, file, dataset, shape)."""
    layout = h5py.VirtualLayout(shape=shape, dtype="f4")
    for rows, file, dataset, source_shape in sources:
        layout[:rows] = h5py.VirtualSource(file, dataset, shape=source_shape)[:rows]
    with h5py.File(path(name), "w") as f:
        f.create_virtual_dataset("X", layout)
        f.create_dataset("y", data=y)


def external(name, raw, nbytes):
    """X in external raw storage: `raw` holds the first nbytes of its data."""
    if raw:
        with open(path(raw), "wb") as f:
            f.write(X.tobytes()[:nbytes])
    with h5py.File(path(name), "w") as f:
        f.create_dataset("X", shape=X.shape, dtype="f4",
                         external=[(raw or "x_nothere.raw", 0, X.nbytes)])
        f.create_dataset("y", data=Y)


def storage_and_links():
    """Data HDF5 would read as zeros, links that lead nowhere or to a good
    file, a filter this HDF5 lacks; each named by its file."""
    with h5py.File(path("x_unwritten.h5"), "w") as f:
        f.create_dataset("X", shape=X.shape, dtype="f4")
        f.create_dataset("y", data=Y)
    # Chunks of 8 rows, the middle one never written, with and without gzip.
    for name, gzip in (("x_chunk_missing.h5", "gzip"), ("x_chunk_missing_plain.h5", None)):
        with h5py.File(path(name), "w") as f:
            d = f.create_dataset("X", shape=X.shape, dtype="f4", chunks=(8, IN),
                                 compression=gzip)
            d[:8] = X[:8]
            d[16:] = X[16:]
            f.create_dataset("y", data=Y)
    external("x_external.h5", "x_external.raw", X.nbytes)
    external("x_external_short.h5", "x_external_short.raw", X.nbytes // 2)
    external("x_external_missing.h5", None, 0)
    virtual("x_virtual.h5", X.shape, [(N, "good.h5", "X", X.shape)])
    virtual("x_virtual_no_file.h5", X.shape, [(N, "nothere.h5", "X", X.shape)])
    virtual("x_virtual_no_dataset.h5", X.shape, [(N, "good.h5", "pixels", X.shape)])
    # 2^40 rows: nothing may be read (or filled) before the refusal.
    virtual("x_virtual_huge.h5", (2**40, IN), [(2**40, "nothere.h5", "X", (2**40, IN))])
    virtual("x_virtual_partial.h5", (2**40, IN), [(N, "good.h5", "X", X.shape)])
    virtual("x_virtual_short_source.h5", (2 * N, IN), [(2 * N, "good.h5", "X", (2 * N, IN))],
            y=np.concatenate([Y, Y]))
    # lzf compresses these repeated rows; Debian's HDF5 has no lzf plugin
    # (h5py brings its own), so the read fails on the filter.
    with h5py.File(path("x_lzf.h5"), "w") as f:
        f.create_dataset("X", data=np.repeat(X[:1], N, axis=0), compression="lzf")
        f.create_dataset("y", data=Y)
    # A target whose X is larger than the linking file: its storage must be
    # measured against the target.
    rows = 256
    big = np.random.RandomState(7).uniform(-1, 1, (rows, IN)).astype(np.float32)
    data("link_target.h5", X=big, y=(np.arange(rows) % OUT).astype(np.int32))
    with h5py.File(path("x_external_link.h5"), "w") as f:
        f["X"] = h5py.ExternalLink("link_target.h5", "/X")
        f["y"] = h5py.ExternalLink("link_target.h5", "/y")
    links = {
        "x_link_no_file.h5": h5py.ExternalLink("nothere.h5", "/X"),
        "x_link_no_object.h5": h5py.ExternalLink("good.h5", "/pixels"),
        "x_link_cycle.h5": h5py.ExternalLink("x_link_cycle.h5", "/X"),
        "x_soft_dangling.h5": h5py.SoftLink("/pixels"),
    }
    for name, link in links.items():
        with h5py.File(path(name), "w") as f:
            f["X"] = link
            f.create_dataset("y", data=Y)
    with h5py.File(path("x_soft_cycle.h5"), "w") as f:
        f["X"] = h5py.SoftLink("/Z")
        f["Z"] = h5py.SoftLink("/X")
        f.create_dataset("y", data=Y)


def multilabel_files():
    """bce_with_logits's targets p float32 [24, 4] in [0, 1] (1 where T > 0,
    a few soft), and the same with one value above 1."""
    p = (T > 0).astype(np.float32)
    p[::5, 1] = 0.25
    data("multilabel.h5", X=X, p=p)
    p_above = p.copy()
    p_above[13, 2] = 1.5
    data("p_above_one.h5", X=X, p=p_above)


def main():
    # --- data sets ---------------------------------------------------------
    data("good.h5", X=X, y=Y, t=T)
    data("missing_y.h5", X=X)
    data("x_int64.h5", X=X.astype(np.int64), y=Y)  # good: read as float32
    data("x_float64.h5", X=X.astype(np.float64), y=Y)  # likewise
    beyond = X.astype(np.float64)
    beyond[7, 4] = 1e39  # beyond float32's range
    data("x_beyond_float32.h5", X=beyond, y=Y)
    data("x_bool.h5", X=X > 0, y=Y)  # h5py writes bool as an enum
    data("x_string.h5", X=np.array([b"row"] * N), y=Y)
    data("y_float.h5", X=X, y=Y.astype(np.float32))  # good: whole numbers, read as labels
    data("x_rank1.h5", X=X[:, 0].copy(), y=Y)
    data("x_rank3.h5", X=X.reshape(N, 2, 3), y=Y)
    data("x_scalar.h5", X=np.float32(1.0), y=Y)
    data("y_rank2.h5", X=X, y=Y.reshape(N, 1))  # good: labels [N, 1] read as [N]
    data("y_one_hot.h5", X=X, y=np.eye(OUT, dtype=np.float32)[Y])  # good: one-hot rows
    data("t_rank1.h5", X=X, y=Y, t=T[:, 0].copy())  # good for one mse output: [N] as [N, 1]
    data("y_fraction.h5", X=X, y=Y.astype(np.float32) + 0.5)
    data("y_two_columns.h5", X=X, y=np.stack([Y, Y], axis=1))
    data("y_not_one_hot.h5", X=X, y=2 * np.eye(OUT, dtype=np.float32)[Y])
    data("n_mismatch.h5", X=X, y=Y[:20])
    data("x_cols5.h5", X=X[:, :5].copy(), y=Y)
    with h5py.File(path("x_group.h5"), "w") as f:
        f.create_group("X")
        f.create_dataset("y", data=Y)
    high = Y.copy()
    high[5] = OUT
    data("label_high.h5", X=X, y=high)
    negative = Y.copy()
    negative[7] = -1
    data("label_negative.h5", X=X, y=negative)
    # Labels an int32 cannot hold: the message must show the file's value.
    wide = Y.astype(np.int64)
    wide[9] = 2**32 + 1
    data("label_int64_big.h5", X=X, y=wide)
    top = Y.astype(np.uint64)
    top[11] = 2**64 - 1
    data("label_uint64_max.h5", X=X, y=top)
    low = Y.astype(np.int64)
    low[2] = -(2**40)
    data("label_int64_low.h5", X=X, y=low)
    nan = X.copy()
    nan[3, 2] = np.nan
    data("x_nan.h5", X=nan, y=Y)
    inf = X.copy()
    inf[10, 0] = -np.inf
    data("x_inf.h5", X=inf, y=Y)
    t_nan = T.copy()
    t_nan[17, 3] = np.nan
    data("t_nan.h5", X=X, y=Y, t=t_nan)
    data("t_cols3.h5", X=X, y=Y, t=T[:, :3].copy())
    multilabel_files()
    data("x_empty.h5", X=np.zeros((0, IN), np.float32), y=np.zeros(0, np.int32))
    data("x_no_columns.h5", X=np.zeros((N, 0), np.float32), y=Y)

    truncate("truncated.h5", "good.h5", 0.5)
    overwrite("corrupt_signature.h5", "good.h5", 0, 8)
    # The object header of X: HDF5 cannot make a dataset of it.
    overwrite("corrupt_header.h5", "good.h5", object_header("good.h5", "X"), 64)
    # X's values: 0xFFFFFFFF is a NaN, which the value check names.
    overwrite("corrupt_values.h5", "good.h5", raw_data("good.h5", "X"), 16, 0xFF)
    # A compressed chunk whose bytes are overwritten: the read itself fails.
    with h5py.File(path("chunked.h5"), "w") as f:
        f.create_dataset("X", data=X, chunks=(N, IN), compression="gzip")
        f.create_dataset("y", data=Y)
    with h5py.File(path("chunked.h5"), "r") as f:
        chunk = f["X"].id.get_chunk_info(0).byte_offset
    overwrite("corrupt_chunk.h5", "chunked.h5", chunk, 24)
    os.remove(path("chunked.h5"))
    with open(path("not_hdf5.h5"), "w") as f:
        f.write("X,y\n0.5,1\n")

    # --- storage that is not all there, links, filters
    storage_and_links()

    # --- weights files -----------------------------------------------------
    weights("good_weights.h5")
    weights("weights_version2.h5", version=2)  # 2 promises /input_norm; this one has none
    weights("weights_version3.h5", version=3)  # 3 promises /target_norm; this one has none
    weights("weights_version4.h5", version=4)
    weights("weights_other_format.h5", fmt="keras-weights")

    def no_format(f):
        del f.attrs["format"]
    weights("weights_no_format.h5", edit=no_format)

    l = good_layers()
    l[0]["weight"] = l[0]["weight"][:, :5].copy()
    weights("weights_weight_shape.h5", layers=l)
    l = good_layers()
    l[1]["bias"] = l[1]["bias"][:3].copy()
    weights("weights_bias_shape.h5", layers=l)
    l = good_layers()
    l[0]["out"] = 16
    l[1]["in"] = 16
    l[0]["weight"] = np.zeros((16, IN), np.float32)
    l[0]["bias"] = l[0]["gamma"] = l[0]["beta"] = np.zeros(16, np.float32)
    l[1]["weight"] = np.zeros((OUT, 16), np.float32)
    weights("weights_wider.h5", layers=l)
    l = good_layers()
    l[0]["groups"] = 3
    weights("weights_bad_groups.h5", layers=l)
    l = good_layers()
    l[1]["in"] = 7
    l[1]["weight"] = l[1]["weight"][:, :7].copy()
    weights("weights_chain_mismatch.h5", layers=l)
    l = good_layers()
    del l[0]["gamma"]
    weights("weights_missing_gamma.h5", layers=l)
    l = good_layers()
    l[1]["weight"][2, 5] = np.nan
    weights("weights_nan.h5", layers=l)
    weights("weights_missing_group.h5", names="layer0,layer7")
    weights("weights_no_layers.h5", layers=[], names="")

    def string_size(f):
        del f["layer0"].attrs["in_features"]
        f["layer0"].attrs["in_features"] = "six"
    weights("weights_string_size.h5", edit=string_size)
    def unwritten_weight(f):
        del f["layer1/weight"]
        f["layer1"].create_dataset("weight", shape=(OUT, HIDDEN), dtype="f4")
    weights("weights_unwritten.h5", edit=unwritten_weight)

    def missing_chunk(f):
        # As fusenet writes it (chunked, Fletcher-32), row 2's chunk absent.
        w = f["layer1/weight"][...]
        del f["layer1/weight"]
        d = f["layer1"].create_dataset("weight", shape=w.shape, dtype="f4", chunks=(1, HIDDEN),
                                       fletcher32=True)
        for row in (0, 1, 3):
            d[row] = w[row]
    weights("weights_missing_chunk.h5", edit=missing_chunk)

    def lzf_weight(f):
        # A filter Debian's HDF5 lacks: refused before the values' memory
        # is allocated, not when the read fails. Constant values, which
        # lzf compresses (h5py's lzf is optional: a chunk it cannot
        # shrink is stored as it is, and that reads without the filter).
        w = np.full((OUT, HIDDEN), 0.25, np.float32)
        del f["layer1/weight"]
        f["layer1"].create_dataset("weight", data=w, compression="lzf")
    weights("weights_lzf.h5", edit=lzf_weight)
    # 13 KB claiming two layers of 2^24 features (a petabyte of weights):
    # refused before anything is allocated. The datasets are never reached.
    l = good_layers()
    l[0]["out"] = l[1]["in"] = l[1]["out"] = 2**24
    weights("weights_huge_layers.h5", layers=l)
    truncate("weights_truncated.h5", "good_weights.h5", 0.6)
    overwrite("weights_corrupt.h5", "good_weights.h5",
              object_header("good_weights.h5", "layer1/weight"), 64)


if __name__ == "__main__":
    main()
