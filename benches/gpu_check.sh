#!/usr/bin/env bash
# Issue 41's GPU checks in one go, for a GPU machine lent for a few minutes without internet.
#
# Prepare on the CPU machine, in the repository root (.gitignore ignores .gpu):
#   ../shared/tools/gpu-payload.sh .gpu        # onnxruntime-gpu, the model, this checkout's wheel, in parts
#   mkdir -p .gpu/data && cp -r ../shared/data/transcripts .gpu/data/
# On the GPU machine, one call per part, back to back (carry .gpu/pK; cp .gpu/pK/part.* /tmp/gpu/),
# the last one carrying .gpu/data too and running:
#   .gpu/pN/install.sh && benches/gpu_check.sh
# Results go under $OUT (else /tmp/gpu-out): nvidia-smi, tests/test_gpu_real.py's output, and
# benches/bench_gpu.py's table and JSON (fp16 and fp32). About five minutes on an H200;
# BENCH_GPU_ARGS adds arguments to bench_gpu.py (e.g. "--archive-files 1000").
set -uo pipefail
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if [ -d .gpu/data ]; then export MEMLANE_SHARED_DATA=$PWD/.gpu/data; fi
export MEMLANE_CACHE_DIR=${MEMLANE_CACHE_DIR:-/tmp/memlane-cache}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
timeout 240 python3 -m pytest -p no:cacheprovider --noconftest -o addopts="" -s -q tests/test_gpu_real.py \
    > "$out/test_gpu_real.txt" 2>&1
echo "tests/test_gpu_real.py: exit $?"
# shellcheck disable=SC2086  # BENCH_GPU_ARGS is a list of arguments
timeout 300 python3 benches/bench_gpu.py --out "$out/gpu.json" ${BENCH_GPU_ARGS:-} > "$out/bench_gpu.txt" 2>&1
echo "benches/bench_gpu.py: exit $?"
grep -E "passed|failed|skipped|min cosine" "$out/test_gpu_real.txt" | tail -8
tail -25 "$out/bench_gpu.txt"
