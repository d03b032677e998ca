#!/usr/bin/env bash
# Where should minimap2 write? A small `iolens compare` of its output going to /dev/null, to the
# directory its inputs are in (same disk), and to tmpfs, on the synthetic genomics step.
#
# Usage: examples/compare/output_placement.sh SYNTH_DIR [REPORT_DIR] [RUNS]
#   SYNTH_DIR   made by `iolens data synth -o SYNTH_DIR` (ref.fa, reads_1.fq.gz, reads_2.fq.gz)
#   REPORT_DIR  where output-placement.html and .json are written (default: SYNTH_DIR); never overwritten
#   RUNS        runs per placement (default 10)
# Environment: IOLENS_CMD (default: iolens), TMPFS (default: /dev/shm).
set -euo pipefail
usage="usage: $0 SYNTH_DIR [REPORT_DIR] [RUNS]"
synth=${1:?$usage}
report=${2:-$synth}
runs=${3:-10}
tmpfs=${TMPFS:-/dev/shm}
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"

for f in ref.fa reads_1.fq.gz reads_2.fq.gz; do
  [ -f "$synth/$f" ] || { echo "$0: $synth/$f is missing; make it with: iolens data synth -o $synth" >&2; exit 2; }
done
command -v minimap2 >/dev/null || { echo "$0: minimap2 is not installed (Debian package minimap2)" >&2; exit 2; }
mkdir -p "$report"

"${iolens[@]}" compare 'minimap2 -ax sr -t 1 {ref} {r1} {r2} -o {out:aln.sam}' \
  --input "ref=$synth/ref.fa" --input "r1=$synth/reads_1.fq.gz" --input "r2=$synth/reads_2.fq.gz" \
  --place out=/dev/null \
  --config /dev/null:out=/dev/null --config "same-dir:out=$synth" --config "tmpfs:out=$tmpfs" \
  --runs "$runs" --warmup 1 \
  --html "$report/output-placement.html" --json "$report/output-placement.json"
