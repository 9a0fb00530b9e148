#!/usr/bin/env bash
# Issue 41's GPU checks in one go, for a GPU machine lent for a few minutes without internet.
#
# Prepare on the CPU machine, in the repository root (.gitignore ignores .gpu; about 3 minutes):
#   ../shared/tools/gpu-payload.sh .gpu && benches/gpu_parts.sh
# (onnxruntime-gpu, the model and this checkout's wheel, re-cut into parts that fit a device call
# beside the working tree, and the shared transcripts in .gpu/data.)
# Dry-run the GPU test here first (tests/fake_cuda.py: sessions that say CUDA, run on the CPU):
#   PYTHONPATH=tests .venv/bin/python -m pytest -p fake_cuda --noconftest -o addopts="" tests/test_gpu_real.py
# On the GPU machine, one call per part, back to back (carry .gpu/pK, run
# "mkdir -p /tmp/gpu && cp .gpu/pK/part.* /tmp/gpu/"), the last one carrying .gpu/data too and running:
#   .gpu/pN/install.sh && benches/gpu_check.sh
# Results go under $OUT (else /tmp/gpu-out): nvidia-smi, tests/test_gpu_real.py's output,
# benches/bench_gpu.py's table and JSON (fp16 and fp32), and, since the GPU machine has 16 cores,
# keyword ingest on 1-16 cores (issue 41 item 4) and the q8 model on every core (item 3). Each step
# has a time limit, together 7.5 minutes, which leaves room for install.sh in the device's 10
# minutes a call. Name steps to run only those (test_gpu_real bench_gpu keyword_cores feed), e.g.
# to split them over two calls. One more runs only when named, in a second call: feed_host, a whole
# index of 480 sessions with a null model on every core (the host's own ceiling for a GPU index,
# 14,200-16,700 windows/s on 2 cores) and with stand-in models at 1 and 2x its feed (the overlap).
# BENCH_GPU_ARGS adds arguments to bench_gpu.py ("--archive-files 1000").
set -uo pipefail
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if [ -d .gpu/data ]; then export MEMLANE_SHARED_DATA=$PWD/.gpu/data; fi
export MEMLANE_CACHE_DIR=${MEMLANE_CACHE_DIR:-/tmp/memlane-cache}
wanted=" ${*:-test_gpu_real bench_gpu keyword_cores feed} "
step() {  # step NAME SECONDS COMMAND...: run it if wanted, its output in $OUT/NAME.txt
    local name=$1 limit=$2
    shift 2
    [[ $wanted == *" $name "* ]] || return 0
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    echo "$name: exit $?"
    tail -"${TAIL:-22}" "$out/$name.txt"
}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
step test_gpu_real 120 python3 -m pytest -p no:cacheprovider --noconftest -o addopts="" -s -q tests/test_gpu_real.py
# shellcheck disable=SC2086  # BENCH_GPU_ARGS is a list of arguments
step bench_gpu 210 python3 benches/bench_gpu.py --min-windows 10000 --out "$out/gpu.json" ${BENCH_GPU_ARGS:-}
step keyword_cores 80 python3 benches/bench_keyword_cores.py --files 300 --repeats 1
cp bench-results/keyword_cores.json "$out/" 2> /dev/null
step feed 40 python3 benches/bench_feed.py --only-real --threads "$(nproc)" --real-chunks 256 --repeats 1
step feed_host 120 python3 benches/bench_feed.py --skip-real --files 480 --repeats 1 --model-shares 1,2
