#!/usr/bin/env bash
# bench_side_by_side.sh — fusenet against PyTorch at one shape, in one run
# on a GPU machine: runs ./bench in fp32, tf32, tf32x3 and bf16 with AdamW,
# then with SGD momentum 0 and 0.9 (SGD's runs last: their kernel and memory
# figures are the ones shown), then scripts/bench_torch.py (eager and torch.compile,
# matmul precision 'ieee' and 'tf32', and autocast bf16), and prints one
# markdown table of the medians side by side (fusenet fp32 against torch
# 'ieee', tf32 against 'tf32', bf16 against autocast bf16; tf32x3 has no
# torch counterpart), then fusenet's kernel figures, the products' errors
# against float64 among them. The table
# goes to stdout and, when OUT is set, to $OUT/bench_side_by_side.md with
# the raw lines in $OUT/bench_raw.txt.
#
#   BENCH=build/gpu/bench scripts/bench_side_by_side.sh [--batch 1024 --in 8192 --hidden 8192 --groups 512]
#
# The shape flags go to both programs. PYTHON picks the interpreter that has
# PyTorch (default python3). A run of bench or bench_torch.py that fails is
# named on stderr, the table is printed from what the others gave, and the
# script exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=${BENCH:-build/gpu/bench}
python=${PYTHON:-python3}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
failed=()

if [ ! -x "$bench" ]; then
    echo "bench_side_by_side.sh: no bench program at $bench (build it, or set BENCH)" >&2
    exit 1
fi

for math in fp32 tf32 tf32x3 bf16; do
    echo "bench_side_by_side.sh: ./bench --math $math --optimizer adamw $*" >&2
    if ! "$bench" --math "$math" --optimizer adamw "$@" | tee -a "$raw" >&2; then
        echo "bench_side_by_side.sh: FAILED: bench --math $math --optimizer adamw" >&2
        failed+=("bench --math $math --optimizer adamw")
    fi
    for momentum in 0 0.9; do
        echo "bench_side_by_side.sh: ./bench --math $math --momentum $momentum $*" >&2
        if ! "$bench" --math "$math" --momentum "$momentum" "$@" | tee -a "$raw" >&2; then
            echo "bench_side_by_side.sh: FAILED: bench --math $math --momentum $momentum" >&2
            failed+=("bench --math $math --momentum $momentum")
        fi
    done
done
echo "bench_side_by_side.sh: scripts/bench_torch.py $*" >&2
if ! PYTHONUNBUFFERED=1 "$python" scripts/bench_torch.py "$@" | tee -a "$raw" >&2; then
    echo "bench_side_by_side.sh: FAILED: scripts/bench_torch.py" >&2
    failed+=("scripts/bench_torch.py")
fi

