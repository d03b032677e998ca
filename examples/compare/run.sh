#!/usr/bin/env bash
# The end-to-end compare example: synthetic genomics data, then minimap2's output placement
# (/dev/null, same directory, tmpfs) and `samtools sort -T` on two locations, each with box plots.
#
# Usage: examples/compare/run.sh OUTDIR [RUNS]
#   OUTDIR must not exist yet; it receives synth/, output-placement.{html,json}, sort-tmp.{html,json}
# Environment: IOLENS_CMD (default: iolens), REF_SIZE (default 500000), PAIRS (default 20000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 OUTDIR [RUNS]}
runs=${2:-10}
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"
[ -e "$out" ] && { echo "$0: $out already exists; give a new directory" >&2; exit 2; }
mkdir -p "$out"

"${iolens[@]}" data synth -o "$out/synth" --ref-size "${REF_SIZE:-500000}" --pairs "${PAIRS:-20000}"
"$here/output_placement.sh" "$out/synth" "$out" "$runs"
"$here/sort_tmp.sh" "$out/synth" "$out" "$runs"
echo "box plots: $out/output-placement.html $out/sort-tmp.html"
