"""iolens cost end to end: a real compare run priced from the results store, the lab survey's default mapping,
every JSON key, the HTML page in a headless browser, and bad input as one line each."""

from __future__ import annotations

import json

import pytest

from conftest import iolens
from iolens.render.cost_html import short_verdict
from iolens.store import ResultsStore

OPTION_KEYS = {"name", "storages", "placements", "instance", "time_s", "time_rel", "per_run", "per_month", "cost_rel",
               "parts", "shares", "charges", "on_front", "dominated_by", "best_value", "faster_than_best",
               "more_than_best", "cost_per_pct_saved", "usage", "time_ci", "per_run_ci", "per_month_ci",
               "faster_than_best_ci", "tied_with_best"}
TOP_KEYS = {"tag", "schema_version", "currency", "source", "prices", "settings", "options", "front", "best_value",
            "verdict", "warnings", "notes", "store", "tied", "assumptions"}


def one_line(res) -> str:
    err = res.stderr.strip()
    assert res.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, res.stderr
    return err


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """A tiny real comparison: two placements, 3 runs each, in its own results store."""
    tmp = tmp_path_factory.mktemp("cmp")
    a, b = tmp / "fast", tmp / "slow"
    a.mkdir()
    b.mkdir()
    db = tmp / "results.sqlite"
    res = iolens("compare", "head -c 3000000 /dev/zero > {out:x.bin}; sleep 0.05", "--place", f"out={a},{b}",
                 "--runs", "3", "--db", db, "--seed", "3", "-q")
    assert res.returncode == 0, res.stderr
    return tmp, a, b, db


def test_compare_then_cost_last_table_json_html(compared, tmp_path):
    tmp, a, b, db = compared
    j, h = tmp_path / "cost.json", tmp_path / "cost.html"
    res = iolens("cost", "--last", "--db", db, "--map", f"{a}=aws:ec2-instance-nvme,{b}=aws:ebs-gp3:size=200",
                 "--runs-per-month", "30", "--held-for", "2h", "--json", j, "--html", h)
    assert res.returncode == 0, res.stderr
    rep = json.loads(j.read_text())
    assert set(rep) == TOP_KEYS and rep["tag"] == "iolens-cost" and rep["schema_version"] == [1, 1]
    assert rep["source"]["kind"] == "compare" and rep["source"]["run_id"] == 1
    by = {o["name"]: o for o in rep["options"]}
    assert set(by) == {str(a), str(b)}
    nvme, gp3 = by[str(a)], by[str(b)]
    assert nvme["storages"][0]["option"] == "aws:ec2-instance-nvme" and nvme["instance"]["type"] == "m5d.xlarge"
    assert gp3["storages"][0]["spec"] == "aws:ebs-gp3:size=200" and gp3["instance"]["type"] == "m5.xlarge"
    # gp3 held 2 h per run, 30 runs a month; compute is the measured median wall time
    frac = 7200 / (730 * 3600)
    assert gp3["parts"]["storage"] == pytest.approx(200 * 0.08 * frac)
    assert gp3["parts"]["compute"] == pytest.approx(gp3["time_s"] / 3600 * 0.192)
    assert gp3["per_month"] == pytest.approx(30 * gp3["per_run"])
    # the NVMe instance stays up to hold the data for 2 h
    assert nvme["parts"]["storage"] == pytest.approx((7200 - nvme["time_s"]) / 3600 * 0.226)
    assert gp3["usage"]["written_bytes"] >= 3_000_000
    # the runs' interval of the median time, carried into $ per run and per month
    for o in (nvme, gp3):
        lo, hi = o["time_ci"]
        assert lo <= o["time_s"] <= hi
        assert o["per_run_ci"][0] - 1e-12 <= o["per_run"] <= o["per_run_ci"][1] + 1e-12
        assert o["per_month_ci"] == pytest.approx([30 * x for x in o["per_run_ci"]])
    assert rep["assumptions"] == ("assuming storage held 2h per run, aws:ebs-gp3 200 GB, 30 runs per month")
    assert rep["verdict"].endswith(f" ({rep['assumptions']})")
    assert rep["best_value"] in by and rep["verdict"].startswith(f"{rep['best_value']} is the best value")
    assert rep["best_value"] in rep["front"]
    assert rep["verdict"] in res.stdout.replace("\n", " ") or rep["verdict"][:40] in res.stdout
    assert "months ago" in rep["warnings"][0]  # the shipped snapshot is older than six months
    # stored as a cost run beside the compare run
    with ResultsStore(db) as store:
        runs = store.runs(kind="cost")
        assert len(runs) == 1 and runs[0]["job"]["source"]["run_id"] == 1
        assert {r["name"] for r in store.results(runs[0]["id"])} == set(by)
    assert f"stored as run {rep['store']['run_id']}" in res.stdout
    # the page
    page = h.read_text()
    assert "Pareto front" in page and rep["verdict"].split(";")[0] in page and "<script src=" not in page


