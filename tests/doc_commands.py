#!/usr/bin/python3
"""doc_commands.py — runs every command block that README.md and docs/*.md
mark as runnable on a CPU, so the docs cannot drift from the programs.

A block is marked by `<!-- test: cpu -->` (or `<!-- test: cpu mpi -->` for
one that needs mpirun, `<!-- test: cpu python -->` for one that runs the
Python package) on the line before a fenced ```sh block. Each block
runs with bash (`set -e -o pipefail`), in order (README.md first, then
docs/*.md by name), in a temporary copy of the checkout's data/ beside
links to the rest of it, with a build/ that holds only the programs
scripts/run_example.sh builds (the README's set-up command), linked from
the build being tested: `./build/train` is the program just built, a
command that needs more than a reader has after that command fails, and
no run writes into the checkout. A file the blocks leave outside runs/
fails the test unless git ignores it (.gitignore), so following the docs
leaves a clean checkout. `/usr/bin/python3` in a block becomes this interpreter (ctest's
FN_PYTHON). `mpi` blocks need FN_MPIEXEC (set by ctest when the build has
MPI) and are skipped with a line saying so otherwise. `python` blocks need
FN_PYENV_PYTHON (the interpreter with scikit-learn, set by ctest when there
is one; skipped otherwise): `python3` at a line's start becomes it, and the
package is found as if installed (PYTHONPATH=python/, FUSENET_LIBRARY the
build's libfusenet.so). A marker that is not
followed by a ```sh block, or docs without a single marked block, fail the
test, and so does a command calling the exporter by its bare name (a line
or a `code span` starting `export ` that is not an assignment, `export
NAME=...`): the shell's builtin `export` takes that name, so the docs
call it by its path, `./build/export`.

Needs FN_SOURCE_DIR and FN_BUILD_DIR (set by ctest)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.environ["FN_SOURCE_DIR"]
BUILD = os.environ["FN_BUILD_DIR"]
MPIEXEC = os.environ.get("FN_MPIEXEC", "")
PYENV = os.environ.get("FN_PYENV_PYTHON", "")
MARKER = re.compile(r"^<!-- test: cpu(?: (mpi|python))? -->$")
# `export` with arguments other than an assignment: the program by its bare
# name, at a line's start (a command) or in a code span.
BARE_EXPORT = re.compile(r"^\s*(?:\$ )?export (?![A-Za-z_]\w*=)|`export (?![A-Za-z_]\w*=)")


def doc_files():
    docs = sorted(glob.glob(os.path.join(SOURCE, "docs", "*.md")))
    return [os.path.join(SOURCE, "README.md")] + docs


def blocks(path):
    """(line number, "mpi", "python" or "", text) of each marked block of one file."""
    lines = open(path, encoding="utf-8").read().splitlines()
    name = os.path.relpath(path, SOURCE)
    found = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.rstrip())
        if not m:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            sys.exit(f"{name}:{i + 1}: a test marker must be followed by a ```sh block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            sys.exit(f"{name}:{i + 2}: the ```sh block is not closed")
        text = "\n".join(lines[i + 2:end])
        if not text.strip():
            sys.exit(f"{name}:{i + 2}: the marked block is empty")
        found.append((i + 1, m.group(1) or "", text))
    return found


def bare_exports(path):
    """"file:line: ..." of each place calling the exporter by its bare name."""
    name = os.path.relpath(path, SOURCE)
    return [f"{name}:{i}: `export` by its bare name is the shell's builtin; write "
            f"./build/export: {line.strip()}"
            for i, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1)
            if BARE_EXPORT.search(line)]


def example_targets():
    """The targets scripts/run_example.sh builds (its `--target` list)."""
    text = open(os.path.join(SOURCE, "scripts", "run_example.sh"), encoding="utf-8").read()
    m = re.search(r"--target((?: +[\w-]+)+)", text)
    if not m:
        sys.exit("scripts/run_example.sh: no `cmake --build ... --target ...` line")
    return m.group(1).split()


def workspace(tmp):
    """A place that looks like a checkout after scripts/run_example.sh:
    data/ copied, build/ the programs that script builds (from the build
    under test), every other top-level entry (scripts/, tests/, ...) linked."""
    for entry in os.listdir(SOURCE):
        if entry in ("build", "runs", ".git") or entry.startswith("build"):
            continue
        src = os.path.join(SOURCE, entry)
        if entry == "data":
            shutil.copytree(src, os.path.join(tmp, entry))
        else:
            os.symlink(src, os.path.join(tmp, entry))
    os.mkdir(os.path.join(tmp, "build"))
    for target in example_targets():
        os.symlink(os.path.join(os.path.abspath(BUILD), target),
                   os.path.join(tmp, "build", target))


def files_under(tmp):
    """Every file and link of the workspace, relative, not inside the
    linked entries (those are the checkout's own)."""
    found = set()
    for root, dirs, files in os.walk(tmp):
        for name in dirs + files:
            full = os.path.join(root, name)
            if os.path.islink(full) or not os.path.isdir(full):
                found.add(os.path.relpath(full, tmp))
    return found


def left_outside_runs(tmp, before):
    """The files the blocks wrote outside runs/ and build/ that git does
    not ignore (git check-ignore against the checkout's .gitignore)."""
    new = sorted(f for f in files_under(tmp) - before
                 if f.split(os.sep)[0] not in ("runs", "build"))
    if not new:
        return []
    try:
        r = subprocess.run(["git", "-C", SOURCE, "check-ignore", "--no-index", "--stdin"],
                           input="\n".join(new), capture_output=True, text=True)
        ignored = set(r.stdout.split("\n"))
    except OSError:  # no git: only runs/ counts
        ignored = set()
    return [f for f in new if f not in ignored]


def command_text(text, kind):
    text = text.replace("/usr/bin/python3", sys.executable)
    if kind == "mpi":
        text = re.sub(r"^mpirun ", MPIEXEC + " ", text, flags=re.M)
    if kind == "python":
        text = re.sub(r"^python3 ", PYENV + " ", text, flags=re.M)
    return text


def run(name, line, kind, text, tmp):
    env = dict(os.environ)
    if kind == "python":
        env.update(PYTHONPATH=os.path.join(SOURCE, "python"),
                   FUSENET_LIBRARY=os.path.join(os.path.abspath(BUILD), "libfusenet.so"))
    if kind == "mpi":
        # As the dist tests run mpirun: root allowed, oversubscribed cores,
        # no cross-memory attach (containers often forbid it).
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
    print(f"--- {name}:{line}\n{text}", flush=True)
    result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command_text(text, kind)],
                            cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    if result.returncode != 0:
        print(result.stdout)
        sys.exit(f"{name}:{line}: the block failed with exit status {result.returncode}")
    tail = result.stdout.strip().splitlines()[-3:]
    print("\n".join("  > " + t for t in tail), flush=True)


