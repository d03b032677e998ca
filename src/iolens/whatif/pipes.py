"""Pipe ordering for the replay: pipes move no data there, so each pipe op waits for what the other side must have
moved first (see docs/whatif.md, "pipe contents")."""

from __future__ import annotations

import numpy as np


def _pipe_needs(pr: np.ndarray, read_code: int, pipe_buf: int) -> np.ndarray:
    """For each pipe op, the bytes the other side must have moved first.

    A read needs the writes that ended before it ended, up to what the readers have read with it; a write needs
    the readers within a pipe's capacity of it, counting only reads that ended before it ended.  Only ops that
    ended earlier in the recording are counted, so the dependencies can never wait on each other in a cycle.
    """
    need = np.zeros(len(pr), dtype=np.int64)
    for pipe in np.unique(pr[:, 6]):
        sel = np.nonzero(pr[:, 6] == pipe)[0]
        end = pr[sel, 0] + pr[sel, 1]
        size = pr[sel, 3]
        is_r = pr[sel, 4] == read_code
        for mine, other in ((is_r, ~is_r), (~is_r, is_r)):
            o_idx = np.argsort(end[other], kind="stable")
            o_end = end[other][o_idx]
            o_cum = np.concatenate([[0], np.cumsum(size[other][o_idx])])
            m_idx = np.argsort(end[mine], kind="stable")
            m_cum = np.cumsum(size[mine][m_idx])
            done_other = o_cum[np.searchsorted(o_end, end[mine][m_idx], side="left")]
            want = m_cum if mine is is_r else np.maximum(m_cum - pipe_buf, 0)
            got = np.minimum(want, done_other)
            tgt = sel[np.nonzero(mine)[0][m_idx]]
            need[tgt] = got
    return need
