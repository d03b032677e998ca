"""Write small.iolens, the fixed crafted capture behind the report's golden files.

    python tests/data/report/make_fixture.py        # rewrites small.iolens beside this script

A short alignment step on a two-disk machine: minimap2 writes uncompressed SAM to /data, samtools
sort reads it and spills temp files next to its input and output (no -T), then samtools index and
flagstat read the BAM again.  It fires several advice rules, so the golden files cover them.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for helpers

from helpers.capture import fil, proc, write_capture  # noqa: E402

MiB = 1 << 20


def processes():
    return [
        proc(1000, ["sh", "-c", "minimap2 -a ref.fa r1.fq.gz r2.fq.gz > aln.sam && samtools sort ..."],
             end=120.0, wait=119.0, files=[fil("/data/run", stats=3, meta_time=0.001, opens=0)]),
        proc(1001, ["minimap2", "-a", "-t", "8", "ref.fa", "r1.fq.gz", "r2.fq.gz"], ppid=1000, start=0.5, end=70.0,
             cpu=60.0, files=[
                 fil("/data/run/ref.fa", reads=50, read_size=MiB, read_time=0.4),
                 fil("/data/run/r1.fq.gz", reads=40_000, read_size=8192, read_time=1.2),
                 fil("/data/run/r2.fq.gz", reads=40_000, read_size=8192, read_time=1.2),
                 fil("/data/run/weird name [x].fq", reads=10, read_size=100, read_time=0.001),
                 fil("/data/run/aln.sam", writes=700_000, write_size=400, write_time=6.0, created=True),
             ]),
        proc(1002, ["samtools", "sort", "-@", "4", "-o", "aln.bam", "aln.sam"], ppid=1000, start=70.0, end=105.0,
             cpu=20.0, files=[
                 fil("/data/run/aln.sam", reads=4000, read_size=70_000, read_time=3.0),
                 *[fil(f"/data/run/aln.bam.tmp.{i:04d}.bam", writes=32, write_size=MiB, write_time=0.6, reads=32,
                       read_size=MiB, read_time=0.3, created=True, deleted=True, first=72.0 + i, last=100.0)
                   for i in range(4)],
                 fil("/data/run/aln.bam", writes=100, write_size=MiB, write_time=1.5, syncs=1, sync_time=0.2,
                     created=True, first=95.0, last=105.0),
             ]),
        proc(1003, ["samtools", "index", "aln.bam"], ppid=1000, start=105.0, end=112.0, cpu=4.0, files=[
            fil("/data/run/aln.bam", reads=1600, read_size=65536, read_time=1.0, size=100 * MiB),
            fil("/data/run/aln.bam.bai", writes=1, write_size=9000, write_time=0.01, created=True)]),
        proc(1004, ["samtools", "flagstat", "aln.bam"], ppid=1000, start=112.0, end=120.0, cpu=6.0, files=[
            fil("/data/run/aln.bam", reads=1600, read_size=65536, read_time=1.0, size=100 * MiB),
            fil("pipe:[4242]", writes=20, write_size=60, pipe_time=0.001)]),
    ]


def main() -> None:
    out = write_capture(HERE / "small.iolens", processes(), {"command": ["sh", "-c", "align.sh"], "cwd": "/data/run"})
    print(f"wrote {out.name} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
