#!/usr/bin/env bash
# A small genomics step: map paired reads to the reference, then sort the alignments.
# Usage: examples/genomics-step.sh SYNTH_DIR OUT_DIR   (SYNTH_DIR from `iolens data synth`)
# Uses minimap2 + samtools when installed, else the same step in Python (mappy + pysam).
set -euo pipefail
in=$1
out=$2
threads=${THREADS:-2}
mkdir -p "$out"
if command -v minimap2 >/dev/null && command -v samtools >/dev/null; then
  minimap2 -ax sr -t "$threads" "$in/ref.fa" "$in/reads_1.fq.gz" "$in/reads_2.fq.gz" > "$out/aln.sam" 2>"$out/minimap2.log"
  samtools sort -@ "$threads" -m 32M -o "$out/aln.sorted.bam" "$out/aln.sam"
  samtools index "$out/aln.sorted.bam"
else
  python3 -m iolens.examples.map_sort "$in" "$out"
fi
