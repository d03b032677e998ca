"""Terminal tables of `iolens compress`: per input, codecs by ratio; storage-effective times; recommendations."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from iolens.names import shown_text
from iolens.render.terminal import Col, FitTable
from iolens.units import human_bytes

MIB = 1 << 20  # rates in MiB/s, binary units as everywhere else in iolens (and on the compress page)
# the words of the tables, each explained once for the terminal and the page
TERMS = {
    "codec:level": "the codec and its level: higher levels usually give smaller files and compress more slowly",
    "threads": "threads the codec used",
    "ratio": "original size / compressed size (higher: smaller files)",
    "limited by": "storage or codec, whichever is slower when the two run together",
    "goal": "indexable: BGZF, which tabix and samtools can index for random access; smallest: for archives; "
            "intermediate: a file written once and read about 1.5 times, by the time for both",
}


def terms(*names: str) -> str:
    """The named terms with their meanings, one footnote line."""
    return "; ".join(f"{n}: {TERMS[n]}" for n in names)


def _mibs(v: float | None) -> str:
    return "-" if v is None else (f"{v / MIB:,.0f}" if v >= 10 * MIB else f"{v / MIB:.1f}")


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
            line = (f"{r['ratio']:.2f}x, writes {_mibs(r['compress_Bps'])} MiB/s; random access with "
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
    con.print(Text("iolens compress", style="bold") + Text(
        f" on {h.get('cpu_model') or '?'} ({h.get('cpus')} CPUs), iolens {h.get('iolens_version')}, "
        f"Python {h.get('python')} built with {h.get('build')}"))
    libs = ", ".join(f"{k}: {v}" for k, v in doc["libraries"].items() if v)
    con.print(f"  libraries: {libs}")
    for s in doc["skipped_codecs"]:
        con.print(shown_text(f"  skipped {s['codec']}: {s['why']}", style="yellow"))
    st = doc["settings"]
    con.print(f"  figures: best of passes repeated for >= {st['min_time_s']} s each and until stable, at most "
              f"{st['max_time_s']:g} s (spread = median vs best, '-' under 3 passes); throughput is of uncompressed "
              "bytes; MiB = 2^20 bytes")
    if st["mode"] == "quick":
        con.print(f"  quick: {st['pairs']} codec/level pairs at one thread on a sample; --full for every codec, "
                  "1 and all CPUs and the whole file; --list shows the codecs")
    notes = sorted({r["peak_note"] for i in doc["inputs"] for r in i["rows"] if r["peak_note"]})
    for n in notes:
        con.print(f"  peak mem {n}")


def _input_table(inp: dict[str, Any]) -> FitTable:
    what = (f"{human_bytes(inp['measured_bytes'])} sampled in {inp['sample_blocks']} blocks of "
            f"{human_bytes(inp['sample_block_bytes'])} from {human_bytes(inp['file_bytes'])}"
            if inp["sampled"] else f"{human_bytes(inp['file_bytes'])}, whole")
    # the answer (ratio and speeds) stays; spreads, then memory, then CPU time give way first
    t = FitTable([Col("codec:level", "left"), Col("thr", drop=4), Col("ratio"), Col("comp MiB/s"), Col("±%", drop=9),
                  Col("decomp MiB/s"), Col("±%", drop=8), Col("CPU s/GB c", drop=5), Col("CPU s/GB d", drop=6),
                  Col("peak mem c", drop=7), Col("peak mem d", drop=7), Col("ok", wrap=True)],
                 title=shown_text(f"{inp['path']}: {inp['content_text']}, {what}"), title_justify="left", box=None,
                 header_style="bold")
    rows = sorted(inp["rows"], key=lambda r: (-(r["ratio"] or 0), r["codec"]))
    for r in rows:
        if r["error"]:
            t.add_row(f"{r['codec']}:{r['level']}", str(r["threads"]), *["-"] * 9,
                      shown_text(r["error"][:60], style="red"))
            continue
        t.add_row(f"{r['codec']}:{r['level']}", str(r["threads"]), _num(r["ratio"], "{:.3f}"),
                  _mibs(r["compress_Bps"]), _num(r["compress_spread_pct"], "{:.1f}"), _mibs(r["decompress_Bps"]),
                  _num(r["decompress_spread_pct"], "{:.1f}"), _num(r["compress_cpu_s_per_GB"], "{:.1f}"),
                  _num(r["decompress_cpu_s_per_GB"], "{:.1f}"), human_bytes(r["compress_peak_bytes"]),
                  human_bytes(r["decompress_peak_bytes"]), "yes" if r["verified"] else "NO")
    return t


def _storage_table(doc: dict[str, Any]) -> FitTable:
    t = FitTable([Col("target", "left"), Col("input", "left", flex="left"), Col("choice", "left"), Col("ratio"),
                  Col("read s/GB"), Col("bound", drop=2), Col("write s/GB"), Col("bound", drop=1)], keys=3,
                 title="storage-effective time per GB of uncompressed data (storage and codec pipelined)",
                 title_justify="left", box=None, header_style="bold")
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
        con.print(Text("  " + terms("codec:level", "ratio") + "; thr: threads; c / d: compress / decompress; "
                       "ok: the decompressed bytes equal the original", style="dim"))
        if inp["note"]:
            con.print(shown_text(f"  {inp['note']}", style="yellow"))
    if doc["targets"]:
        con.print()
        for tg in doc["targets"]:
            con.print(shown_text(f"  {tg['name']}: sequential read {_mibs(tg['read_Bps'])} MiB/s, write "
                                 f"{_mibs(tg['write_Bps'])} MiB/s ({tg['source']})"))
        con.print(_storage_table(doc))
        con.print(Text(f"  bound: {TERMS['limited by']}", style="dim"))
        con.print("  threads: each codec at the thread count it was measured with, on otherwise idle cores; an "
                  "application using every core pays more (see --fs --run)")
    if doc["recommendations"]:
        con.print()
        t = FitTable([Col("input", "left", flex="left"), Col("goal", "left"), Col("target", "left", drop=1),
                      Col("choice", "left"), Col("ratio", "left"), Col("numbers and trade-off", "left", wrap=True)],
                     keys=2, title="recommendations", title_justify="left", box=None, header_style="bold")
        for r in doc["recommendations"]:
            t.add_row(r["input"].rsplit("/", 1)[-1], r["goal"], r["target"] or "-", r["choice"] or "-",
                      "-" if r["ratio"] is None else f"{r['ratio']:.2f}x", recommendation_line(r))
        con.print(t)
        con.print(Text("  " + terms("goal"), style="dim"))


def render_fs_text(doc: dict[str, Any], con: Console) -> None:
    con.print(Text("iolens compress --fs", style="bold") + Text(
        f": {len(doc['files'])} file(s), {human_bytes(sum(f['bytes'] for f in doc['files']))}"))
    t = FitTable([Col("filesystem", "left"), Col("fstype", "left", drop=2), Col("on-disk ratio", wrap=True),
                  Col("disk bytes", drop=3), Col("from", "left", drop=1), Col("write MiB/s"), Col("cold read MiB/s")],
                 box=None, header_style="bold")
    for fs in doc["filesystems"]:
        od = fs["on_disk"]
        t.add_row(fs["target"], fs["fstype"] or "?", _num(od.get("ratio"), "{:.3f}") if not od.get("error") else
                  shown_text(od["error"], style="red"), human_bytes(od.get("disk_bytes")), od["source"],
                  _mibs(fs["write_Bps"]), _mibs(fs["read_Bps"]))
    con.print(t)
    rep = doc.get("compare")
    if rep:
        from iolens.render.compare_text import render_compare
        con.print()
        render_compare(rep, con)
