#!/usr/bin/env python3
"""check_layers.py — fails when an #include crosses the architecture's rules.

The rooms (layers), lowest floor first (docs/design.md):

    core < dist < store < data < nn < optim < export < run < trainer < programs

A file may include headers of its own layer or lower ones. Where a file
sits says its layer:
  src/<layer>/*              that layer (also the home of private headers,
                             included as "nn/layers/block/block_impl.h")
  include/fusenet/<x>.h      the layer of the src/ file with stem <x>
                             (block.h: src/nn/layers/block/block.c), else FALLBACK
  kernels/<room>/*.cu        that room
  kernels/<x>_cuda.cu        the room of the src/ file with stem <x>
                             (block_cuda.cu: nn)
  train/*.c                  programs
Further rules: public headers include only public headers; programs include
only public headers, except the white-box ones in WHITE_BOX (bench times
kernels one by one). Tests are white-box by design and not checked.

Usage: scripts/check_layers.py [repository root]; exit 1 with one line per
violation, 0 when clean.
"""
import pathlib
import re
import sys

LAYERS = ["core", "dist", "store", "data", "nn", "optim", "export", "run", "trainer",
          "programs"]
# Headers and kernels without a same-stem source in src/.
FALLBACK = {"param": "core", "memory": "core", "transfer": "core", "option": "core",
            "fusenet": "trainer"}  # fusenet.h, the umbrella: every public header
WHITE_BOX = {"bench.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stem_layers(root):
    """Every src/<layer>/<stem>.* file's stem mapped to its layer (a private
    header of kernels, nn/layers/block/block_products_cuda.h, also without _cuda)."""
    found = {}
    for f in (root / "src").glob("*/*"):
        layer = f.parent.name
        if layer in LAYERS:
            stem = f.name.split(".")[0]
            found.setdefault(stem, layer)
            found.setdefault(re.sub(r"_cuda$", "", stem), layer)
    return found


def layer_of_stem(stem, stems):
    return stems.get(stem) or FALLBACK.get(stem)


def layer_of_file(path, root, stems):
    rel = path.relative_to(root)
    top = rel.parts[0]
    if top == "src":
        return rel.parts[1]
    if top == "include":
        return layer_of_stem(path.stem, stems)
    if top == "kernels" and len(rel.parts) > 2:
        return rel.parts[1] if rel.parts[1] in LAYERS else None
    if top == "kernels":
        return layer_of_stem(re.sub(r"_cuda$", "", path.stem), stems)
    if top == "train":
        return "programs"
    return None


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
        return [f"{rel}: no layer (add a source of the same stem to src/<layer>/ or "
                f"an entry to FALLBACK in {pathlib.Path(__file__).name})"]
    public = rel.parts[0] == "include"
    program = rel.parts[0] == "train" and path.name not in WHITE_BOX
    problems = []
    text = path.read_text(encoding="utf-8")
    for m in INCLUDE.finditer(text):
        name = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        theirs, is_public = layer_of_include(name, stems)
        where = f"{rel}:{line}: \"{name}\""
        if theirs is None:
            problems.append(f"{where}: not a public (fusenet/...) or layered (<layer>/...) header")
        elif (public or program) and not is_public:
            problems.append(f"{where}: a {'public header' if public else 'program'} "
                            "includes a private header")
        elif LAYERS.index(theirs) > LAYERS.index(mine):
            problems.append(f"{where}: {mine} includes {theirs}, a higher layer")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    stems = stem_layers(root)
    files = [f for pattern in ("src/*/*", "include/fusenet/*.h", "kernels/*", "kernels/*/*",
                                         "train/*.c")
             for f in sorted(root.glob(pattern)) if f.is_file()]
    problems = [p for f in files for p in check_file(f, root, stems)]
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
