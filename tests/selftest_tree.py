"""selftest_tree.py — what the self-tests of the source checks
(check_layers_selftest.py, check_launches_selftest.py) share: a tree of
files written to a temporary directory and the check script run over it."""
import pathlib
import subprocess
import sys
import tempfile


def run_check(check, files):
    """The exit status and output of the check script `check` run over a
    temporary tree holding files ({path relative to the root: text})."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = pathlib.Path(root) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        r = subprocess.run([sys.executable, check, root], capture_output=True, text=True)
        return r.returncode, r.stdout


def selftest(check, clean, cases, clean_name):
    """The self-test's exit status: 0 when the clean tree passes the check
    and each case, (name, files, what it expects, found(output)), fails it
    (exit 1) with found true; else 1, saying what went wrong."""
    status, out = run_check(check, clean)
    if status != 0:
        print(f"{clean_name} failed the check:\n{out}")
        return 1
    for name, files, expected, found in cases:
        status, out = run_check(check, files)
        if status != 1 or not found(out):
            print(f"{name}: expected exit 1 with {expected}, got {status}:\n{out}")
            return 1
    print(f"ok: {clean_name} passes, {len(cases)} breaches caught")
    return 0
