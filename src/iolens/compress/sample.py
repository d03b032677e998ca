"""Which bytes of a file are measured: all of it, or blocks from across the whole file.

Default (DEFAULT_SAMPLE): a file larger than 64 MiB is measured on 64 blocks of 1 MiB taken at evenly spaced
offsets from its first byte to its last, joined into one buffer; smaller files are measured whole.  `--sample SIZE`
changes the total (blocks stay 1 MiB, fewer for a small SIZE); `--full` reads the whole file.  Codecs see the
sample as one stream, so a codec whose window is larger than a block (xz -9, zstd --long) can find less to match
in a sample than in the whole file: its sampled ratio is a lower bound.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MiB = 1 << 20
DEFAULT_SAMPLE = 64 * MiB
BLOCK = MiB


@dataclass
class Sample:
    data: bytes
    file_bytes: int
    blocks: int          # 0 when the whole file was read
    block_bytes: int

    @property
    def sampled(self) -> bool:
        return self.blocks > 0


def plan(size: int, total: int | None, block: int = BLOCK) -> list[tuple[int, int]]:
    """(offset, length) of the blocks to read: the whole file when it fits in `total` (None = no limit)."""
    if total is None or size <= total:
        return [(0, size)]
    block = min(block, max(4096, total // 4))
    n = max(1, total // block)
    if n == 1:
        return [((size - block) // 2, block)]
    step = (size - block) / (n - 1)
    return [(int(round(i * step)), block) for i in range(n)]


def read_sample(path: str | os.PathLike[str], total: int | None = DEFAULT_SAMPLE) -> Sample:
    size = os.path.getsize(path)
    blocks = plan(size, total)
    with open(path, "rb") as f:
        if len(blocks) == 1 and blocks[0] == (0, size):
            return Sample(f.read(), size, 0, size)
        parts = []
        for off, n in blocks:
            f.seek(off)
            parts.append(f.read(n))
    return Sample(b"".join(parts), size, len(blocks), blocks[0][1])
