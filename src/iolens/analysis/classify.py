"""Names for things: what kind of storage a mount is, which files are text, which are temporary.

Pure functions of strings, so every rule and renderer agrees on them.
"""

from __future__ import annotations

import os
import re
from typing import Any

from iolens import _format as F

# fstype -> storage kind.  FUSE clients show as "fuse" or "fuse.<client>"; object-store clients are
# recognised by the client name in the fstype or the mount source.
NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "beegfs", "gpfs", "ceph", "glusterfs", "9p",
    "afs", "orangefs", "pvfs2", "ocfs2", "gfs2", "efs", "panfs", "wekafs", "virtiofs", "davfs",
}
MEMORY_FS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs", "shm"}
PSEUDO_FS = {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "mqueue",
             "pstore", "bpf", "configfs", "fusectl", "binfmt_misc", "autofs", "nsfs", "overlay-pseudo"}
OBJECT_CLIENTS = ("s3fs", "mountpoint-s3", "mount-s3", "goofys", "gcsfuse", "rclone", "blobfuse", "blobfuse2",
                  "juicefs", "geesefs", "s3backer", "riofs", "objectivefs", "azurefile")
NETWORK_FUSE_CLIENTS = ("sshfs", "davfs", "curlftpfs")
_FF = {name: bit for name, (bit, _doc) in F.FILE_FLAGS.items()}


def file_kind(f: dict[str, Any]) -> str:
    """What a FILE record names, from its flags: file, dir, stream (pipe, socket, terminal) or aggregate."""
    if f["flags"] & _FF["AGGREGATE"]:
        return "aggregate"
    if f["flags"] & _FF["NOT_A_FILE"]:
        return "stream"
    if f["flags"] & _FF["DIRECTORY"]:
        return "dir"
    return "file"


def storage_kind(fstype: str, source: str = "") -> str:
    """One of local, memory, network, fuse, object-store, pseudo, unknown."""
    fs = (fstype or "").lower()
    src = (source or "").lower()
    if not fs:
        return "unknown"
    if fs.startswith("fuse") or fs == "fuseblk":
        client = fs.split(".", 1)[1] if "." in fs else ""
        if any(c in client or c in src for c in OBJECT_CLIENTS):
            return "object-store"
        if any(c in client or c in src for c in NETWORK_FUSE_CLIENTS):
            return "network"
        return "fuse"
    if fs in NETWORK_FS or fs.startswith("nfs"):
        return "network"
    if fs in MEMORY_FS:
        return "memory"
    if fs in PSEUDO_FS:
        return "pseudo"
    return "local"


def is_remote(kind: str) -> bool:
    """Storage where every request is a round trip: network and FUSE mounts, object stores."""
    return kind in ("network", "fuse", "object-store")


COMPRESSED_EXT = (".gz", ".bgz", ".bz2", ".xz", ".zst", ".zstd", ".lz4", ".bam", ".cram", ".bcf", ".zip",
                  ".sra", ".h5", ".hdf5", ".npz", ".parquet", ".2bit")
TEXT_EXT = {
    ".sam": "SAM", ".fq": "FASTQ", ".fastq": "FASTQ", ".fa": "FASTA", ".fasta": "FASTA", ".fna": "FASTA",
    ".vcf": "VCF", ".bed": "BED", ".gff": "GFF", ".gff3": "GFF", ".gtf": "GTF", ".pileup": "pileup",
    ".mpileup": "pileup", ".wig": "WIG", ".bedgraph": "bedGraph", ".paf": "PAF", ".tsv": "TSV", ".csv": "CSV",
    ".txt": "text", ".out": "text", ".psl": "PSL", ".maf": "MAF", ".sff": "text",
}
# what to write instead: (format, fix)
TEXT_FIX = {
    "SAM": "write BAM or CRAM directly (pipe the aligner into `samtools sort -o out.bam` or `samtools view -b`)",
    "FASTQ": "write it gzip/bgzip-compressed (`bgzip -@ 4`, or the tool's .gz output) or pipe it to its reader",
    "FASTA": "compress it with `bgzip` (indexable with `samtools faidx`) or pipe it to its reader",
    "VCF": "write BCF or bgzipped VCF (`bcftools view -Ob` / `-Oz`)",
    "pileup": "pipe it to its reader instead of keeping it on disk",
}


def text_format(path: str) -> str | None:
    """The uncompressed text format a path's name says it holds, or None (compressed or not text)."""
    name = os.path.basename(path).lower()
    if name.endswith(COMPRESSED_EXT):
        return None
    _stem, ext = os.path.splitext(name)
    return TEXT_EXT.get(ext)


_TEMP_NAME = re.compile(r"(^|[./_-])(tmp|temp)([./_-]|\d|$)|\.tmp\.\d+|^tmp[a-z0-9_]{4,}$", re.IGNORECASE)


def looks_temporary(path: str, created: bool, deleted: bool) -> bool:
    """A temp file: created and deleted during the run, or created with a temporary-looking name.

    Where a file was created says nothing: pipelines often write their real outputs under /tmp.
    """
    if created and deleted:
        return True
    return created and bool(_TEMP_NAME.search(os.path.basename(path)))


def tool_name(argv: list[str], exe: str = "") -> str:
    """A short name for the tool, with the subcommand for multi-command tools (`samtools sort`)."""
    base = os.path.basename(exe) if exe else (os.path.basename(argv[0]) if argv else "?")
    if base in ("samtools", "bcftools", "bedtools", "bwa", "gatk", "picard", "seqkit", "bowtie2", "hisat2",
                "sambamba", "tabix", "mosdepth", "STAR", "salmon", "kallisto") and len(argv) > 1:
        sub = argv[1]
        if not sub.startswith("-"):
            return f"{base} {sub}"
    return base
