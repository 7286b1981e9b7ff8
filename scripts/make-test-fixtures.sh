#!/usr/bin/env bash
# Regenerates the binary test fixtures from tests/data/kernels.ptx:
#   tests/data/kernels_sm90.cubin  (ptxas: from PATH, CUDA_HOME, or PyPI's nvidia-cuda-nvcc-cu12 wheel)
#   tests/data/kernels.fatbin      (sm_90 machine code + the PTX; needs CUDA's `fatbinary` or `nvcc`,
#                                   e.g. on the GPU machine: bash scripts/make-test-fixtures.sh OUTDIR)
# Usage: scripts/make-test-fixtures.sh [OUTDIR]   (default tests/data)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/tests/data}
ptx=$root/tests/data/kernels.ptx
mkdir -p "$out"

find_tool() {
  local name=$1
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
  for d in "${CUDA_HOME:-/usr/local/cuda}/bin" /usr/local/cuda/bin; do
    [ -x "$d/$name" ] && { echo "$d/$name"; return; }
  done
  python3 - "$name" <<'PY' 2>/dev/null || true
import os, sys, importlib.util
spec = importlib.util.find_spec("nvidia")
for base in (spec.submodule_search_locations if spec else []):
    p = os.path.join(base, "cuda_nvcc", "bin", sys.argv[1])
    if os.path.exists(p):
        print(p)
        break
PY
}

ptxas=$(find_tool ptxas)
[ -n "$ptxas" ] || { echo "ptxas not found: pip install nvidia-cuda-nvcc-cu12" >&2; exit 1; }
"$ptxas" -arch=sm_90 "$ptx" -o "$out/kernels_sm90.cubin"
echo "wrote $out/kernels_sm90.cubin with $ptxas"

if fatbinary=$(find_tool fatbinary) && [ -n "$fatbinary" ]; then
  "$fatbinary" --create="$out/kernels.fatbin" -64 \
    "--image3=kind=elf,sm=90,file=$out/kernels_sm90.cubin" \
    "--image3=kind=ptx,sm=50,file=$ptx"
  echo "wrote $out/kernels.fatbin with $fatbinary"
elif nvcc=$(find_tool nvcc) && [ -n "$nvcc" ]; then
  "$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 "$ptx" -o "$out/kernels.fatbin"
  echo "wrote $out/kernels.fatbin with $nvcc"
else
  echo "no fatbinary or nvcc here: tests/data/kernels.fatbin not regenerated (run this on a machine with CUDA)" >&2
fi
