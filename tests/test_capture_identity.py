"""Inode and device numbers are identities, not quantities: a filesystem may use all 64 bits of them (rclone's FUSE
mount gives files inode numbers such as 18053519015812245239), so a FILE record carrying one must decode,
while any counter at or above 2^62 is still damage."""

from __future__ import annotations

import pytest

from iolens.capture.layout import MAX_VALUE, current_layouts


def _record(**values: int) -> tuple[object, bytes]:
    lay = current_layouts()["FILE"]
    buf = bytearray(lay.size)
    for name, typ, count, off in lay.fields:
        if name in values:
            assert typ == "u64" and count == 1
            buf[off:off + 8] = values[name].to_bytes(8, "little")
    return lay, bytes(buf)


def test_full_64_bit_inode_decodes():
    lay, buf = _record(ino=18053519015812245239, dev=41, bytes_read=4096)
    rec = lay.decode(buf)  # type: ignore[attr-defined]
    assert rec["ino"] == 18053519015812245239
    assert rec["dev"] == 41 and rec["bytes_read"] == 4096


def test_counter_out_of_range_is_still_damage():
    lay, buf = _record(ino=18053519015812245239, bytes_read=MAX_VALUE)
    with pytest.raises(ValueError, match="FILE value is out of range"):
        lay.decode(buf)  # type: ignore[attr-defined]
