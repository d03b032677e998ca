"""What a file holds, from its first bytes: genomics text formats, and the containers that are already compressed.

Magic numbers: gzip 1f 8b (BGZF when the FEXTRA field carries the `BC` subfield; BAM is BGZF whose payload starts
`BAM\\1`), zstd 28 b5 2f fd, xz fd 37 7a 58 5a 00, bzip2 `BZh`, lz4 frame 04 22 4d 18, CRAM `CRAM`.  Text:
FASTQ (`@` header, `+` third line), FASTA (`>`), VCF (`##fileformat=VCF`), SAM (`@HD`/`@SQ` or 11+ tab-separated
fields), BED (3..12 tab-separated fields, the 2nd and 3rd integers, start <= end).  A compressed file's first
block is inflated to name what it holds (FASTQ in gzip, ...).

INDEX says, per genomics text format, how its BGZF-compressed form is indexed for random access.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass
from typing import Any

COMPRESSED = ("gzip", "bgzf", "bam", "zstd", "xz", "bzip2", "lz4", "cram")
# format -> the command that indexes its BGZF form (htslib reads plain, gzip and BGZF; only BGZF can be indexed)
INDEX: dict[str, str] = {
    "vcf": "tabix -p vcf",
    "bed": "tabix -p bed",
    "sam": "samtools view -b (BAM is BGZF), then samtools index",
    "fasta": "samtools faidx",
    "fastq": "samtools fqidx",
}
ALIGNMENTS = ("sam", "bam")  # where CRAM (reference-based) is the smaller indexable alternative
HTSLIB_READS = ("gzip", "bgzf")  # compressed formats htslib tools (samtools, bcftools, tabix) read


@dataclass
class Content:
    format: str                  # fastq, fasta, sam, vcf, bed, bam, cram, gzip, bgzf, zstd, xz, bzip2, lz4, text,
    #                              binary
    compressed: bool
    inner: str | None = None     # what a compressed container holds, when its first block says
    damaged: str | None = None   # a container whose first block does not decode

    def describe(self) -> str:
        upper = ("fastq", "fasta", "sam", "vcf", "bed", "bam", "cram")
        s = self.format.upper() if self.format in upper else self.format
        if self.inner:
            s = f"{self.inner.upper()} in {self.format}"
        return s + (f" (damaged: {self.damaged})" if self.damaged else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def text_format(head: bytes) -> str:
    if not head:
        return "empty"
    sample = head[:65536]
    if b"\x00" in sample:
        return "binary"
    lines = sample.split(b"\n")
    if sample.startswith(b"##fileformat=VCF"):
        return "vcf"
    if sample.startswith(b"@") and len(lines) > 3 and lines[2].startswith(b"+"):
        return "fastq"
    if sample.startswith(b">"):
        return "fasta"
    if sample[:3] in (b"@HD", b"@SQ", b"@RG", b"@PG", b"@CO"):
        return "sam"
    body = [ln for ln in lines[:-1][:20] if ln]
    if len(lines) > 1 and all(len(ln.split(b"\t")) >= 11 for ln in body):
        return "sam"
    if body and all(_bed_line(ln) for ln in body):
        return "bed"
    return "text"


def _bed_line(line: bytes) -> bool:
    """chrom, start, end (start <= end) and up to nine more tab-separated fields; or a track/browser/# line."""
    if line.startswith((b"track", b"browser", b"#")):
        return True
    f = line.split(b"\t")
    return 3 <= len(f) <= 12 and f[1].isdigit() and f[2].isdigit() and int(f[1]) <= int(f[2])


def _inflate_head(head: bytes) -> bytes:
    d = zlib.decompressobj(31)
    return d.decompress(head, 65536)


def detect(head: bytes) -> Content:
    """The content of a file whose first bytes (64 KiB or more) are `head`."""
    if head[:2] == b"\x1f\x8b":
        fmt = "bgzf" if len(head) >= 18 and head[3] & 4 and head[12:14] == b"BC" else "gzip"
        try:
            inner = _inflate_head(head)
        except zlib.error as err:
            return Content(fmt, True, damaged=str(err))
        if fmt == "bgzf" and inner.startswith(b"BAM\x01"):
            return Content("bam", True)
        return Content(fmt, True, inner=_inner(text_format(inner)))
    if head[:4] == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard
            inner = zstandard.ZstdDecompressor().decompressobj().decompress(head)[:65536]
            return Content("zstd", True, inner=_inner(text_format(inner)))
        except Exception as err:  # noqa: BLE001 - any decoder complaint means the head is damaged or cut short
            return Content("zstd", True, damaged=str(err) or type(err).__name__) if len(head) < 4096 else \
                Content("zstd", True)
    if head[:4] == b"CRAM":
        return Content("cram", True)
    if head[:6] == b"\xfd7zXZ\x00":
        return Content("xz", True)
    if head[:3] == b"BZh":
        return Content("bzip2", True)
    if head[:4] == b"\x04\x22\x4d\x18":
        return Content("lz4", True)
    return Content(text_format(head), False)


def _inner(fmt: str) -> str | None:
    return fmt if fmt in ("fastq", "fasta", "sam", "vcf", "bed") else None
