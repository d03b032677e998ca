"""The replay's descriptors: closing each handle after its last use, where the trace does not see the close."""

from __future__ import annotations

import numpy as np

from iolens.whatif.rows import DUR, FLAGS, OBJ, OP, SEQ, THREAD, T


def closes_after_use(rows: np.ndarray, code: dict[str, int], handle_ops: tuple[str, ...]) -> np.ndarray:
    """The rows with each handle's descriptor closed after its last use, as the recorded step's was.

    A dup counts as an open (the replayer makes a copy of the descriptor) and each close closes one.  Captures made
    before the recorder saw a dup2 over a file's descriptor as that file's close (a shell's `echo x > f` opens f,
    dups it onto stdout, closes the first descriptor, writes through stdout, and closes f by dup2-ing the old stdout
    back) leave such a handle open after its last write; replayed as recorded, it stayed open to the end of the
    replay, and a later `rm` unlinked open files, which a FUSE mount turns into a rename to .fuse_hidden (an S3
    copy) and a local filesystem into deferred deletion.  So a handle still open after its last op (left to the
    process's exit, or unseen closes) gets its closes there, with no recorded duration; and a close followed by
    more use of the handle before its next open (the replayer then reopens it) moves to after that use."""
    hcodes = np.array([code[n] for n in handle_ops])
    sel = np.nonzero(np.isin(rows[:, OP], hcodes))[0]
    if not len(sel):
        return rows
    rows = rows.copy()
    sub = rows[sel]
    order = sel[np.lexsort((sub[:, SEQ], sub[:, T], sub[:, OBJ]))]  # per handle, in time order
    open_c, close_c, dup_c = code["OPEN"], code["CLOSE"], code["DUP"]
    added: list[list[int]] = []

    def close_after(last: int, moved: int | None, n: int = 1) -> None:
        t = int(rows[last, T] + rows[last, DUR])
        if moved is None:
            row = [0] * rows.shape[1]
            row[T], row[OP], row[SEQ] = t, close_c, 1
            row[THREAD], row[OBJ] = int(rows[last, THREAD]), int(rows[last, OBJ])
            added.extend([list(row) for _ in range(n)])
        else:
            rows[moved, T], rows[moved, THREAD], rows[moved, SEQ] = t, rows[last, THREAD], 1

    i = 0
    while i < len(order):
        j = i
        while j < len(order) and rows[order[j], OBJ] == rows[order[i], OBJ]:
            j += 1
        refs, is_open, pending, last = 0, False, None, -1
        for k in order[i:j]:
            op = rows[k, OP]
            if op == open_c:
                if pending is not None and is_open:  # used after its close: the close goes after that use
                    close_after(last, pending)
                pending = None
                refs, is_open = refs + 1, True
            elif op == close_c:
                if is_open:
                    refs -= 1
                    if refs <= 0:
                        refs, is_open, pending = 0, False, int(k)
            else:
                is_open = True  # used after its close: the replayer reopens it
                refs += op == dup_c
            last = int(k)
        if pending is not None and is_open:
            close_after(last, pending)
        elif is_open and last >= 0:
            close_after(last, None, max(1, refs))
        i = j
    return np.concatenate([rows, np.array(added, dtype=np.int64).reshape(-1, rows.shape[1])]) if added else rows


def read_only(rows: np.ndarray, handle_of: dict[tuple[int, int], int], created: set[tuple[int, int]],
              code: dict[str, int], handle_ops: tuple[str, ...]) -> list[bool]:
    """Per handle (numbered as in handle_of: (process, file) -> handle), whether its process only read through it:
    no write, stdio drain, copy into it or truncating open, and the file not created by that process.  Such a
    handle is opened read-only and without O_CREAT, as the step opened it: a creating, writable open takes the
    directory's lock and write access (a `cat` of 2,000 small files paid 1.5 us more per file opened that way)."""
    written = rows[:, OP] == code["WRITE"]
    for name in ("SWRITE", "SFLUSH", "COPY"):
        written |= rows[:, OP] == code[name]
    written |= (rows[:, OP] == code["OPEN"]) & (rows[:, FLAGS] & 1 == 1)
    on_handle = np.isin(rows[:, OP], [code[n] for n in handle_ops])
    writers = set(rows[written & on_handle, OBJ].tolist())
    out = [True] * len(handle_of)
    for key, h in handle_of.items():
        out[h] = h not in writers and key not in created
    return out
