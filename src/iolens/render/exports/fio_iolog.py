"""fio iolog v3: a traced step's data operations for `fio --read_iolog`, with the layout list fio needs beside it."""

from __future__ import annotations

from iolens.render.exports import Exported, Format


def _replay(s: Exported) -> dict[str, bytes]:
    from iolens.whatif.fio import iolog, layout_list

    return {"": iolog(s.plan), ".layout": layout_list(s.plan)}


FORMAT = Format("fio-iolog", "--fio-iolog", ".iolog", "Also write the data operations as a fio iolog v3 (and "
                "PATH.layout, the files it needs)", {"replay": _replay}, companions=(".layout",))
