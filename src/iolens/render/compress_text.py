"""Terminal tables of `iolens compress`: per input, codecs by ratio; storage-effective times; recommendations."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from iolens.units import human_bytes

MB = 1e6


def _mbs(v: float | None) -> str:
    return "-" if v is None else (f"{v / MB:,.0f}" if v >= 10 * MB else f"{v / MB:.1f}")


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def recommendation_line(r: dict[str, Any]) -> str:
    """The numbers and the trade-off of one recommendation, in one line (text and HTML)."""
    if r["kind"] == "indexable":
        if r["choice"] is None:
            line = "BGZF not measured: add --codecs bgzf (or bgzip) to see what random access costs"
        elif r["why"]:
            line = f"{r['why']}; index it with {r['index_with']}"
        else:
            line = (f"{r['ratio']:.2f}x, writes {_mbs(r['compress_Bps'])} MB/s; random access with "
                    f"{r['index_with']}")
            alt = r["alternative"]
            if alt and r["ratio"] and alt["ratio"] > r["ratio"]:
                smaller = 100 * (1 - r["ratio"] / alt["ratio"])
                line += (f"; {alt['choice']} is {smaller:.0f}% smaller but "
                         + ("cannot be indexed" if alt["htslib_reads"] else
                            f"cannot be indexed, nor read by samtools/bcftools/tabix ({alt['format']})"))
        if r["cram"]:
            line += "; for alignments CRAM (samtools view -C -T ref.fa) is smaller and indexable"
        return line
    line = r["why"] or ""
    if r["htslib_reads"] is False:
        line += f"; samtools/bcftools/tabix cannot read {r['format'] or 'it'}"
    return line


def _header(doc: dict[str, Any], con: Console) -> None:
    h = doc["host"]
    con.print(f"[bold]iolens compress[/] on {h.get('cpu_model') or '?'} ({h.get('cpus')} CPUs), "
              f"iolens {h.get('iolens_version')}, Python {h.get('python')} built with {h.get('build')}")
    libs = ", ".join(f"{k}: {v}" for k, v in doc["libraries"].items() if v)
    con.print(f"  libraries: {libs}", soft_wrap=True)
    for s in doc["skipped_codecs"]:
        con.print(f"  [yellow]skipped {s['codec']}: {s['why']}[/]")
    st = doc["settings"]
    con.print(f"  figures: best of passes repeated for >= {st['min_time_s']} s each and until stable, at most "
              f"{st['max_time_s']:g} s (spread = median vs best, '-' under 3 passes); throughput is of uncompressed "
              "bytes; MB = 10^6 bytes")
    if st["mode"] == "quick":
        con.print(f"  quick: {st['pairs']} codec/level pairs at one thread on a sample; --full for every codec, "
                  "1 and all CPUs and the whole file; --list shows the codecs")
    notes = sorted({r["peak_note"] for i in doc["inputs"] for r in i["rows"] if r["peak_note"]})
    for n in notes:
        con.print(f"  peak mem {n}")


def _input_table(inp: dict[str, Any]) -> Table:
    what = (f"{human_bytes(inp['measured_bytes'])} sampled in {inp['sample_blocks']} blocks of "
            f"{human_bytes(inp['sample_block_bytes'])} from {human_bytes(inp['file_bytes'])}"
            if inp["sampled"] else f"{human_bytes(inp['file_bytes'])}, whole")
    t = Table(title=f"{inp['path']}: {inp['content_text']}, {what}", title_justify="left", box=None,
              header_style="bold")
    for col in ("codec:level", "thr", "ratio", "comp MB/s", "±%", "decomp MB/s", "±%", "CPU s/GB c", "CPU s/GB d",
                "peak mem c", "peak mem d", "ok"):
        t.add_column(col, justify="left" if col == "codec:level" else "right")
    rows = sorted(inp["rows"], key=lambda r: (-(r["ratio"] or 0), r["codec"]))
    for r in rows:
        if r["error"]:
            t.add_row(f"{r['codec']}:{r['level']}", str(r["threads"]), *["-"] * 9, f"[red]{r['error'][:60]}[/]")
            continue
        t.add_row(f"{r['codec']}:{r['level']}", str(r["threads"]), _num(r["ratio"], "{:.3f}"),
                  _mbs(r["compress_Bps"]), _num(r["compress_spread_pct"], "{:.1f}"), _mbs(r["decompress_Bps"]),
                  _num(r["decompress_spread_pct"], "{:.1f}"), _num(r["compress_cpu_s_per_GB"], "{:.1f}"),
                  _num(r["decompress_cpu_s_per_GB"], "{:.1f}"), human_bytes(r["compress_peak_bytes"]),
                  human_bytes(r["decompress_peak_bytes"]), "yes" if r["verified"] else "NO")
    return t


def _storage_table(doc: dict[str, Any]) -> Table:
    t = Table(title="storage-effective time per GB of uncompressed data (storage and codec pipelined)",
              title_justify="left", box=None, header_style="bold")
    for col in ("target", "input", "choice", "ratio", "read s/GB", "bound", "write s/GB", "bound"):
        t.add_column(col, justify="left" if col in ("target", "input", "choice") else "right")
    for s in sorted(doc["storage"], key=lambda s: (s["target"], s["input"], s["read"]["s_per_GB"])):
        t.add_row(s["target"], s["input"].rsplit("/", 1)[-1], s["label"], f"{s['ratio']:.2f}",
                  f"{s['read']['s_per_GB']:.2f}", s["read"]["limited_by"], f"{s['write']['s_per_GB']:.2f}",
                  s["write"]["limited_by"])
    return t


def render_text(doc: dict[str, Any], con: Console) -> None:
    _header(doc, con)
    for inp in doc["inputs"]:
        con.print()
        con.print(_input_table(inp))
        if inp["note"]:
            con.print(f"  [yellow]{inp['note']}[/]")
    if doc["targets"]:
        con.print()
        for tg in doc["targets"]:
            con.print(f"  {tg['name']}: sequential read {_mbs(tg['read_Bps'])} MB/s, write {_mbs(tg['write_Bps'])}"
                      f" MB/s ({tg['source']})")
        con.print(_storage_table(doc))
        con.print("  threads: each codec at the thread count it was measured with, on otherwise idle cores; an "
                  "application using every core pays more (see --fs --run)")
    if doc["recommendations"]:
        con.print()
        t = Table(title="recommendations", title_justify="left", box=None, header_style="bold")
        for col in ("input", "goal", "target", "choice", "ratio", "numbers and trade-off"):
            t.add_column(col)
        for r in doc["recommendations"]:
            t.add_row(r["input"].rsplit("/", 1)[-1], r["goal"], r["target"] or "-", r["choice"] or "-",
                      "-" if r["ratio"] is None else f"{r['ratio']:.2f}x", recommendation_line(r))
        con.print(t)


def render_fs_text(doc: dict[str, Any], con: Console) -> None:
    con.print(f"[bold]iolens compress --fs[/]: {len(doc['files'])} file(s), "
              f"{human_bytes(sum(f['bytes'] for f in doc['files']))}")
    t = Table(box=None, header_style="bold")
    for col in ("filesystem", "fstype", "on-disk ratio", "disk bytes", "from", "write MB/s", "cold read MB/s"):
        t.add_column(col, justify="left" if col in ("filesystem", "fstype", "from") else "right")
    for fs in doc["filesystems"]:
        od = fs["on_disk"]
        t.add_row(fs["target"], fs["fstype"] or "?", _num(od.get("ratio"), "{:.3f}") if not od.get("error") else
                  f"[red]{od['error']}[/]", human_bytes(od.get("disk_bytes")), od["source"], _mbs(fs["write_Bps"]),
                  _mbs(fs["read_Bps"]))
    con.print(t)
    rep = doc.get("compare")
    if rep:
        from iolens.render.compare_text import render_compare
        con.print()
        render_compare(rep, con)
