#!/usr/bin/env bash
# scripts_smoke.sh — every script in scripts/ runs in CI at a tiny size, so
# none breaks unseen (ctest label "scripts"; one test a case):
#
#   tests/scripts_smoke.sh <case>        (FN_SOURCE_DIR, FN_BUILD_DIR, FN_PYTHON
#                                         and, for python cases, FN_PYENV_PYTHON)
#
# Cases that run a script on the CPU at a tiny size and check its output:
#   bench_cpu        bench_cpu.sh (with bench_cpu_torch.py, synthetic_set.sh,
#                    make_synthetic.c): 512 rows, 3 epochs, 1 thread; a
#                    table row with numbers for train and PyTorch
#   bench_small      bench_small.sh's smoke mode (DEVICE=cpu, TORCH=0)
#   bench_scaling    bench_scaling.sh's smoke mode (DEVICE=cpu, GPUS=2, under
#                    mpirun; its DDP column may fail without GPUs, as it says)
#   bench_python_fit bench_python_fit.sh, one repeat (python)
#   compare_sklearn  compare_sklearn_torch.py at 1 epoch (python)
# Scripts that need a GPU, a second source tree or a clang fuzzing build
# (gpu_only): a syntax check (bash -n, or Python's compile), and for the
# Python ones --help (imports and arguments); gemm_candidates.cu compiles
# with nvcc -fsyntax-only when nvcc is there.
# listed: every file in scripts/ is a case here or named in covered_elsewhere
# (the scripts other tests run, and the test command's own), so a script
# added without a test fails.
set -euo pipefail
src=${FN_SOURCE_DIR:?}
build=${FN_BUILD_DIR:-}
py=${FN_PYTHON:-/usr/bin/python3}
case_=${1:?usage: scripts_smoke.sh <case>}
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ left in scripts/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"

fail() { echo "scripts_smoke.sh $case_: $*" >&2; exit 1; }

# Run by other tests (build_wheel.sh: python_wheel) or by scripts/test.sh
# itself (CI), not here.
covered_elsewhere="check_install.sh check_launches.py check_layers.py check_public_api.py install_deps.sh
    plot_metrics.py python-requirements.txt python_env.sh test.sh test_cpu_only.sh
    to_hdf5.py verify_export.py weights_to_torch.py cmake build_wheel.sh"
# Run through another script's case.
covered_through="bench_cpu_torch.py synthetic_set.sh make_synthetic.c run_example.sh"
run_cases="bench_cpu.sh bench_small.sh bench_scaling.sh bench_python_fit.sh
    compare_sklearn_torch.py"
gpu_shell="bench_compare.sh bench_side_by_side.sh bench_train.sh train_compare.sh
    dist_gpu_check.sh gpu_check.sh fuzz.sh"
gpu_python="bench_ddp.py bench_fused_block_torch.py bench_small_torch.py bench_torch.py"

# A markdown table's first data row (the line after "| ---") as words.
first_row() { awk '/^\| -+:?/ { getline; print; exit }' "$1"; }
number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$(awk -v v="$1" 'BEGIN{print (v > 0)}')" = 1 ]; }

case $case_ in
bench_cpu)
    BUILD=$build ROWS=512 EPOCHS=3 THREADS=1 WORK=$work PYTHON=$py \
        scripts/bench_cpu.sh >"$work/out.md" 2>"$work/err" ||
        { rc=$?; cat "$work/err"; fail "exit $rc"; }
    cat "$work/out.md"
    IFS='|' read -r _ threads ours theirs ratio _ <<<"$(first_row "$work/out.md")"
    [ "$(echo $threads)" = 1 ] || fail "no row for 1 thread"
    number $ours || fail "train's figure is '$ours'"
    number $theirs || fail "PyTorch's figure is '$theirs'"
    number $ratio || fail "the ratio is '$ratio'" ;;