def test_html_in_headless_chromium(compared, tmp_path):
    from helpers.browser import load_page

    tmp, a, b, db = compared
    h, j = tmp_path / "cost.html", tmp_path / "cost.json"
    res = iolens("cost", "--last", "--db", db, "--no-store", "--map",
                 f"{a}=aws:ec2-instance-nvme,{b}=aws:ebs-st1:size=500", "--held-for", "always", "--html", h,
                 "--json", j)
    assert res.returncode == 0, res.stderr
    rep = json.loads(j.read_text())
    shot = tmp_path / "cost.png"
    with load_page(h, screenshot=shot) as page:
        assert page.console_errors == [] and page.dialogs == [] and page.blocked == []
        assert page.evaluate("document.querySelectorAll('.js-plotly-plot').length") == 2
        names = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot')[0].data).map(t => t.name)")
        assert "Pareto front" in names and "best value" in names
        # the verdict, its names shortened as on the charts; in full in its tooltip
        assert page.evaluate("document.querySelector('.verdict').textContent") == short_verdict(rep)
        assert page.evaluate("document.querySelector('.verdict').title").startswith(rep["verdict"] + "; ")
        rows = page.evaluate("Array.from(document.querySelectorAll('table')[0].rows).map(r => r.cells[0].textContent)")
        assert rows[1:] == [o["name"] for o in rep["options"]]
    assert shot.stat().st_size > 10_000


def add_compare_run(db, results, locations, status="complete"):
    with ResultsStore(db) as store:
        rid = store.add_run("compare", {"command_template": "step {work}", "configurations": [r[0] for r in results]},
                            {"locations": locations}, status=status)
        for name, params, median, failed in results:
            store.add_result(rid, name, {"parameters": params, "median": median, "failed_runs": failed,
                                         "io": {"rchar": 2 << 30, "wchar": 1 << 30}})
    return rid


def lab_locations(*names):
    return {f"lab:{n}": {"path": f"/lab/{n}", "kind": "dir", "lab": n} for n in names}


def test_lab_survey_maps_the_emulated_volumes_by_default(tmp_path):
    db = tmp_path / "r.sqlite"
    survey = {"gp2": 100, "gp3": 99, "st1": 152, "io2-100": 180, "io2-500": 101, "magnetic": 160, "nvme": 98}
    rid = add_compare_run(db, [(f"work=lab:{n}", {"work": f"lab:{n}"}, t, 0) for n, t in survey.items()],
                          lab_locations(*survey))
    j = tmp_path / "c.json"
    res = iolens("cost", "--run", rid, "--db", db, "--json", j, "--held-for", "always", "--runs-per-month", "100")
    assert res.returncode == 0, res.stderr
    rep = json.loads(j.read_text())
    spec = {o["name"]: o["storages"][0]["spec"] for o in rep["options"]}
    assert spec["work=lab:gp2"] == "aws:ebs-gp2:size=100"  # the size whose limits the lab emulates
    assert spec["work=lab:io2-500"] == "aws:ebs-io2:size=100:iops=500"
    assert spec["work=lab:st1"] == "aws:ebs-st1:size=1024"
    assert spec["work=lab:magnetic"] == "aws:ebs-standard:size=100"
    assert spec["work=lab:nvme"] == "aws:ec2-instance-nvme"
    for o in rep["options"]:
        assert set(o) == OPTION_KEYS
        assert set(o["usage"]) == {"read_bytes", "written_bytes", "stored_bytes", "objects", "write_requests",
                                   "read_requests", "io_requests", "basis"}
        assert set(o["parts"]) == set(o["shares"]) == {"storage", "provisioned", "requests", "retrieval", "data",
                                                       "compute"}
        for c in o["charges"]:
            assert set(c) == {"part", "what", "quantity", "unit", "price", "per_run", "per_month", "basis"}
    by = {o["name"]: o for o in rep["options"]}
    assert by["work=lab:st1"]["dominated_by"] is not None and by["work=lab:io2-100"]["dominated_by"] is not None
    # every volume priced at the size the lab emulates (100 GiB for the SSDs and magnetic): held all month, magnetic's
    # half price per GB outweighs its 60 s more per run
    assert rep["best_value"] == "work=lab:magnetic"
    assert set(rep["settings"]) == {"runs_per_month", "held_for", "held_for_s", "always", "instance", "size_gb",
                                    "stored_gb", "month_hours"}
    assert set(rep["prices"]) == {"file", "as_of", "retrieved", "transcribed", "prices_used",
                                  "prices_transcribed", "warning"}


