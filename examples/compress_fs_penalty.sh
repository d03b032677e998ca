#!/usr/bin/env bash
# The published "filesystem compression" experiment (docs/compress.md, ZFS gzip-6 vs lz4 vs none) at small scale
# on the lab's btrfs targets: the on-disk ratio of a FASTQ and of a SAM, and the `samtools sort` time penalty under
# each compressor, for binned (NovaSeq) and full-resolution (older instrument) qualities.
#
# The sort uses every core (`-@ THREADS`, default nproc), as in the published run, and writes its output
# uncompressed (`-l 0`), so the filesystem does the compressing, as ZFS did.  Each run starts with cold caches
# (the compressed input is read and decompressed by the kernel while the sort runs) and ends with `sync -f` on the
# output, so every filesystem pays for compressing what the sort wrote within the timed run (the output is far
# below the dirty-page limits, and would otherwise be written back after the clock stopped).  Runs are interleaved
# across the filesystems by the compare engine.
#
# Usage (as root, with the lab up: `iolens lab up --only btrfs,btrfs-lzo,btrfs-zstd,btrfs-zlib --size 2G`):
#   examples/compress_fs_penalty.sh [WORK_DIR]
# Environment: PAIRS (read pairs, default 200000: a 173 MB SAM, a 129 MB sorted BAM; a few minutes in all on
# 2 CPUs), QUALITIES (default "binned full"), THREADS (samtools sort -@, default every CPU), RUNS (runs per
# filesystem, default 5), IOLENS_CMD (the iolens command, default iolens).
set -euo pipefail
work=${1:-$(mktemp -d -t iolens-fs-penalty.XXXXXX)}
pairs=${PAIRS:-200000}
threads=${THREADS:-$(nproc)}
runs=${RUNS:-5}
read -r -a iolens <<<"${IOLENS_CMD:-iolens}"
fs=lab:btrfs,lab:btrfs-lzo,lab:btrfs-zstd,lab:btrfs-zlib
sort_cmd='samtools sort -@ {threads} -l 0 -m 64M -o {dir}/out.bam {dir}/in.sam 2>/dev/null && sync -f {dir}/out.bam'
mkdir -p "$work"
for q in ${QUALITIES:-binned full}; do
  d=$work/$q
  [ -f "$d/reads_2.fq.gz" ] || "${iolens[@]}" data synth -o "$d" --pairs "$pairs" --ref-size 5000000 --quality "$q" \
    --force >/dev/null
  [ -s "$d/reads_1.fq" ] || gzip -dc "$d/reads_1.fq.gz" > "$d/reads_1.fq"
  if [ ! -s "$d/in.sam" ]; then
    if command -v minimap2 >/dev/null; then
      minimap2 -ax sr -t "$threads" "$d/ref.fa" "$d/reads_1.fq.gz" "$d/reads_2.fq.gz" > "$d/in.sam" 2>/dev/null
    else
      samtools import -0 "$d/reads_1.fq" -o "$d/in.sam"
    fi
  fi
  echo "== $q qualities: FASTQ on each filesystem (ratio as the filesystem reports it), codecs in memory"
  "${iolens[@]}" compress --fs "$fs" "$d/reads_1.fq" --no-store --json "$work/$q-fastq-fs.json" --force
  "${iolens[@]}" compress "$d/reads_1.fq" --codecs zlib:6,lz4:1,zstd:3 --threads 1 --sample 8M --no-store \
    --json "$work/$q-codecs.json" --force
  echo "== $q qualities: samtools sort -@ $threads on each filesystem (penalty against plain btrfs)"
  "${iolens[@]}" compress --fs "$fs" "$d/in.sam" --threads "$threads" --runs "$runs" --no-store \
    --run "$sort_cmd" --json "$work/$q-sort.json" --force
done
python3 - "$work" ${QUALITIES:-binned full} <<'PY'
import json, sys
work, qualities = sys.argv[1], sys.argv[2:]
print("\nquality  filesystem   FASTQ ratio  SAM ratio  sort median  penalty vs btrfs [95% CI]  verdict")
for q in qualities:
    fq = {f["target"]: f["on_disk"]["ratio"] for f in json.load(open(f"{work}/{q}-fastq-fs.json"))["filesystems"]}
    doc = json.load(open(f"{work}/{q}-sort.json"))
    sam = {f["target"]: f["on_disk"]["ratio"] for f in doc["filesystems"]}
    med = {r["name"]: r["median"] for r in doc["compare"]["results"]}
    cmp = {c["name"]: c for c in doc["compare"]["comparisons"]}
    for t in fq:
        n = t.removeprefix("lab:")
        c = cmp.get(n)
        pen, outcome = "baseline", ""
        if c is not None:
            pen = f"{100 * c['rel_diff']:+.1f}% [{100 * c['rel_ci_low']:+.1f}, {100 * c['rel_ci_high']:+.1f}]"
            outcome = f"{c['outcome']}, p = {c['p_value']:.3f}"
        print(f"{q:8} {n:12} {fq[t]:10.2f}x {sam[t]:9.2f}x {med[n]:10.2f} s  {pen:26} {outcome}")
print(f"results in {work}")
PY
