"""The field cases' claims (examples/cases/claims.py): every claim is reproduced on results where its published
effect holds, not reproduced where the effect is reversed, and undecided where the runs cannot tell.

The results are synthetic but in the real formats: compare reports carry comparisons made by iolens's own statistics
(`stats.samples.compare`, whose `decision` is the verdict of `stats.sequential`), from simulated run times."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from iolens.stats import samples

pytestmark = pytest.mark.timeout(120)

CASES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cases"
_spec = importlib.util.spec_from_file_location("case_claims", CASES_DIR / "claims.py")
assert _spec and _spec.loader
claims = importlib.util.module_from_spec(_spec)
sys.modules["case_claims"] = claims
_spec.loader.exec_module(claims)

SCENARIOS = ("holds", "reversed", "undecided")
EXPECTED = {"holds": "reproduced", "reversed": "not reproduced", "undecided": "undecided"}


def times(median: float, n: int, cv: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in median * np.exp(rng.normal(0, cv, n))]


def compare_report(pairs: dict[str, list[float]], baseline: str) -> dict:
    """A compare report (tag iolens-compare) with each configuration compared with the baseline."""
    results = [{"name": n, "times": t, "median": float(np.median(t)), "ok_runs": len(t)} for n, t in pairs.items()]
    comps = [samples.compare(n, t, baseline, pairs[baseline]).to_dict() for n, t in pairs.items() if n != baseline]
    return {"tag": "iolens-compare", "schema_version": [1, 2], "baseline": baseline, "results": results,
            "comparisons": comps}


# the ratio of a's time to b's that makes each expectation hold, and one that reverses it
HOLDS = {"faster": 0.7, "slower": 1.4, "equivalent": 1.0}
REVERSED = {"faster": 1.4, "slower": 0.7, "equivalent": 1.4}


def compared_files(test: claims.compared, scenario: str, *, flip: bool = False) -> dict[str, dict]:
    """Files for a compare-based claim: a against b (b the baseline; with flip, a is the baseline)."""
    if scenario == "undecided":  # three runs each, spread far wider than the difference
        ta, tb = [1.0, 1.6, 0.7], [1.1, 0.75, 1.4]
    else:
        ratio = (HOLDS if scenario == "holds" else REVERSED)[test.expect]
        cv = 0.003 if ratio == 1.0 else 0.02
        ta, tb = times(ratio, 12, cv, 3), times(1.0, 12, cv, 4)
    rep = compare_report({test.b: tb, test.a: ta} if not flip else {test.a: ta, test.b: tb},
                         baseline=test.a if flip else test.b)
    return {test.file: {test.key: rep} if test.key else rep}


def write(report: Path, files: dict[str, dict]) -> None:
    for name, doc in files.items():
        path = report / name
        old = json.loads(path.read_text()) if path.exists() else {}
        if "results" in old and "results" in doc:  # two claims on one file: merge their configurations
            by = {r["name"]: r for r in old["results"]}
            for r in doc["results"]:
                by.setdefault(r["name"], {}).update(r)
            known = {(c["name"], c["baseline"]) for c in old.get("comparisons", [])}
            doc = {**old, "results": list(by.values()), "comparisons": old.get("comparisons", []) + [
                c for c in doc.get("comparisons", []) if (c["name"], c["baseline"]) not in known]}
        path.write_text(json.dumps(doc))


# ----------------------------------------------------------------------------------- measured-quantity claims ---
def profile(small: float, nxt: float, total: float) -> dict:
    return {"breakdown": {"tiny_read": small / 2, "small_read": small / 2, "sync": nxt, "compute": total - small - nxt}}


def c1_bytes(s: str) -> dict[str, dict]:
    inputs = 10_000_000
    staged, mount = {"holds": (4 * inputs, inputs), "reversed": (inputs, 4 * inputs), "undecided": (inputs, 0)}[s]
    return {"object-store.json": {"results": [{"name": "staged", "strategy": "stage",
                                                "phases": {"copy_in_bytes": staged}}]},
            "mount-bytes.json": {"bytes_read_through_mount": mount, "input_bytes": inputs}}


def c1_phases(s: str) -> dict[str, dict]:
    if s == "undecided":  # compared without --profile: no phases to look at
        return {"object-store.json": {"results": [{"name": "s3fs", "strategy": "direct", "profile": None}]}}
    names = ["gzip", "python3", "md5sum #1", "split"] if s == "holds" else ["bash", "gzip"]
    return {"object-store.json": {"results": [{"name": "s3fs", "strategy": "direct",
                                               "profile": {"phases": {n: {} for n in names}}}]}}


def c3_cost(s: str) -> dict[str, dict]:
    per = {"holds": (300.0, 170.0), "reversed": (100.0, 170.0), "undecided": (170.0, 170.05)}[s]
    return {"cost.json": {"options": [{"name": "shared-netfs", "per_month": per[0]},
                                      {"name": "localize-s3", "per_month": per[1]},
                                      {"name": "fuse-s3", "per_month": 1.0}]}}


def codecs(levels: dict[str, float]) -> dict:
    return {"inputs": [{"rows": [{"codec": k.split(":")[0], "level": int(k.split(":")[1]), "ratio": v}
                                 for k, v in levels.items()]}]}


def c4_ratio(s: str) -> dict[str, dict]:
    z, lz = {"holds": (2.5, 1.5), "reversed": (1.4, 2.0), "undecided": (1.52, 1.5)}[s]
    fs = {"filesystems": [{"target": f"lab:{t}", "on_disk": {"ratio": r}}
                          for t, r in (("btrfs", 1.0), ("btrfs-zlib", z), ("btrfs-lzo", lz))]}
    return {"binned-fastq-fs.json": fs, "binned-codecs.json": codecs({"zlib:6": z, "lz4:1": lz})}


def c4_levels(s: str) -> dict[str, dict]:
    levels = {"holds": {"zlib:1": 3.9, "zlib:6": 4.6, "zlib:9": 4.7},
              "reversed": {"zlib:1": 4.7, "zlib:6": 4.0, "zlib:9": 3.9},
              "undecided": {"zlib:1": 3.9, "zlib:6": 4.6}}[s]
    return {"binned-codecs.json": codecs(levels)}


def c4_lzo(s: str) -> dict[str, dict]:
    lzo, zlib, n, cv = {"holds": (1.05, 1.8, 10, 0.03), "reversed": (1.8, 1.05, 10, 0.03),
                        "undecided": (1.2, 1.3, 3, 0.3)}[s]
    rep = compare_report({"btrfs": times(1.0, n, cv, 5), "btrfs-lzo": times(lzo, n, cv, 6),
                          "btrfs-zlib": times(zlib, n, cv, 7)}, baseline="btrfs")
    return {"binned-sort.json": {"compare": rep}}


def c4_numa(s: str) -> dict[str, dict]:
    if s == "undecided":  # one NUMA node: nothing compared
        return {}
    ratio = 0.8 if s == "holds" else 1.25
    return {"numa.json": compare_report({"plain": times(1.0, 10, 0.02, 8), "bound": times(ratio, 10, 0.02, 9)},
                                        baseline="plain")}


def c5_small(s: str) -> dict[str, dict]:
    mag, tmp = {"holds": (profile(20, 5, 45), profile(0.1, 0.05, 6)),
                "reversed": (profile(1, 5, 45), profile(0.5, 0.05, 6)),
                "undecided": (profile(6, 5, 45), profile(0.4, 0.05, 6))}[s]  # dominate, but only 1.5x the share
    return {"profile-magnetic.json": mag, "profile-tmpfs.json": tmp}


def c5_best(s: str) -> dict[str, dict]:
    if s == "undecided":
        return {}  # no cost table
    best = "gp2" if s == "holds" else "gp3"
    return {"cost.json": {"best_value": best, "tied": [], "verdict": f"{best} is the best value"}}


def c5_overhead(s: str) -> dict[str, dict]:
    if s == "undecided":  # three runs each, spread far wider than the difference
        plain, interposed = [2.0, 3.2, 1.4], [2.2, 1.5, 2.8]
    else:
        ratio, cv = (1.0, 0.003) if s == "holds" else (1.3, 0.02)
        plain, interposed = times(2.0, 20, cv, 10), times(2.0 * ratio, 20, cv, 11)
    return {"overhead.json": compare_report({"plain": plain, "interposed": interposed,
                                             "profiled": times(2.4, len(plain), 0.02, 12)}, baseline="plain")}


BUILDERS = {"network-bytes": c1_bytes, "phases-are-children": c1_phases, "efs-costliest": c3_cost,
            "fastq-ratio": c4_ratio, "gzip-levels": c4_levels, "sort-penalty-lz4-small": c4_lzo, "numa": c4_numa,
            "small-reads-hdd": c5_small, "best-value-gp2": c5_best, "profiler-overhead": c5_overhead}


def files_for(claim: claims.Claim, scenario: str) -> dict[str, dict]:
    if isinstance(claim.test, claims.compared):
        return compared_files(claim.test, scenario)
    return BUILDERS[claim.id](scenario)


def test_every_claim_has_a_builder():
    plain = {c.id for c in claims.CLAIMS if not isinstance(c.test, claims.compared)}
    assert plain == set(BUILDERS), "each claim tested on measured quantities needs a builder here"
    assert len({(c.case, c.id) for c in claims.CLAIMS}) == len(claims.CLAIMS)
    assert {c.case for c in claims.CLAIMS} == set(claims.SEEDS)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("claim", claims.CLAIMS, ids=lambda c: f"{c.case}-{c.id}")
def test_claim_verdict(tmp_path, claim, scenario):
    write(tmp_path, files_for(claim, scenario))
    out = claim.test(tmp_path)
    assert out.verdict == EXPECTED[scenario], out
    assert out.ours
    if scenario != "holds":
        assert out.reason


@pytest.mark.parametrize("expect", ["faster", "slower", "equivalent"])
def test_compared_reads_a_comparison_stored_the_other_way(tmp_path, expect):
    test = claims.compared("x.json", "a", "b", expect)
    for scenario in ("holds", "reversed"):
        write(tmp_path, compared_files(test, scenario, flip=True))
        assert test(tmp_path).verdict == EXPECTED[scenario]
        (tmp_path / "x.json").unlink()


def test_missing_results_are_undecided(tmp_path):
    for c in claims.CLAIMS:
        out = c.test(tmp_path)
        assert out.verdict == "undecided", (c.id, out)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_check_fails_the_case_only_when_a_checked_claim_is_not_reproduced(tmp_path, scenario, capsys):
    case = "case2"
    for c in claims.CLAIMS:
        if c.case == case:
            write(tmp_path, files_for(c, scenario))
    rc = claims.main(["check", case, str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == (1 if scenario == "reversed" else 0)
    word = EXPECTED[scenario].upper()
    assert all(line.startswith(f"{word}: ") for line in out.splitlines()), out
    rows = json.loads((tmp_path / "claims.json").read_text())["claims"]
    assert {r["id"] for r in rows} == {c.id for c in claims.CLAIMS if c.case == case}
    assert "<table>" in (tmp_path / "claims.html").read_text()


def test_tables_are_generated_into_the_marked_block(tmp_path):
    work = tmp_path / "work"
    for case in claims.SEEDS:
        report = work / case / "report"
        report.mkdir(parents=True)
        for c in claims.CLAIMS:
            if c.case == case:
                write(report, files_for(c, "holds"))
        assert claims.main(["check", case, str(report)]) == 0
    (work / "cases.tsv").write_text("".join(f"{c}\tok\t{60 + i}\t4.2\n" for i, c in enumerate(claims.SEEDS)))
    (work / "run.txt").write_text("short mode, started 2026-11-29 07:00 UTC")
    doc = tmp_path / "cases.md"
    doc.write_text(f"# Cases\n\nbefore\n{claims.BEGIN}\nstale\n{claims.END}\nafter\n")
    assert claims.main(["markdown", str(work), str(doc)]) == 0
    text = doc.read_text()
    assert "stale" not in text and text.startswith("# Cases\n\nbefore\n") and text.endswith("after\n")
    assert text.count("| claim | published | ours | agreement | why they differ |") == len(claims.SEEDS)
    assert text.count("| reproduced") >= len(claims.CLAIMS)
    assert "(ok in 60 s, load average 4.2 at its end)" in text
    for case, (_seed, page) in claims.SEEDS.items():
        assert f"(#{page.split('#', 1)[1]})" in text
    assert claims.main(["index", str(work)]) == 0
    index = (work / "index.html").read_text()
    assert index.count("<table>") == len(claims.SEEDS) and 'href="case1/report/index.html"' in index
    nodoc = tmp_path / "plain.md"
    nodoc.write_text("no markers\n")
    assert claims.main(["markdown", str(work), str(nodoc)]) == 2
    assert nodoc.read_text() == "no markers\n"
