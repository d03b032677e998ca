#!/usr/bin/env bash
# A small multi-step genomics pipeline for case 5, run in WORK: stage the inputs in (then drop them from the page
# cache, so later steps read from the device), count the reads of both mates with awk (small sequential reads, as a
# QC step makes), look up random reference regions (samtools faidx: small random reads), map (minimap2), sort
# (samtools sort, temp files in WORK, then fsync'd), index. Usage: pipeline_like.sh SRC_DIR WORK_DIR REGIONS
# [stage|steps] (stage: only stage the inputs in; steps: only the steps, on inputs staged before; default both)
set -euo pipefail
src=$1 w=$2 regions=$3 part=${4:-all}
if [ "$part" != steps ]; then
  cp "$src/ref.fa" "$src/ref.fa.fai" "$src/reads_1.fq" "$src/reads_2.fq" "$src/regions.txt" "$w/"
  sync -f "$w/ref.fa"
  for f in ref.fa reads_1.fq reads_2.fq; do dd if="$w/$f" iflag=nocache count=0 status=none; done
fi
[ "$part" != stage ] || exit 0
for m in 1 2; do awk 'NR % 4 == 2 { n++; b += length($0) } END { print n, b }' "$w/reads_$m.fq"; done > "$w/counts.txt"
head -n "$regions" "$w/regions.txt" | xargs samtools faidx "$w/ref.fa" > "$w/regions.fa"
minimap2 -ax sr -t 2 "$w/ref.fa" "$w/reads_1.fq" 2>/dev/null | samtools sort -@ 2 -m 2M -T "$w/sort" -o "$w/aln.bam" 2>/dev/null
samtools index "$w/aln.bam"
sync -f "$w/aln.bam"
