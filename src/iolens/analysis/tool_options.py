"""What each known tool's options mean for storage and CPU: where its temp files go, how much it holds in memory
before spilling, its threads, its output and its compression level.  The one table the advice rules read to name
the option to change (analysis/advice.py, analysis/advice_tools.py); tools are named as `classify.tool_name`
names them (`samtools sort`, `sort`).
"""

from __future__ import annotations

from dataclasses import dataclass

from iolens.errors import UsageError
from iolens.units import parse_size


@dataclass(frozen=True)
class ToolOptions:
    temp: str | None = None  # the option naming the temp directory or prefix
    temp_is_prefix: bool = False  # the temp option takes a file prefix (samtools sort -T PREFIX), not a directory
    memory: str | None = None  # the option for the memory held before spilling to a temp file
    memory_default: str | None = None  # its default, as the tool's manual states it
    threads: str | None = None  # the option for the number of threads
    threads_default: int = 1  # the threads used without the option
    output: str | None = None  # the option naming the output file
    level: str | None = None  # the option for the compression level ("-#" when the level is a digit option)
    level_default: int | None = None
    level_high: int | None = None  # levels from this one on cost much more CPU for little smaller output


TOOLS: dict[str, ToolOptions] = {
    "samtools sort": ToolOptions(temp="-T", temp_is_prefix=True, memory="-m", memory_default="768M", threads="-@",
                                 output="-o", level="-l"),
    "samtools view": ToolOptions(threads="-@", output="-o"),
    "samtools merge": ToolOptions(threads="-@", output="-o"),
    "samtools markdup": ToolOptions(temp="-T", temp_is_prefix=True, threads="-@"),
    "samtools collate": ToolOptions(temp="-T", temp_is_prefix=True, threads="-@", output="-o"),
    "bcftools sort": ToolOptions(temp="-T", memory="-m", memory_default="768M", output="-o"),
    "sambamba sort": ToolOptions(temp="--tmpdir", memory="-m", memory_default="2G", threads="-t", output="-o"),
    "sort": ToolOptions(temp="-T", memory="-S", threads="--parallel", threads_default=0, output="-o"),
    "minimap2": ToolOptions(threads="-t", threads_default=3, output="-o"),
    "bwa mem": ToolOptions(threads="-t", output="-o"),
    "bowtie2": ToolOptions(threads="-p", output="-S"),
    "hisat2": ToolOptions(threads="-p", output="-S"),
    "fastp": ToolOptions(threads="-w", threads_default=3),
    "STAR": ToolOptions(threads="--runThreadN"),
    "gzip": ToolOptions(level="-#", level_default=6, level_high=7),
    "pigz": ToolOptions(threads="-p", threads_default=0, level="-#", level_default=6, level_high=7),
    "bgzip": ToolOptions(threads="-@", level="-l", level_default=6, level_high=7),
    "zstd": ToolOptions(threads="-T", level="-#", level_default=3, level_high=10),
    "xz": ToolOptions(threads="-T", level="-#", level_default=6, level_high=7),
    "bzip2": ToolOptions(level="-#", level_default=9),
}
COMPRESSORS = ("gzip", "pigz", "bgzip", "zstd", "xz", "bzip2")  # tools whose work is compressing


def options(tool: str) -> ToolOptions | None:
    return TOOLS.get(tool)


def value(argv: list[str], option: str) -> str | None:
    """The value given to an option in argv (`-T DIR`, `-TDIR`, `--tmpdir=DIR`), the last one winning."""
    out = None
    for i, a in enumerate(argv[1:], 1):
        if a == option and i + 1 < len(argv):
            out = argv[i + 1]
        elif option.startswith("--") and a.startswith(option + "="):
            out = a[len(option) + 1:]
        elif not option.startswith("--") and len(option) == 2 and a.startswith(option) and len(a) > 2:
            out = a[2:]
    return out


def level(argv: list[str], opts: ToolOptions) -> int | None:
    """The compression level in argv (`-9`, `-l 9`, `--best`, `--fast`), or None when not given."""
    if opts.level is None:
        return None
    out = None
    for a in argv[1:]:
        if opts.level == "-#" and len(a) >= 2 and a[0] == "-" and a[1:].isdigit():
            out = int(a[1:])
        elif a == "--best":
            out = 9
        elif a == "--fast":
            out = 1
    if opts.level != "-#":
        v = value(argv, opts.level)
        if v is not None and v.lstrip("-").isdigit():
            out = int(v)
    return out


def threads(argv: list[str], opts: ToolOptions) -> int | None:
    """Threads asked for in argv (the default when not given); None when the tool takes no thread option or the
    default is the machine's CPUs (0)."""
    if opts.threads is None:
        return None
    v = value(argv, opts.threads)
    if v is not None and v.isdigit():
        n = int(v)
        # samtools/bgzip -@ N adds N threads to the main one
        return n + 1 if opts.threads == "-@" and n else max(1, n)
    return opts.threads_default or None


def memory_bytes(argv: list[str], opts: ToolOptions) -> int | None:
    """The memory option's value in bytes (given, else the tool's default), or None."""
    if opts.memory is None:
        return None
    v = value(argv, opts.memory) or opts.memory_default
    if v is None:
        return None
    try:
        return parse_size(v)
    except UsageError:
        return None
