"""Checks of a wheel's native parts, readable for any architecture (pyelftools, which auditwheel brings):

- every binary is an ELF file of the wheel's architecture;
- no binary needs a glibc symbol version newer than the floor (2.17: manylinux2014);
- the interposer exports every hook the sources define (`IOLENS_API` in native/preload/*.c, with their
  `__asm__` names, and every hook listed in hooks.h) and is bound lazily (no BIND_NOW), so a process binds only
  the libc functions it calls.

    python dev/wheelcheck.py WHEEL --arch aarch64 [--json]

dev/build-wheels runs it on every wheel it builds; tests/test_wheel.py reads its --json output.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import zipfile
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection

REPO = Path(__file__).resolve().parent.parent
PRELOAD = "libiolens_preload.so"
MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1


def defined_hooks(src: Path = REPO / "native" / "preload") -> set[str]:
    """The symbols the interposer's sources define for export: `IOLENS_API` functions under their `__asm__`
    names where they have one, and every X(ret, name, params) row of hooks.h."""
    text = "\n".join(p.read_text() for p in sorted(src.glob("*.c")))
    renamed = dict(re.findall(r"IOLENS_API[^;{]*?\b(\w+)\s*\([^;{]*\)\s*__asm__\(\"(\w+)\"\)", text))
    names = {renamed.get(n, n) for n in re.findall(r"IOLENS_API\s[^;{(]*?\b(\w+)\s*\(", text)}
    hooks = (src / "hooks.h").read_text().partition("#define IOLENS_HOOKS(X)")[2].partition("\n\n")[0]
    return names | set(re.findall(r"X\([^,()]+,\s*(\w+),", hooks))


def glibc_versions(elf: ELFFile) -> list[str]:
    """The GLIBC_x.y versions the file needs, oldest first."""
    found: set[str] = set()
    for sec in elf.iter_sections():
        if isinstance(sec, GNUVerNeedSection):
            for _, auxes in sec.iter_versions():
                found.update(a.name for a in auxes if a.name.startswith("GLIBC_"))
    return sorted(found, key=_version_key)


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def exported(elf: ELFFile) -> set[str]:
    sec = elf.get_section_by_name(".dynsym")
    if not isinstance(sec, SymbolTableSection):
        return set()
    return {s.name for s in sec.iter_symbols()
            if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
            and s["st_info"]["type"] == "STT_FUNC"}


def binds_now(elf: ELFFile) -> bool:
    for sec in elf.iter_sections():
        if isinstance(sec, DynamicSection):
            for tag in sec.iter_tags():
                if tag.entry.d_tag == "DT_BIND_NOW":
                    return True
                if tag.entry.d_tag == "DT_FLAGS" and tag.entry.d_val & DF_BIND_NOW:
                    return True
                if tag.entry.d_tag == "DT_FLAGS_1" and tag.entry.d_val & DF_1_NOW:
                    return True
    return False


def check_wheel(wheel: Path, arch: str, floor: str = "2.17") -> dict:
    """What the wheel's native parts are and need, and the problems found (an empty list when all is well)."""
    hooks = defined_hooks()
    files, problems = {}, []
    with zipfile.ZipFile(wheel) as zf:
        natives = [n for n in zf.namelist() if "/_native/" in n and not n.endswith("/")]
        for name in sorted(natives):
            base = name.rsplit("/", 1)[1]
            data = zf.read(name)
            if not data.startswith(b"\x7fELF"):
                problems.append(f"{base}: not an ELF file")
                continue
            elf = ELFFile(io.BytesIO(data))
            versions = glibc_versions(elf)
            info: dict = {"machine": elf["e_machine"], "type": elf["e_type"],
                          "glibc": versions[-1] if versions else None}
            if elf["e_machine"] != MACHINES[arch]:
                problems.append(f"{base}: {elf['e_machine']}, not {MACHINES[arch]}")
            newer = [v for v in versions if _version_key(v) > _version_key(floor)]
            if newer:
                problems.append(f"{base} needs {', '.join(newer)} (floor GLIBC_{floor})")
            if base == PRELOAD:
                got = exported(elf)
                missing = sorted(hooks - got)
                info.update(hooks=len(hooks), exported=len(hooks & got), missing=missing, bind_now=binds_now(elf))
                if missing:
                    problems.append(f"{base} does not export {len(missing)} of its hooks: {' '.join(missing)}")
                if info["bind_now"]:
                    problems.append(f"{base} is bound eagerly (BIND_NOW): every process would bind its libc calls")
            files[base] = info
    for want in (PRELOAD, "libiolens_redact.so", "iolens-bench", "iolens-replay"):
        if want not in files:
            problems.append(f"{want} is not in the wheel")
    return {"wheel": wheel.name, "arch": arch, "glibc_floor": floor, "files": files, "problems": problems}


def render(result: dict) -> str:
    lines = [f"{result['wheel']} ({result['arch']}):"]
    for name, info in result["files"].items():
        line = f"  {name:22} {info['machine']:11} {info['type']:8} needs {info['glibc'] or 'no glibc version'}"
        if "hooks" in info:
            line += (f"; exports {info['exported']}/{info['hooks']} hooks; "
                     f"{'BIND_NOW' if info['bind_now'] else 'lazy binding'}")
        lines.append(line)
    lines += [f"  problem: {p}" for p in result["problems"]] or [f"  ok: all at or below GLIBC_{result['glibc_floor']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--arch", required=True, choices=sorted(MACHINES))
    ap.add_argument("--glibc", default="2.17", help="the newest glibc symbol version allowed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = check_wheel(args.wheel, args.arch, args.glibc)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
