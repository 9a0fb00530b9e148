#!/usr/bin/env bash
# Re-cut the parts ../shared/tools/gpu-payload.sh wrote under .gpu so that one part and the
# working tree that travels with every device call fit its 64 MiB: the payload script cuts 60 MiB
# parts, and this repository's tracked files are ~4.2 MiB. Also copies the shared transcripts to
# .gpu/data for the GPU test (../shared does not travel). Run in the repository root:
#   ../shared/tools/gpu-payload.sh .gpu && benches/gpu_parts.sh [MiB, default 56]
# The reassembled payload is the same bytes (install.sh checks its sha256).
set -euo pipefail
size=${1:-56}
cd .gpu
install=$(ls p*/install.sh)
cat $(printf "%s\n" p*/part.* | sort -t/ -k2) > payload.tar
mv "$install" install.sh
rm -rf p[0-9]*
split -b "${size}M" -d payload.tar part.
rm payload.tar
n=0
for part in part.*; do
    mkdir "p$n"
    mv "$part" "p$n/"
    n=$((n + 1))
done
mv install.sh "p$((n - 1))/"
cd ..
rm -rf .gpu/data && mkdir -p .gpu/data && cp -r ../shared/data/transcripts .gpu/data/
tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
echo "$n parts of at most $size MiB under .gpu (p0..p$((n - 1)); the last holds install.sh), .gpu/data;"
echo "the working tree that travels with each: $((tree / 1048576)) MiB"
