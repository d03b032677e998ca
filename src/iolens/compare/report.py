"""Runs -> the compare report, as plain data (every renderer reads this and nothing else).

The JSON export is this dict; docs/compare.md documents every key.  It is what leaves the machine (JSON, HTML, the
results store), so its commands are redacted, and a --param value the rules hide in the command shows as ***.
Field names that mean the same as in hyperfine's JSON export (`command`, `mean`, `stddev`, `median`, `user`,
`system`, `min`, `max`, `times`, `exit_codes`, `memory_usage_byte`, `parameters`) carry hyperfine's names and units
(seconds, bytes).
"""

from __future__ import annotations

import statistics as pystats
from typing import Any

from iolens.stats import samples as stats
from iolens.stats import sequential
from iolens.compare.placements import Plan
from iolens.compare.runner import Outcome, RunRecord, Settings
from iolens.redact import redact_command

TAG = "iolens-compare"
SCHEMA_VERSION = [1, 2]  # 1.1: outcome, ci_excludes_zero, places_written, place_bytes, untested, emulated
#                          1.2: decision, auto, margin_pct, alpha, max_time_s, looks, user_times, system_times;
#                          the verdict from the decision


def _median(xs: list[float | int | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return float(pystats.median(v)) if v else None


def _mean(xs: list[float]) -> float | None:
    return float(sum(xs) / len(xs)) if xs else None


def _profile_medians(runs: list[RunRecord]) -> dict[str, Any] | None:
    profs = [r.profile for r in runs if r.profile]
    if not profs:
        return None
    names: list[str] = []
    for p in profs:
        for n in p["phases"]:
            if n not in names:
                names.append(n)
    phases = {}
    for n in names:
        phases[n] = {k: _median([p["phases"].get(n, {}).get(k, 0.0) for p in profs])
                     for k in ("count", "wall_s", "own_s", "cpu_s", "io_wall_s")}
    keys = list(profs[0]["io"])
    io = {k: _median([p["io"].get(k) for p in profs]) for k in keys}
    return {"runs": len(profs), "phases": phases, "io": io}


def _lab_targets(plan: Plan, idx: int) -> list[dict[str, Any]]:
    """The lab targets this configuration reads or writes: placeholder key and what `lab.emulation` says."""
    cfg = plan.configurations[idx]
    locs = [(k, loc) for k, loc in [*cfg.inputs.items(), *cfg.places.items()] if loc.lab]
    if not locs:
        return []
    from iolens import lab

    return [{"key": k, **(lab.emulation(f"lab:{loc.lab}") or {})} for k, loc in locs]


def config_result(plan: Plan, idx: int, runs: list[RunRecord], seed: int | None) -> dict[str, Any]:
    cfg = plan.configurations[idx]
    locs = [*cfg.inputs.values(), *cfg.places.values()]
    counted = [r for r in runs if not r.warmup]
    ok = [r for r in counted if r.ok]
    failed = [r for r in counted if not r.ok]
    times = [r.wall_s for r in ok]
    d = stats.describe(times, seed=seed)
    zs = stats.modified_z_scores(times)
    outl = [{"run": i, "wall_s": times[i], "z": zs[i]} for i in stats.outliers(times)]
    staged = cfg.strategy == "stage"
    resident = [r.inputs_resident for r in counted]
    labs = _lab_targets(plan, idx)
    return {
        "name": cfg.name,
        "strategy": cfg.strategy,
        "parameters": dict(cfg.shown),
        "emulated": any(t["emulated"] for t in labs),  # a lab target that emulates storage (docs/lab.md)
        "lab_targets": labs,
        "command": redact_command(counted[-1].command if counted else (runs[-1].command if runs else "")) or None,
        # hyperfine-compatible
        "mean": d.mean,
        "stddev": d.stddev,
        "median": d.median,
        "user": _mean([r.user_s for r in ok]),
        "system": _mean([r.sys_s for r in ok]),
        "min": d.min,
        "max": d.max,
        "times": times,
        "user_times": [r.user_s for r in ok],  # per successful run, beside `times` (iolens, schema 1.2)
        "system_times": [r.sys_s for r in ok],
        "exit_codes": [r.exit_status for r in ok],
        "memory_usage_byte": [r.maxrss_bytes for r in ok],
        # iolens
        "runs": len(counted),
        "ok_runs": len(ok),
        "failed_runs": len(failed),
        "warmup_runs": len(runs) - len(counted),
        "cv": d.cv,
        "median_ci": [d.ci_low, d.ci_high] if d.ci_low is not None else None,
        "median_ci_half_rel": d.ci_half_rel,
        "outliers": outl,
        "first_run_slow": stats.first_run_slow(times),
        "phases": {
            "copy_in_s": _median([r.copy_in_s for r in ok]),
            "run_s": _median([r.run_s for r in ok]),
            "copy_out_s": _median([r.copy_out_s for r in ok]),
            "copy_in_bytes": _median([r.copy_in_bytes for r in ok]),
            "copy_out_bytes": _median([r.copy_out_bytes for r in ok]),
            "copy_via": counted[0].copy_via if counted else None,
        } if staged else None,
        "io": {
            "rchar": _median([r.rchar for r in ok]),
            "wchar": _median([r.wchar for r in ok]),
            "read_bytes": _median([r.read_bytes for r in ok]),
            "write_bytes": _median([r.write_bytes for r in ok]),
            "max_rss_bytes": max((r.maxrss_bytes for r in ok), default=None),
        },
        "cache": {
            "mode": counted[0].cache_mode if counted else None,
            "methods": sorted({r.cache_method for r in counted if r.cache_method}),
            "inputs_resident_median": _median(resident),
            "inputs_resident_max": max((x for x in resident if x is not None), default=None),
        },
        "failures": [{"seq": r.seq, "exit_status": r.exit_status, "stderr_tail": r.stderr_tail} for r in failed],
        "profile": _profile_medians(ok),
        "places_written": _places_written(runs),
        "emulated_targets": sorted({loc.lab for loc in locs if loc.lab and loc.emulated}),
        "run_records": [{**r.to_dict(), "command": redact_command(r.command)} for r in runs],
    }


def _places_written(runs: list[RunRecord]) -> dict[str, bool]:
    """Directory place -> whether any run (warmups and failed runs too) created or changed anything there."""
    out: dict[str, bool] = {}
    for r in runs:
        for key, written in (r.places_written or {}).items():
            out[key] = out.get(key, False) or written
    return out


UNTESTED = "{key}: nothing was written there in any run; the comparison does not test it"


def untested_places(plan: Plan, configs: list[dict[str, Any]], name: str, base: str) -> list[str]:
    """Place keys whose value differs between two configurations although no run wrote anything there."""
    a = next(c for c in configs if c["name"] == name)
    b = next(c for c in configs if c["name"] == base)
    out = []
    for key, role in plan.roles.items():
        if role != "place" or a["parameters"].get(key) == b["parameters"].get(key):
            continue
        seen = [c["places_written"][key] for c in (a, b) if key in c["places_written"]]
        if seen and not any(seen):
            out.append(key)
    return out


def _untested_warnings(plan: Plan, configs: list[dict[str, Any]]) -> list[str]:
    """A warning per place key that varies but was never written: for all its directories, or per configuration."""
    out = []
    for key in plan.dimensions:
        if plan.roles.get(key) != "place":
            continue
        dirs = [c for c in configs if key in c["places_written"]]
        never = [c for c in dirs if not c["places_written"][key]]
        if dirs and len(never) == len(dirs):
            out.append(UNTESTED.format(key=key))
        else:
            out.extend(f"{c['name']}: " + UNTESTED.format(key=f"{key}={c['parameters'][key]}") for c in never)
    return out


def _short(text: str | None, n: int = 160) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "(no stderr)"
    return last if len(last) <= n else last[: n - 1] + "…"


def first_run_advice(settings: Settings, methods: list[str]) -> str:
    """Why a first counted run may be slow, and what to do, for the settings actually used."""
    more = "add --warmup rounds" if settings.warmup else "use --warmup 1"
    if settings.cache == "warm":
        if settings.warmup:
            return (f"not a cold page cache, since --warmup {settings.warmup} ran first; something else settled "
                    f"after it (CPU frequency, the storage's first allocation): {more}")
        return "page cache? use --warmup 1, or --cache cold to measure cold reads every time"
    if "drop-caches" in methods and "fadvise" not in methods:
        return ("not the page cache, which was dropped before every run; start-up effects (CPU frequency, the "
                f"storage's first allocation, the program's first load from disk)? {more}")
    return ("the inputs were evicted before every run (--cache cold), but the program, its libraries and the "
            f"locations' metadata stay cached after the first run: {more}")


def build_report(plan: Plan, settings: Settings, outcome: Outcome, *, provenance: dict[str, Any],
                 interrupted: bool = False) -> dict[str, Any]:
    seed = settings.seed
    by_name: dict[str, list[RunRecord]] = {c.name: [] for c in plan.configurations}
    for r in outcome.records:
        by_name[r.config].append(r)
    configs = [config_result(plan, i, by_name[c.name], seed) for i, c in enumerate(plan.configurations)]
    base = next(c for c in configs if c["name"] == plan.baseline)
    comparisons = []
    for c in configs:
        if c["name"] == base["name"]:
            continue
        frozen = (outcome.decisions or {}).get(c["name"])
        comp = stats.compare(c["name"], c["times"], base["name"], base["times"], seed=seed, decision=frozen,
                             margin=settings.margin).to_dict()
        comp["untested"] = untested_places(plan, configs, c["name"], base["name"])
        for key in comp["untested"]:
            comp["verdict"] += "; " + UNTESTED.format(key=key)
        comparisons.append(comp)

    warnings: list[str] = []
    for c in configs:
        if c["failed_runs"]:
            f = c["failures"][-1]
            warnings.append(f"{c['name']}: {c['failed_runs']} of {c['runs']} runs failed (last: exit "
                            f"{f['exit_status']}: {_short(f['stderr_tail'])}); failed runs are not in the statistics")
        if c["name"] in outcome.given_up:
            warnings.append(f"{c['name']}: stopped after its first {c['runs']} runs all failed")
        if c["first_run_slow"]:
            warnings.append(f"{c['name']}: the first run was slow ({c['times'][0]:.3g} s vs median "
                            f"{c['median']:.3g} s): {first_run_advice(settings, c['cache']['methods'])}")
        if c["outliers"]:
            runs = ", ".join(f"{o['wall_s']:.3g} s" for o in c["outliers"])
            warnings.append(f"{c['name']}: {len(c['outliers'])} outlier(s) by modified z-score ({runs}); "
                            "kept in the statistics")
    if outcome.precision_reached:
        for name, ok in outcome.precision_reached.items():
            if not ok:
                warnings.append(f"{name}: --precision {settings.precision:g}% not reached in --max-runs "
                                f"{settings.max_runs} runs")
    warnings.extend(_untested_warnings(plan, configs))
    for t in {t["target"]: t for c in configs for t in c["lab_targets"] if t["emulation"] == "cgroup"}.values():
        warnings.append(f"{t['target']} throttles only processes in its cgroup (`iolens lab run`); compare runs "
                        "outside it, so its limits do not apply here: use an emulated disk such as lab:hdd")
    if interrupted:
        warnings.append("interrupted: the statistics cover the runs that finished")

    return {
        "tag": TAG,
        "schema_version": SCHEMA_VERSION,
        "command_template": redact_command(plan.template),
        "roles": dict(plan.roles),
        "dimensions": list(plan.dimensions),
        "baseline": plan.baseline,
        "settings": {
            "runs": settings.runs,
            "warmup": settings.warmup,
            "cache": settings.cache,
            "evict": settings.evict if settings.cache == "cold" else None,
            "evict_methods": sorted(outcome.evict_methods),
            "precision_pct": settings.precision,
            "max_runs": settings.max_runs if settings.precision is not None or settings.auto else None,
            "auto": settings.auto,
            "max_time_s": settings.max_time,
            "margin_pct": 100 * settings.margin,
            "alpha": sequential.ALPHA,
            "prepare": redact_command(settings.prepare) if settings.prepare else None,
            "seed": settings.seed,
            "profile": settings.profile,
            "interleaving": "randomized rounds",
        },
        "precision_reached": outcome.precision_reached,
        "looks": outcome.looks,
        "interrupted": interrupted,
        "results": configs,
        "comparisons": comparisons,
        "warnings": warnings,
        "provenance": provenance,
        "store": None,
    }
