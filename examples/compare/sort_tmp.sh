#!/usr/bin/env bash
# Where should `samtools sort -T` put its temporary files? A small `iolens compare` of the sort's
# temp files in the input's own directory (same disk) and on tmpfs. The SAM to sort is made first
# with minimap2 from the synthetic data, in a temporary directory that is removed afterwards.
#
# Usage: examples/compare/sort_tmp.sh SYNTH_DIR [REPORT_DIR] [RUNS]
#   REPORT_DIR  where sort-tmp.html and .json are written (default: SYNTH_DIR); never overwritten
# Environment: IOLENS_CMD (default: iolens), TMPFS (default: /dev/shm).
set -euo pipefail
usage="usage: $0 SYNTH_DIR [REPORT_DIR] [RUNS]"
synth=${1:?$usage}
report=${2:-$synth}
runs=${3:-10}
tmpfs=${TMPFS:-/dev/shm}
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"

for tool in minimap2 samtools; do
  command -v $tool >/dev/null || { echo "$0: $tool is not installed (Debian package $tool)" >&2; exit 2; }
done
mkdir -p "$report"
work=$(mktemp -d "$synth/sort-input.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
minimap2 -ax sr -t 1 "$synth/ref.fa" "$synth/reads_1.fq.gz" "$synth/reads_2.fq.gz" -o "$work/aln.sam" 2>/dev/null

# -m 1M: small sort buffers, so the sort spills many temp BAMs, as a large sort does
"${iolens[@]}" compare 'samtools sort -m 1M -T {tmp:part} -O bam -o /dev/null {sam}' \
  --input "sam=$work/aln.sam" --place "tmp=$work" \
  --config "same-dir:tmp=$work" --config "tmpfs:tmp=$tmpfs" \
  --runs "$runs" --warmup 1 \
  --html "$report/sort-tmp.html" --json "$report/sort-tmp.json"