def test_plain_figures_and_list(tmp_path):
    j = tmp_path / "f.json"
    res = iolens("cost", "--option", "gp2=300", "--option", "aws:ec2-instance-nvme=294", "--option", "st1=456",
                 "--no-store", "--json", j)
    assert res.returncode == 0, res.stderr
    rep = json.loads(j.read_text())
    assert rep["source"]["kind"] == "figures" and rep["source"]["run_id"] is None
    assert [o["name"] for o in rep["options"]] == ["gp2", "aws:ec2-instance-nvme", "st1"]
    listed = iolens("cost", "--list")
    assert listed.returncode == 0 and "aws:ebs-gp3" in listed.stdout and "gp2=aws:ebs-gp2" in listed.stdout


def test_refresh_prices_from_files(tmp_path):
    from conftest import datapath

    out = tmp_path / "p.json"
    files = []
    for f in sorted(datapath("cost").glob("aws-*.json")):
        files += ["--aws-offer", f]
    for f in sorted(datapath("cost").glob("azure-*.json")):
        files += ["--azure-prices", f]
    res = iolens("cost", "--refresh-prices", out, *files)
    assert res.returncode == 0, res.stderr
    assert "prices refreshed" in res.stdout and "not found" in res.stderr
    use = iolens("cost", "--prices", out, "--option", "aws:ebs-gp3=100", "--no-store")
    assert use.returncode == 0, use.stderr
    again = iolens("cost", "--refresh-prices", out, *files)
    assert "already exists" in one_line(again)


def test_bad_input_is_one_line_each(tmp_path, compared):
    _tmp, a, b, db = compared
    assert "no priced option 'aws:ebs-gp9'" in one_line(iolens("cost", "--option", "aws:ebs-gp9=10", "--no-store"))
    assert "neither a priced option" in one_line(iolens("cost", "--option", "gp9=10", "--no-store"))
    assert "write --option OPTION=SECONDS" in one_line(iolens("cost", "--option", "gp2=fast", "--no-store"))
    # a missing price: the user's own file has no gp3
    d = json.loads(_shipped().read_text())
    del d["options"]["aws:ebs-gp3"]
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps(d))
    assert "no priced option 'aws:ebs-gp3'" in one_line(
        iolens("cost", "--prices", mine, "--option", "gp3=10", "--no-store"))
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"tag": "iolens-compare", "schema_version": [1, 0]}))
    assert "is not an iolens price file" in one_line(iolens("cost", "--prices", wrong, "--option", "gp2=1"))
    # a compare run with a failed configuration
    db2 = tmp_path / "r.sqlite"
    rid = add_compare_run(db2, [("work=lab:gp2", {"work": "lab:gp2"}, 10.0, 0),
                                ("work=lab:st1", {"work": "lab:st1"}, 12.0, 2)], lab_locations("gp2", "st1"))
    assert "configuration work=lab:st1 had failed runs" in one_line(iolens("cost", "--run", rid, "--db", db2))
    # a location nobody priced
    assert "has no priced option; map it" in one_line(iolens("cost", "--last", "--db", db, "--map",
                                                             f"{a}=aws:ebs-gp2"))
    assert "--map" in one_line(iolens("cost", "--last", "--db", db, "--map", "oops"))
    assert "say what to price" in one_line(iolens("cost"))
    assert "--held-for" in one_line(iolens("cost", "--option", "gp2=1", "--held-for", "soon"))
    assert "no results store" in one_line(iolens("cost", "--last", "--db", tmp_path / "none.sqlite"))


def _shipped():
    from iolens.cost.prices import default_path

    return default_path()


def test_capture_gives_the_operation_counts(tmp_path):
    cap = tmp_path / "step.iolens"
    script = "head -c 100 /dev/zero > f1 && head -c 20000000 /dev/zero > f2 && cat f2 > /dev/null"
    res = iolens("profile", "-q", "-o", cap, "--", "sh", "-c", script, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    j = tmp_path / "c.json"
    res = iolens("cost", "--option", "aws:s3-standard-ia=10", "--capture", cap, "--no-store", "--json", j)
    assert res.returncode == 0, res.stderr
    o = json.loads(j.read_text())["options"][0]
    u = o["usage"]
    # f1: one PUT; f2 (20 MB = 3 parts of 8 MiB): create + 3 parts + complete
    assert u["write_requests"] == 6 and u["objects"] == 2
    assert u["read_bytes"] == 20_000_000 and u["read_requests"] >= 3
    stored = next(c for c in o["charges"] if "stored" in c["what"])
    assert stored["quantity"] == pytest.approx((128 * 1024 + 20_000_000) / 2**30)  # f1 billed as 128 KB
    assert "1 object raised to 128 KB" in stored["basis"]
