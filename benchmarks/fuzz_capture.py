"""Fuzz the capture reader and the report, and count how much damage the reader notices.

    python benchmarks/fuzz_capture.py fuzz [--runs 1000000] [--seconds S] [--crashes DIR] [--corpus DIR]
    python benchmarks/fuzz_capture.py mutants [--count 20000] [--seed 1]
    python benchmarks/fuzz_capture.py statuses [--count 300] [--seed 1]

fuzz     coverage-guided (atheris, libFuzzer) over `tests/helpers/fuzz.py`'s `exercise`: each input is read as a capture
         and, resealed with fresh checksums, read again (so the decoder behind the checksums is reached too); one
         input in REPORT_EVERY also goes through the report in every format, parse and diff.  Anything other than
         a one-line `IolensError` is a crash: it is saved under --crashes and counted, and fuzzing goes on.
         Prints executions, time and crashes; exits 1 when there was a crash.
mutants  truncations, insertions (1-7 bytes) and byte flips over real captures (made by profiling a few commands)
         and the format-1.0 fixture: prints, per capture format, how many the reader detected, how many were
         harmless (read whole and identical), how many it missed and how many gave a traceback.  Target for
         sealed (2.x) captures: 0 missed, 0 tracebacks.
statuses every command that reads a capture (report, parse, diff, replay, predict, cost) on the fuzz corpus and
         on mutants of real captures: prints how many inputs each exit status was given for, and each input the
         commands disagree on.  Target: 0 disagreements.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/helpers/fuzz.py

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "data"
REPORT_EVERY = 64
COMMANDS = [
    ["bash", "-c", "echo data > x; cat x; ls > /dev/null"],
    ["bash", "-c", "for i in 1 2 3 4 5 6; do echo $i > f$i; cat f$i > /dev/null; done; rm f*"],
    ["sh", "-c", "seq 1 20000 > n; sort -r n | head -1 > /dev/null; gzip -c n > n.gz"],
]


def real_captures(workdir: Path, trace: bool = True) -> list[Path]:
    """Profile COMMANDS (with --trace) in workdir; the captures written."""
    out = []
    for i, argv in enumerate(COMMANDS):
        cap = workdir / f"c{i}.iolens"
        args = [sys.executable, "-m", "iolens", "profile", "-q", *(["--trace"] if trace else []), "-o", str(cap),
                "--", *argv]
        subprocess.run(args, cwd=workdir, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        out.append(cap)
    return out


def seeds(workdir: Path) -> list[bytes]:
    from iolens.capture.writer import file_header

    small = [p.read_bytes() for p in real_captures(workdir, trace=False)[:2]]
    old = (FIXTURES / "capture" / "v1.0-bash-trace.iolens").read_bytes()
    return [*small, old, file_header()]


def _reseal(data: bytes) -> bytes:
    from iolens.capture.writer import seal

    return seal(data[16:])


def run_fuzz(args: argparse.Namespace) -> int:
    import atheris

    with atheris.instrument_imports(include=["iolens"]):
        from helpers.fuzz import exercise

    crashes_dir = Path(args.crashes)
    crashes_dir.mkdir(parents=True, exist_ok=True)
    state = {"n": 0, "crashes": 0, "t0": time.monotonic()}

    def report_and_exit() -> None:
        dt = time.monotonic() - state["t0"]
        print(f"fuzz: {state['n']} executions in {dt:.0f} s ({state['n'] / max(dt, 1e-9):.0f}/s), "
              f"{state['crashes']} crashes", flush=True)
        os._exit(1 if state["crashes"] else 0)

    def one(data: bytes) -> None:
        state["n"] += 1
        report = int.from_bytes(hashlib.blake2b(data, digest_size=2).digest(), "little") % REPORT_EVERY == 0
        for buf in (data, _reseal(data)):
            try:
                exercise(buf, report=report)
            except Exception:  # noqa: BLE001 - every exception but IolensError is the bug being looked for
                state["crashes"] += 1
                name = crashes_dir / f"crash-{hashlib.sha1(buf).hexdigest()[:16]}.iolens"
                if not name.exists():
                    name.write_bytes(buf)
                    print(f"fuzz: crash saved as {name}\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        if state["n"] >= args.runs or (args.seconds and time.monotonic() - state["t0"] >= args.seconds):
            report_and_exit()

    corpus = Path(args.corpus) if args.corpus else Path(tempfile.mkdtemp(prefix="iolens-fuzz-corpus-"))
    corpus.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iolens-fuzz-") as work:
        for i, s in enumerate(seeds(Path(work))):
            (corpus / f"seed-{i}").write_bytes(s)
    for p in sorted((FIXTURES / "fuzz").glob("*.iolens")):
        (corpus / f"regress-{p.stem}").write_bytes(p.read_bytes())
    state["t0"] = time.monotonic()
    atheris.Setup([sys.argv[0], "-max_len=65536", "-rss_limit_mb=4096", "-print_final_stats=0", str(corpus)], one)
    atheris.Fuzz()
    report_and_exit()
    return 0


def run_mutants(args: argparse.Namespace) -> int:
    from helpers.fuzz import MUTATIONS, classify, fingerprint, mutate
    from iolens.capture.reader import decode

    rnd = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="iolens-mutants-") as work:
        sealed = [p.read_bytes() for p in real_captures(Path(work))]
    groups = {"sealed (2.0)": sealed, "old (1.0, no checksums)": [(FIXTURES / "capture" / "v1.0-bash-trace.iolens")
                                                                  .read_bytes()]}
    worst = 0
    t0 = time.monotonic()
    for name, caps in groups.items():
        originals = [fingerprint(decode(c)) for c in caps]
        counts: dict[str, dict[str, int]] = {m: {"detected": 0, "harmless": 0, "missed": 0, "traceback": 0}
                                             for m in MUTATIONS}
        n = args.count if name.startswith("sealed") else args.count // 4
        for i in range(n):
            k = i % len(caps)
            m = MUTATIONS[i % len(MUTATIONS)]
            mutant = mutate(caps[k], rnd, m)
            try:
                verdict = classify(originals[k], mutant)
            except Exception:  # noqa: BLE001 - counted and shown
                verdict = "traceback"
                traceback.print_exc()
            counts[m][verdict] += 1
        total = {v: sum(c[v] for c in counts.values()) for v in ("detected", "harmless", "missed", "traceback")}
        print(f"{name}: {n} mutants of {len(caps)} capture(s) ({', '.join(f'{len(c)} B' for c in caps)})")
        for m, c in counts.items():
            print(f"  {m:<9} " + "  ".join(f"{v} {c[v]}" for v in c))
        print("  total     " + "  ".join(f"{v} {total[v]}" for v in total))
        if name.startswith("sealed"):
            worst = total["missed"] + total["traceback"]
    print(f"mutants: {time.monotonic() - t0:.0f} s; sealed captures: {worst} missed or traceback (target 0)")
    return 1 if worst else 0


def run_statuses(args: argparse.Namespace) -> int:
    from helpers.fuzz import MUTATIONS, Readers, mutate

    rnd = random.Random(args.seed)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="iolens-statuses-") as work:
        w = Path(work)
        caps = [p.read_bytes() for p in real_captures(w)]
        inputs = [(p.name, p.read_bytes()) for p in sorted((FIXTURES / "fuzz").glob("*.iolens"))]
        inputs += [(f"mutant {i} ({MUTATIONS[i % 3]})", mutate(caps[i % len(caps)], rnd, MUTATIONS[i % 3]))
                   for i in range(args.count)]
        readers = Readers(w / "readers")
        given: dict[int, int] = {}
        disagree = 0
        for name, data in inputs:
            path = w / "input.iolens"
            path.write_bytes(data)
            codes = {c: rc for c, (rc, _err) in readers.statuses(path).items()}
            if len(set(codes.values())) == 1:
                rc = next(iter(codes.values()))
                given[rc] = given.get(rc, 0) + 1
            else:
                disagree += 1
                print(f"  {name}: {codes}")
    print(f"statuses: {len(inputs)} inputs in {time.monotonic() - t0:.0f} s; all commands agreed on "
          + ", ".join(f"status {rc} for {n}" for rc, n in sorted(given.items()))
          + f"; {disagree} disagreements (target 0)")
    return 1 if disagree else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("fuzz")
    f.add_argument("--runs", type=int, default=1_000_000)
    f.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: no limit)")
    f.add_argument("--crashes", default="fuzz-crashes", help="directory for crashing inputs")
    f.add_argument("--corpus", help="corpus directory (kept; default: a new temporary one)")
    m = sub.add_parser("mutants")
    m.add_argument("--count", type=int, default=20_000)
    m.add_argument("--seed", type=int, default=1)
    st = sub.add_parser("statuses")
    st.add_argument("--count", type=int, default=300)
    st.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    return {"fuzz": run_fuzz, "mutants": run_mutants, "statuses": run_statuses}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
