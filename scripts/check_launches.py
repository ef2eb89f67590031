#!/usr/bin/env python3
"""check_launches.py — fails when a kernel could race under programmatic
dependent launch (src/core/kernel_launch_cuda.cuh).

Every kernel launches through fn_launch, which may start it while its
predecessor on the stream still runs; it is safe only because every kernel
opens with FN_GRID_WAIT(). So, in every .cu and .cuh file under kernels/,
src/ and scripts/:
  1. no `<<<` launch is left (a new kernel goes through fn_launch);
  2. every __global__ function's body opens with `FN_GRID_WAIT();`, before
     any declaration or early return;
  3. every fn_launch(...) is followed by its error check,
     FN_CUDA_CHECK_LAUNCH(...) or FN_CUDA_CHECK(cudaGetLastError()) (an
     if/else of launches and closing braces may stand between);
  4. the PDL machinery (cudaLaunchKernelEx, the launch attribute, the
     device-side wait and trigger) appears only in kernel_launch_cuda.cuh.
ALLOWED lists exceptions as (file, what) with the reason; it is empty.

Usage: scripts/check_launches.py [repository root]; exit 1 with one line per
violation, 0 when clean.
"""
import pathlib
import re
import sys

HELPER = "src/core/kernel_launch_cuda.cuh"
DIRS = ["kernels", "src", "scripts"]
PDL_NAMES = ["cudaLaunchKernelEx", "cudaLaunchKernel(", "ProgrammaticStreamSerialization",
             "cudaGridDependencySynchronize", "cudaTriggerProgrammaticLaunchCompletion",
             "griddepcontrol"]
CHECKS = ("FN_CUDA_CHECK_LAUNCH(", "FN_CUDA_CHECK(cudaGetLastError())")
# (path, kernel or launch text): why it may break a rule. Keep it empty.
ALLOWED = {}


def blank_comments_and_strings(text):
    """text with comments and string literals replaced by spaces, newlines
    kept, so offsets and line numbers stay those of the file."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text[i] == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            end += 1
        else:
            i += 1
            continue
        for k in range(i, min(end, n)):
            if out[k] != "\n":
                out[k] = " "
        i = end
    return "".join(out)


def closing(code, i):
    """The offset just past the parenthesis that closes the one at code[i]."""
    depth = 0
    for k in range(i, len(code)):
        if code[k] == "(":
            depth += 1
        elif code[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(code)


def line_of(code, offset):
    return code.count("\n", 0, offset) + 1


def kernel_bodies(code):
    """(name, offset of the body's '{') of every __global__ definition."""
    for m in re.finditer(r"\b__global__\b", code):
        i, depth = m.end(), 0
        while i < len(code):
            c = code[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif depth == 0 and c in ";{":
                break
            i += 1
        if i >= len(code) or code[i] == ";":
            continue  # a declaration
        head = re.sub(r"__launch_bounds__\s*\([^)]*\)", "", code[m.end():i])
        names = re.findall(r"(\w+)\s*\(", head)
        yield (names[0] if names else "?"), i


def check_waits(rel, code, problems):
    for name, brace in kernel_bodies(code):
        if not code[brace + 1:].lstrip().startswith("FN_GRID_WAIT();"):
            if (rel, name) not in ALLOWED:
                problems.append(f"{rel}:{line_of(code, brace)}: kernel {name} does not open "
                                "with FN_GRID_WAIT(); (kernel_launch_cuda.cuh: a kernel "
                                "launched with PDL must wait before it touches memory)")


def check_followed_by_check(rel, code, problems):
    for m in re.finditer(r"\bfn_launch\s*\(", code):
        if code[:m.start()].rstrip().endswith(("void", "inline")):
            continue  # the helper's own definition
        end = closing(code, m.end() - 1)
        rest = code[end:]
        ok = False
        while True:
            rest = rest.lstrip()
            if rest.startswith(";"):
                rest = rest[1:]
            elif rest.startswith(CHECKS):
                ok = True
                break
            elif rest.startswith("}") or rest.startswith(")"):
                rest = rest[1:]
            elif re.match(r"else\s+fn_launch\s*\(", rest):
                at = rest.index("(")
                rest = rest[closing(rest, at):]
            else:
                break
        if not ok:
            problems.append(f"{rel}:{line_of(code, m.start())}: fn_launch is not followed by "
                            "FN_CUDA_CHECK_LAUNCH(kernel) (cuda_check.h): its error would "
                            "go unread")


def check_file(root, path, problems):
    rel = path.relative_to(root).as_posix()
    code = blank_comments_and_strings(path.read_text(encoding="utf-8"))
    if rel == HELPER:
        check_waits(rel, code, problems)
        return
    for m in re.finditer(r"<<<", code):
        if (rel, "<<<") not in ALLOWED:
            problems.append(f"{rel}:{line_of(code, m.start())}: a `<<<` launch; launch with "
                            "fn_launch (src/core/kernel_launch_cuda.cuh) instead")
    for name in PDL_NAMES:
        for m in re.finditer(re.escape(name), code):
            problems.append(f"{rel}:{line_of(code, m.start())}: {name.rstrip('(')} outside "
                            f"{HELPER}: launch with fn_launch, wait with FN_GRID_WAIT()")
    check_waits(rel, code, problems)
    check_followed_by_check(rel, code, problems)


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else ".").resolve()
    problems = []
    files = 0
    for d in DIRS:
        for path in sorted((root / d).rglob("*")):
            if path.suffix in (".cu", ".cuh") and path.is_file():
                files += 1
                check_file(root, path, problems)
    if files == 0:
        problems.append(f"{root}: no .cu or .cuh file under {', '.join(DIRS)}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
