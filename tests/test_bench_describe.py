"""`iolens-bench --describe` against what the engine's job parser really accepts.

The vocabulary is one X-macro list per field in native/bench/bench.h; the parser's name tables and --describe are
made from it.  These tests hold the description to the parser: every described name runs, an unknown one is refused
with a message naming it, and an op's kind and io say what the engine does with it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from iolens.bench import engine, metrics

DESC = engine.describe()

# the fields each kind of op needs, from the parser's checks (null engine: nothing touches a disk)
NEEDS = {"seq": {"size": 8192}, "rand": {"file_size": 8192, "ops": 2}, "small": {"count": 2}, "util": {"paths": []}}


@pytest.fixture
def work(tmp_path) -> Path:
    d = tmp_path / "iolens-bench-describe"
    d.mkdir()
    return d


def run_group(work: Path, **group) -> dict:
    job = {"dirs": [str(work)], "phases": [{"name": "p", "groups": [{"bs": 4096, **group}]}]}
    return engine.run_job(job)


def raw(work: Path, **group) -> tuple[int, dict]:
    """The engine run directly: its exit status and result, without run_job's checks in between."""
    job = {"schema_version": list(engine.JOB_SCHEMA), "dirs": [str(work)],
           "phases": [{"name": "p", "groups": [{"bs": 4096, **group}]}]}
    p = subprocess.run([engine.engine_path(), "-"], input=json.dumps(job), capture_output=True, text=True,
                       timeout=60)
    return p.returncode, json.loads(p.stdout)


def test_describe_is_tagged_and_lists_every_field():
    assert DESC["tag"] == "iolens-bench-describe"
    assert {"ops", "contents", "syncs", "layouts", "engines"} <= set(DESC)
    for name, op in DESC["ops"].items():
        assert op["kind"] in NEEDS, name
        assert op["io"] in ("read", "write", "mixed", "none"), name
        assert op["doc"], name


@pytest.mark.parametrize("op", sorted(DESC["ops"]))
def test_every_described_op_runs(work, op):
    res = run_group(work, op=op, engine="null", **NEEDS[DESC["ops"][op]["kind"]])
    assert res["status"] == "ok", res["error"]
    if DESC["ops"][op]["kind"] != "util":  # remove is untimed: no group in the result
        (g,) = res["phases"][0]["groups"]
        assert g["op"] == op


@pytest.mark.parametrize("op", sorted(o for o, d in DESC["ops"].items() if d["kind"] in ("rand", "small")))
def test_an_ops_kind_decides_what_it_needs(work, op):
    kind = DESC["ops"][op]["kind"]
    rc, res = raw(work, op=op, engine="null")
    field = "file_size" if kind == "rand" else "count"
    assert rc == 2 and res["error"]["message"] == f"phase 0 (p) group 0: {op} needs {field}"


@pytest.mark.parametrize("op", sorted(o for o, d in DESC["ops"].items() if d["kind"] != "util"))
def test_an_ops_io_decides_whether_it_takes_content(work, op):
    """Ops that write data (io write or mixed) take a content pool and the result names it; the others do not."""
    d = DESC["ops"][op]
    first = {"op": "create", "count": 2, "size": 10} if d["kind"] == "small" else {"op": "write", "file": "f",
                                                                                    "size": 8192}
    group = {"op": op, "content": "zeros", "file": "f", "prefix": "new" if op == "create" else "files",
             **NEEDS[d["kind"]]}
    res = engine.run_job({"dirs": [str(work)], "phases": [{"name": "first", "groups": [first]},
                                                          {"name": "p", "groups": [group]}]})
    assert res["status"] == "ok", res["error"]
    g = res["phases"][1]["groups"][0]
    assert (g["content"] == "zeros") == (d["io"] in ("write", "mixed")), (op, g["content"])


@pytest.mark.parametrize("field, what", [("contents", "content"), ("syncs", "sync"), ("layouts", "layout"),
                                         ("engines", "engine")])
def test_every_described_name_is_accepted(work, field, what):
    for name in engine.names(field):
        group = {"op": "remove", "paths": []} if what == "engine" else {"op": "write", "engine": "null",
                                                                         "size": 8192}
        group[what] = name
        if name == "template":
            group["template"] = "/dev/null"
        rc, res = raw(work, **group)
        assert rc == 0 and res["status"] == "ok", (what, name, res["error"])


@pytest.mark.parametrize("field, message", [
    ("op", 'unknown op "frobnicate"'), ("engine", 'unknown engine "frobnicate"'), ("content", "unknown content"),
    ("sync", "unknown sync mode"), ("layout", "unknown layout")])
def test_an_unknown_name_is_refused_clearly(work, field, message):
    group = {"op": "write", "engine": "null", "size": 8192, field: "frobnicate"}
    rc, res = raw(work, **group)
    assert rc == 2 and res["status"] == "error"
    assert res["error"]["message"] == f"phase 0 (p) group 0: {message}"
    with pytest.raises(engine.EngineError, match=message):
        engine.raise_for_error(engine.run_job({"dirs": [str(work)], "phases": [{"name": "p", "groups": [group]}]}),
                               [str(work)])


def test_op_names_selects_by_kind_and_io():
    assert engine.op_names() == frozenset(DESC["ops"])
    assert engine.op_names(kind="rand") == {"randread", "randwrite", "randrw"}
    assert engine.op_names(kind="small", io="read") == {"readfiles"}
    assert engine.names("contents")[0] == "random"
    with pytest.raises(ValueError):
        engine.names("colours")


def test_the_metrics_op_sets_agree_with_the_engine():
    """metrics.py still spells its op sets out; until it asks the engine, they must say what the engine says."""
    assert metrics.READ_OPS == engine.op_names(io="read")
    assert metrics.WRITE_OPS == engine.op_names(io="write")
    assert metrics.SEQ_OPS == engine.op_names(kind="seq")
    assert metrics.RAND_OPS == engine.op_names(kind="rand")
    assert metrics.SMALL_OPS == engine.op_names(kind="small")