def main():
    bare = [b for p in doc_files() for b in bare_exports(p)]
    if bare:
        sys.exit("\n".join(bare))
    todo = [(os.path.relpath(p, SOURCE), *b) for p in doc_files() for b in blocks(p)]
    if not todo:
        sys.exit("no marked blocks in README.md or docs/*.md")
    ran = skipped = 0
    with tempfile.TemporaryDirectory(prefix="fn_doc_commands_") as tmp:
        workspace(tmp)
        before = files_under(tmp)
        for name, line, kind, text in todo:
            if kind == "mpi" and not MPIEXEC:
                print(f"--- {name}:{line}: skipped (this build has no MPI)")
                skipped += 1
                continue
            if kind == "python" and not PYENV:
                print(f"--- {name}:{line}: skipped (no FN_PYENV_PYTHON with scikit-learn)")
                skipped += 1
                continue
            run(name, line, kind, text, tmp)
            ran += 1
        stray = left_outside_runs(tmp, before)
        if stray:
            sys.exit("the docs' commands left files outside runs/ that git does not ignore "
                     f"(write them under runs/, or add them to .gitignore): {', '.join(stray)}")
    print(f"doc_commands: {ran} blocks ran, {skipped} skipped, from "
          f"{len({t[0] for t in todo})} files")


if __name__ == "__main__":
    main()
