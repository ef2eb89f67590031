#!/usr/bin/env python3
"""check_public_api.py — the public line of libfusenet: the shared library
exports exactly what the public headers declare, and the umbrella header
includes every public header.

    check_public_api.py --cc CC --source SRC --generated GEN --lib LIBFUSENET_SO

SRC is the checkout (its include/fusenet/ the public headers), GEN the
build's generated include folder (its fusenet/version.h). The umbrella
program tests/consumer/umbrella.c, which includes fusenet/fusenet.h alone,
is compiled with the compiler's -aux-info: every function the public
headers declare is listed there with the header it comes from, so a header
the umbrella misses, or a declaration without FN_API, shows up. Checks:

  1. fusenet.h has an #include line for every header of include/fusenet/
     (and the generated version.h), and the umbrella program reaches them all;
  2. the functions and objects the public headers declare are the dynamic
     symbols libfusenet.so defines (nm -D --defined-only): none missing
     (a public call a program cannot link), none more (machinery in the API).

Exits 1 naming each difference; 0 when the line holds."""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def public_headers(source, generated):
    """{name: path} of every public header."""
    folder = os.path.join(source, "include", "fusenet")
    headers = {n: os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".h")}
    headers["version.h"] = os.path.join(generated, "fusenet", "version.h")
    return headers


def umbrella_includes(path):
    with open(path) as f:
        return set(re.findall(r'^#include "fusenet/([\w.]+)"', f.read(), re.M))


def compile_umbrella(cc, source, generated, tmp):
    """(the headers the umbrella program reaches, {function: header})."""
    umbrella = os.path.join(source, "tests", "consumer", "umbrella.c")
    aux = os.path.join(tmp, "aux.txt")
    deps = os.path.join(tmp, "umbrella.d")
    cmd = [cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.join(source, "include"),
           "-I", generated, "-aux-info", aux, "-MD", "-MF", deps, "-c", umbrella,
           "-o", os.path.join(tmp, "umbrella.o")]
    subprocess.run(cmd, check=True)
    with open(deps) as f:
        reached = set(os.path.realpath(p) for p in f.read().replace("\\\n", " ").split()[1:])
    functions = {}
    with open(aux) as f:
        for line in f:
            m = re.match(r"/\* (\S+):\d+:\w+ \*/ (.*)", line)
            if not m:
                continue
            where, decl = m.groups()
            if os.path.basename(os.path.dirname(where)) != "fusenet":
                continue  # the C library's own headers
            name = re.search(r"(\w+) \(", decl)
            if name:
                functions[name.group(1)] = os.path.basename(where)
    return reached, functions


def public_objects(headers):
    """{object: header} of every extern object the public headers declare."""
    objects = {}
    for name, path in headers.items():
        with open(path) as f:
            text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
        for m in re.finditer(r"^[ \t]*(?:FN_API[ \t]+)?extern[ \t]+[^;(\"\n]*?\b(\w+)[ \t]*(?:\[[^\]\n]*\])?[ \t]*;",
                             text, re.M):
            objects[m.group(1)] = name
    return objects


def exported(lib):
    """The dynamic symbols lib defines, less AddressSanitizer's companions
    of exported objects (__odr_asan.<object>) in a -DFN_SANITIZE=ON build."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set(line.split()[-1] for line in out.splitlines() if line.strip())
    return set(n for n in names if not n.startswith("__odr_asan."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--source", required=True)
    ap.add_argument("--generated", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    problems = []
    headers = public_headers(a.source, a.generated)
    listed = umbrella_includes(headers["fusenet.h"])
    for name in sorted(set(headers) - listed - {"fusenet.h"}):
        problems.append("fusenet.h does not include public header %s" % name)
    for name in sorted(listed - set(headers)):
        problems.append("fusenet.h includes %s, which is no public header" % name)
    with tempfile.TemporaryDirectory() as tmp:
        reached, functions = compile_umbrella(a.cc, a.source, a.generated, tmp)
    for name, path in sorted(headers.items()):
        if name != "fusenet.h" and os.path.realpath(path) not in reached:
            problems.append("the umbrella program (fusenet.h) does not reach %s" % name)
    declared = dict(functions)
    declared.update(public_objects(headers))
    symbols = exported(a.lib)
    for name in sorted(set(declared) - symbols):
        problems.append("%s declares %s, which %s does not export (no FN_API, or not defined)"
                        % (declared[name], name, os.path.basename(a.lib)))
    for name in sorted(symbols - set(declared)):
        problems.append("%s exports %s, which no public header declares"
                        % (os.path.basename(a.lib), name))
    for p in problems:
        print("check_public_api: " + p)
    print("check_public_api: %d public declarations, %d exported symbols, %d problem(s)"
          % (len(declared), len(symbols), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