bench_small)
    BUILD=$build DEVICE=cpu TORCH=0 SHAPES=S ROWS=256 EPOCHS=3 WORK=$work PYTHON=$py \
        scripts/bench_small.sh >"$work/out.md" 2>"$work/err" ||
        { rc=$?; cat "$work/err"; fail "exit $rc"; }
    cat "$work/out.md"
    IFS="|" read -r _ shape _ _ graphs _ <<<"$(first_row "$work/out.md")"
    [ "$(echo $shape)" = S ] || fail "no row for shape S"
    number $graphs || fail "the graphs figure is '$graphs'" ;;
bench_scaling)
    BUILD=$build WIDTH=32 NGROUPS=4 PER_GPU=16 DEVICE=cpu GPUS=2 MATHS=fp32 STEPS=2 EPOCHS=2 \
        WORK=$work PYTHON=$py scripts/bench_scaling.sh 2 >"$work/out.md" 2>"$work/err" ||
        { rc=$?; cat "$work/err"; fail "exit $rc"; }
    cat "$work/out.md"
    IFS='|' read -r _ math gpus one np1 many _ _ exposed sharded _ <<<"$(first_row "$work/out.md")"
    [ "$(echo $math) $(echo $gpus)" = "fp32 2" ] || fail "no row for fp32 on 2"
    for v in $one $np1 $many $sharded; do number "$v" || fail "a fusenet figure is '$v'"; done
    [[ $(echo $exposed) =~ ^-?[0-9]+\.[0-9]+$ ]] || fail "exposed time '$exposed'" ;;
bench_python_fit)
    PYTHON=${FN_PYENV_PYTHON:?} scripts/bench_python_fit.sh "$build" 1 >"$work/out" 2>&1 ||
        { rc=$?; cat "$work/out"; fail "exit $rc"; }
    cat "$work/out"
    grep -q . "$work/out" || fail "printed nothing" ;;
compare_sklearn)
    FUSENET_LIBRARY=$build/libfusenet.so PYTHONPATH=python timeout 120 "${FN_PYENV_PYTHON:?}" \
        scripts/compare_sklearn_torch.py 1 >"$work/out" 2>&1 ||
        { rc=$?; cat "$work/out"; fail "exit $rc"; }
    cat "$work/out"
    grep -q '^| digits' "$work/out" || fail "no row for digits" ;;
gpu_only)
    for s in $gpu_shell; do bash -n "scripts/$s" || fail "$s: syntax"; done
    # Each script's --help in one interpreter (PyTorch imported once).
    (cd scripts && FUSENET_LIBRARY=$build/libfusenet.so PYTHONPATH=../python "$py" - $gpu_python \
        >/dev/null <<'PY') || fail "a GPU script's --help failed"
import runpy, sys
for script in sys.argv[1:]:
    sys.argv = [script, "--help"]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            sys.exit(f"{script} --help: exit {e.code}")
    else:
        sys.exit(f"{script} --help did not exit")
PY
    if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
        PATH=/usr/local/cuda/bin:$PATH nvcc -arch=sm_90 -c -o "$work/gemm.o" \
            scripts/gemm_candidates.cu || fail "gemm_candidates.cu does not compile"
    else
        echo "no nvcc: gemm_candidates.cu not compiled"
    fi
    echo "syntax and --help: $gpu_shell $gpu_python" ;;
listed)
    known=" $(echo $covered_elsewhere $covered_through $run_cases $gpu_shell $gpu_python \
        gemm_candidates.cu) "
    if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        files=$(git -C "$src" ls-files scripts | cut -d/ -f2 | sort -u)
    else
        files=$(ls scripts | grep -v '^__pycache__$')
    fi
    for n in $files; do
        [[ $known == *" $n "* ]] || fail "scripts/$n has no case in tests/scripts_smoke.sh"
    done
    for n in $known; do [ -e "scripts/$n" ] || fail "scripts/$n is listed but gone"; done
    echo "every script in scripts/ is run, checked or covered by a named test" ;;
*) fail "no such case" ;;
esac
