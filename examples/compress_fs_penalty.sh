#!/usr/bin/env bash
# The published "filesystem compression" experiment (docs/compress.md, ZFS gzip-6 vs lz4 vs none) at small scale
# on the lab's btrfs targets: the on-disk ratio of a FASTQ and the `samtools sort` time penalty under each
# compressor, for binned (NovaSeq) and full-resolution (older instrument) qualities.
#
# Usage (as root, with the lab up: `iolens lab up --only btrfs,btrfs-lzo,btrfs-zstd,btrfs-zlib`):
#   examples/compress_fs_penalty.sh [WORK_DIR]
# Environment: PAIRS (default 200000 read pairs), THREADS (samtools sort -@, default: every CPU, where the
# published penalty appears), RUNS (runs per filesystem, default 5).
set -euo pipefail
work=${1:-$(mktemp -d -t iolens-fs-penalty.XXXXXX)}
pairs=${PAIRS:-200000}
threads=${THREADS:-$(nproc)}
runs=${RUNS:-5}
fs=lab:btrfs,lab:btrfs-lzo,lab:btrfs-zstd,lab:btrfs-zlib
mkdir -p "$work"
for q in binned full; do
  d=$work/$q
  iolens data synth -o "$d" --pairs "$pairs" --ref-size 5000000 --quality "$q" --force >/dev/null
  gzip -dc "$d/reads_1.fq.gz" > "$d/reads_1.fq"
  if [ ! -s "$d/in.sam" ]; then
    if command -v minimap2 >/dev/null; then
      minimap2 -ax sr -t "$threads" "$d/ref.fa" "$d/reads_1.fq.gz" "$d/reads_2.fq.gz" > "$d/in.sam" 2>/dev/null
    else
      samtools import -0 "$d/reads_1.fq" -o "$d/in.sam"
    fi
  fi
  echo "== $q qualities: FASTQ on each filesystem (ratio as the filesystem reports it), codecs in memory"
  iolens compress --fs "$fs" "$d/reads_1.fq" --no-store --json "$work/$q-fastq-fs.json" --force
  iolens compress "$d/reads_1.fq" --codecs zlib:6,lz4:1,zstd:3 --threads 1 --no-store --json "$work/$q-codecs.json" \
    --force
  echo "== $q qualities: samtools sort -@ $threads on each filesystem (penalty against plain btrfs)"
  iolens compress --fs "$fs" "$d/in.sam" --threads "$threads" --runs "$runs" --no-store \
    --run 'samtools sort -@ {threads} -m 64M -o {dir}/out.bam {dir}/in.sam' --json "$work/$q-sort.json" --force
done
echo "results in $work"
