#!/usr/bin/env python3
"""check_layers.py — fails when an #include crosses the architecture's rules.

The rooms (layers), lowest floor first (docs/design.md):

    core < dist < store < data < nn < optim < export < run < trainer < programs

A file may include headers of its own layer or lower ones. Where a file
sits says its layer, by its path alone:
  src/<layer>/...            that layer (also the home of private headers,
                             included by their path under src/,
                             "nn/layers/block/block_impl.h")
  kernels/<layer>/...        that layer
  include/fusenet/<x>.h      the layer of the src/ file with stem <x>
                             (block.h: src/nn/layers/block/block.c), else
                             FALLBACK
  train/*.c                  programs
Further rules: public headers include only public headers; programs include
only public headers, except the white-box ones in WHITE_BOX (bench times
kernels one by one). Inside a room, a kind's folder
(src/<layer>/<family>/<kind>/, kernels/ alike: src/nn/layers/block/)
includes no other kind's folder; what kinds share sits at the room's root.
kernels/ mirrors src/: every kernels/<path> has its src/<path> directory.
Tests are white-box by design and not checked.

Usage: scripts/check_layers.py [repository root]; exit 1 with one line per
violation, 0 when clean.
"""
import pathlib
import re
import sys

LAYERS = ["core", "dist", "store", "data", "nn", "optim", "export", "run", "trainer",
          "programs"]
# Headers and kernels without a same-stem source in src/.
FALLBACK = {"param": "core", "memory": "core", "transfer": "core", "option": "core", "api": "core",
            "fusenet": "trainer"}  # fusenet.h, the umbrella: every public header
WHITE_BOX = {"bench.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stem_layers(root):
    """Every src/<layer>/.../<stem>.* file's stem mapped to its layer (a
    private header of kernels, block_products_cuda.h, also without _cuda):
    the layer of a public header of the same stem."""
    found = {}
    for f in sorted((root / "src").rglob("*")):
        layer = f.relative_to(root / "src").parts[0]
        if f.is_file() and layer in LAYERS:
            stem = f.name.split(".")[0]
            found.setdefault(stem, layer)
            found.setdefault(re.sub(r"_cuda$", "", stem), layer)
    return found


def layer_of_stem(stem, stems):
    return stems.get(stem) or FALLBACK.get(stem)


def layer_of_file(path, root, stems):
    rel = path.relative_to(root)
    top = rel.parts[0]
    if top in ("src", "kernels"):
        return rel.parts[1] if len(rel.parts) > 2 and rel.parts[1] in LAYERS else None
    if top == "include":
        return layer_of_stem(path.stem, stems)
    if top == "train":
        return "programs"
    return None


def kind_of(parts):
    """(layer, family, kind) of a path under src/ or kernels/ (as parts after
    that top folder) in a kind's folder, else None: <layer>/<family>/<kind>/<file>."""
    return tuple(parts[:3]) if len(parts) >= 4 else None


def layer_of_include(name, stems):
    head, _, rest = name.partition("/")
    if head == "fusenet":
        return layer_of_stem(pathlib.Path(rest).stem, stems), True
    if head in LAYERS:
        return head, False
    return None, False


def check_file(path, root, stems):
    rel = path.relative_to(root)
    mine = layer_of_file(path, root, stems)
    if mine is None:
        where = ("src/<layer>/ or kernels/<layer>/" if rel.parts[0] in ("src", "kernels")
                 else "src/<layer>/ (a source of the same stem)")
        return [f"{rel}: no layer (it belongs under {where}, or needs an entry to "
                f"FALLBACK in {pathlib.Path(__file__).name})"]
    public = rel.parts[0] == "include"
    program = rel.parts[0] == "train" and path.name not in WHITE_BOX
    my_kind = kind_of(rel.parts[1:]) if rel.parts[0] in ("src", "kernels") else None
    problems = []
    if rel.parts[0] == "kernels" and not (root / "src" / rel.parent.relative_to("kernels")).is_dir():
        problems.append(f"{rel}: kernels/ mirrors src/, but src/"
                        f"{rel.parent.relative_to('kernels').as_posix()}/ does not exist "
                        "(a kernel sits in the folder of its host C's path)")
    text = path.read_text(encoding="utf-8")
    for m in INCLUDE.finditer(text):
        name = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        theirs, is_public = layer_of_include(name, stems)
        their_kind = None if is_public else kind_of(name.split("/"))
        where = f"{rel}:{line}: \"{name}\""
        if theirs is None:
            problems.append(f"{where}: not a public (fusenet/...) or layered (<layer>/...) header")
        elif (public or program) and not is_public:
            problems.append(f"{where}: a {'public header' if public else 'program'} "
                            "includes a private header")
        elif LAYERS.index(theirs) > LAYERS.index(mine):
            problems.append(f"{where}: {mine} includes {theirs}, a higher layer")
        elif my_kind and their_kind and their_kind != my_kind:
            problems.append(f"{where}: the kind {'/'.join(my_kind)} includes another kind's "
                            f"folder ({'/'.join(their_kind)}); what kinds share belongs at "
                            f"src/{my_kind[0]}/")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    stems = stem_layers(root)
    files = [f for pattern in ("src/**/*", "include/fusenet/*.h", "kernels/**/*", "train/*.c")
             for f in sorted(root.glob(pattern)) if f.is_file()]
    problems = [p for f in files for p in check_file(f, root, stems)]
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