table=$("$python" - "$raw" <<'EOF'
import sys

fus, torch, notes = {}, {}, []
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("#"):
        notes.append(line.strip("# \n"))
    elif len(f) >= 4 and f[0] == "fusenet":
        fus[(f[1], f[2])] = (float(f[3]), float(f[7]) if len(f) >= 8 and f[6] == "ratio" else None)
    elif len(f) >= 5 and f[0] == "torch":
        torch[(f[1], f[2], f[3])] = float(f[4])

def ms(v):
    return "—" if v is None else f"{v:.3f}"

def fus_cell(math, what):
    v = fus.get((math, what))
    if v is None:
        return "—", "—"
    return ms(v[0]), "—" if v[1] is None else f"{v[1]:.3f}"

whats = [("forward", "forward"),
         ("step_dx_m0", "step with dx, momentum 0"),
         ("step_dx_m0.9", "step with dx, momentum 0.9"),
         ("step_nodx_m0", "step without dx, momentum 0"),
         ("step_nodx_m0.9", "step without dx, momentum 0.9"),
         ("step_dx_adamw", "step with dx, AdamW"),
         ("step_nodx_adamw", "step without dx, AdamW")]
out = []
out.append("| math | what | fusenet ms | fusenet / products | torch eager ms | torch.compile ms | eager / fusenet | compile / fusenet |")
out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for math, prec in (("fp32", "ieee"), ("tf32", "tf32"), ("tf32x3", None), ("bf16", "bf16")):
    for what, label in whats:
        f, ratio = fus_cell(math, what)
        e = torch.get(("eager", prec, what)) if prec else None
        c = torch.get(("compile", prec, what)) if prec else None
        fv = fus.get((math, what), (None,))[0]
        sp = lambda t: "—" if t is None or not fv else f"{t / fv:.2f}×"
        out.append(f"| {math} | {label} | {f} | {ratio} | {ms(e)} | {ms(c)} | {sp(e)} | {sp(c)} |")
out.append("")
maths = ("fp32", "tf32", "tf32x3", "bf16")
out.append("| fusenet figure | " + " | ".join(maths) + " |")
out.append("| --- |" + " ---: |" * len(maths))
rows = [("norm_forward", "fused GroupNorm+LeakyReLU+×2 forward, ms (× copy floor)"),
        ("norm_backward", "fused backward dz, db, dγ, dβ, ms (× copy floor)"),
        ("transpose_dz", "dz transposed for dW, ms (× copy floor)"),
        ("to_bf16_w", "W rounded to bf16 (plain SGD's copy refresh, a step), ms (× copy floor)"),
        ("forward_rounding_w", "bf16 only: forward rounding W itself (no owner keeps its copy), ms (× products)"),
        ("gemm_forward", "bare product, forward shape, ms"),
        ("gemm_dx", "bare product, dx shape, ms"),
        ("gemm_dw", "bare product, dW shape (dz as stored), ms"),
        ("gemm_dw_t", "bare product, dW shape (dz transposed), ms"),
        ("gemm_dw_tn", "bare product, dW shape (x and dz transposed), ms"),
        ("backward_dx", "backward pass with dx, ms (× its products)"),
        ("step_dx_unfused_m0", "step with dx, momentum 0, unfused SGD, ms (× products)"),
        ("step_dx_unfolded_m0.9", "step with dx, momentum 0.9 not folded into backward, ms (× products)"),
        ("step_dx_m0.9_bf16buf", "bf16 only: step with dx, momentum 0.9 folded, buffer in bfloat16, ms (× products)"),
        ("step_nodx_m0.9_bf16buf", "bf16 only: step without dx, momentum 0.9 folded, buffer in bfloat16, ms (× products)"),
        ("step_dx_unfolded_m0.9_bf16buf", "bf16 only: step with dx, momentum 0.9 not folded, buffer in bfloat16, ms (× products)"),
        ("relerr_forward", "relative error, forward product"),
        ("relerr_dw", "relative error, dW product"),
        ("relerr_dx", "relative error, dx product"),
        ("gemm_forward_fast16bf", "bf16 only: forward product on fp32 operands, cuBLAS FAST_16BF, ms"),
        ("gemm_dx_fast16bf", "bf16 only: dx product, FAST_16BF, ms"),
        ("gemm_dw_fast16bf", "bf16 only: dW product, FAST_16BF, ms"),
        ("relerr_forward_fast16bf", "bf16 only: relative error, forward, FAST_16BF"),
        ("relerr_dw_fast16bf", "bf16 only: relative error, dW, FAST_16BF"),
        ("relerr_dx_fast16bf", "bf16 only: relative error, dx, FAST_16BF"),
        ("copy_gbps", "device copy bandwidth, GB/s"),
        ("memory_mib", "device memory of context + block + data, MiB"),
        ("memory_growth_mib", "device memory grown while stepping, MiB")]
for key, label in rows:
    cells = []
    for math in maths:
        v = fus.get((math, key))
        if v is None:
            cells.append("—")
        elif key.startswith("relerr"):
            cells.append(f"{v[0]:.2g}")
        elif key in ("copy_gbps", "memory_mib", "memory_growth_mib"):
            cells.append(f"{v[0]:.0f}")
        else:
            cells.append(f"{v[0]:.4f}" + (f" ({v[1]:.2f}×)" if v[1] is not None else ""))
    out.append(f"| {label} | " + " | ".join(cells) + " |")
e = torch.get(("eager", "-", "norm_forward"))
eb = torch.get(("eager", "-", "norm_forward_backward"))
out.append("")
out.append(f"PyTorch eager, GroupNorm+LeakyReLU+×2 alone: forward {ms(e)} ms, forward+backward {ms(eb)} ms.")
for prefix in ("torch ", "fusenet bench"):
    first = next((n for n in notes if n.startswith(prefix)), None)
    if first:
        out.append(f"`{first}`  ")
print("\n".join(out))
EOF
)
echo "$table"
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    echo "$table" >"$OUT/bench_side_by_side.md"
    cp "$raw" "$OUT/bench_raw.txt"
fi
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'bench_side_by_side.sh: %d run(s) failed:\n' "${#failed[@]}" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
