"""The example genomics step without minimap2/samtools binaries: map with mappy, sort with pysam.

Usage: python -m iolens.examples.map_sort SYNTH_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    try:
        import mappy
        import pysam
    except ImportError:
        print("iolens: error: neither minimap2+samtools nor the Python packages mappy+pysam are installed; "
              "run dev/setup as root, or `pip install mappy pysam`", file=sys.stderr)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    aligner = mappy.Aligner(str(src / "ref.fa"), preset="sr")
    if not aligner:
        print(f"iolens: error: cannot index {src / 'ref.fa'}", file=sys.stderr)
        return 2
    header = {"HD": {"VN": "1.6", "SO": "unsorted"},
              "SQ": [{"SN": name, "LN": len(aligner.seq(name))} for name in aligner.seq_names]}
    sam = out / "aln.sam"
    with pysam.AlignmentFile(str(sam), "w", header=header) as fh:
        for (name, seq, qual), (_n2, seq2, qual2) in zip(mappy.fastx_read(str(src / "reads_1.fq.gz")),
                                                         mappy.fastx_read(str(src / "reads_2.fq.gz"))):
            for mate, (s, q) in enumerate(((seq, qual), (seq2, qual2))):
                seg = pysam.AlignedSegment(fh.header)
                seg.query_name = name.rsplit("/", 1)[0]
                seg.query_sequence = s
                seg.query_qualities = pysam.qualitystring_to_array(q)
                hit = next(iter(aligner.map(s)), None)
                flag = 0x1 | (0x40 if mate == 0 else 0x80)
                if hit is None:
                    seg.flag = flag | 0x4
                else:
                    seg.flag = flag | (0x10 if hit.strand < 0 else 0)
                    seg.reference_name = hit.ctg
                    seg.reference_start = hit.r_st
                    seg.mapping_quality = hit.mapq
                    seg.cigarstring = hit.cigar_str
                    if hit.strand < 0:
                        seg.query_sequence = mappy.revcomp(s)
                        seg.query_qualities = pysam.qualitystring_to_array(q[::-1])
                fh.write(seg)
    pysam.sort("-o", str(out / "aln.sorted.bam"), str(sam))
    pysam.index(str(out / "aln.sorted.bam"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
