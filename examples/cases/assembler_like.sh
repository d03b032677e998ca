#!/usr/bin/env bash
# A stand-in for a multi-phase RNA-seq assembler (Trinity's shape): each phase is a child process, and the inputs
# are read several times. Usage: assembler_like.sh R1.fq.gz R2.fq.gz PASSES OUT_DIR
#   phase 1 (gzip):    read the inputs once and write the local working copy ("read clustering")
#   phase 2 (python3): read the inputs PASSES more times, counting k-mer prefixes (the long "second clustering")
#   phase 3 (xargs + md5sum): split the working copy and process the parts in parallel ("parallel assembly")
set -euo pipefail
r1=$1 r2=$2 passes=$3 out=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/assembler-like.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
gzip -dc "$r1" "$r2" > "$tmp/reads.fq"
python3 - "$r1" "$r2" "$passes" > "$tmp/kmers.txt" <<'PY'
import collections, gzip, sys
counts = collections.Counter()
for _ in range(int(sys.argv[3])):
    for path in sys.argv[1:3]:
        with gzip.open(path, "rt") as f:
            for i, line in enumerate(f):
                if i % 4 == 1:
                    counts[line[:8]] += 1
for k, n in counts.most_common(100):
    print(k, n)
PY
split -n l/4 "$tmp/reads.fq" "$tmp/part."
ls "$tmp"/part.* | xargs -P 2 -n 1 md5sum > "$out/contigs.txt"
cp "$tmp/kmers.txt" "$out/kmers.txt"
