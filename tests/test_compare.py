"""iolens compare: the template, the placement matrix, --config and validation (no command is run)."""

from __future__ import annotations

import os

import pytest

from iolens import lab
from iolens.compare.placements import Placeholder, build_plan, parse_template, split_values
from iolens.compare.strategies import Workspace, prepare, render
from iolens.errors import IolensError, UsageError


def test_template_placeholders_escapes_and_other_braces():
    parts = parse_template("awk '{print $1}' {in} | sort -T {tmp} -o {out:sorted.txt} {{literal}}")
    assert parts == ["awk '{print $1}' ", Placeholder("in", None), " | sort -T ", Placeholder("tmp", None), " -o ",
                     Placeholder("out", "sorted.txt"), " {literal}"]
    with pytest.raises(UsageError, match="must be a file name"):
        parse_template("cat > {out:a/b}")


def test_render_quotes_values_and_devices_take_the_file_slot():
    parts = parse_template("tool {ref} -o {out:aln.sam} -T {tmp}")
    cmd = render(parts, {"ref": ("/data/my ref.fa", False), "out": ("/dev/null", False), "tmp": ("/scratch/x", True)})
    assert cmd == "tool '/data/my ref.fa' -o /dev/null -T /scratch/x"
    assert render(parts[3:4], {"out": ("/d", True)}) == "/d/aln.sam"


def test_matrix_is_the_product_in_template_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    plan = build_plan("sort -@ {t} -T {tmp} -o /dev/null in", places=[f"tmp={a},{b}"], params=["t=1,2"],
                      strategies=["direct", "stage"])
    assert len(plan.configurations) == 8
    assert plan.dimensions == ["t", "tmp", "strategy"]
    first = plan.configurations[0]
    assert first.name == f"t=1 tmp={a} strategy=direct"
    assert first.params == {"t": "1"} and first.places["tmp"].path == str(a) and first.strategy == "direct"
    assert plan.baseline == first.name
    assert len({c.name for c in plan.configurations}) == 8


def test_single_dimension_names_are_the_values(tmp_path):
    plan = build_plan("x > {out:f}", places=[f"out=/dev/null,{tmp_path}"])
    assert [c.name for c in plan.configurations] == ["/dev/null", str(tmp_path)]
    assert plan.configurations[0].places["out"].kind == "device"
    assert plan.configurations[1].places["out"].kind == "dir"


def test_explicit_configs_with_shared_defaults(tmp_path):
    inp = tmp_path / "in.txt"
    inp.write_text("x")
    plan = build_plan("cp {in} {out}", inputs=[f"in={inp}"], places=[f"out={tmp_path}"],
                      configs=[f"local:out={tmp_path}", "staged:strategy=stage", "null:out=/dev/null"],
                      baseline="staged")
    assert [c.name for c in plan.configurations] == ["local", "staged", "null"]
    assert plan.configurations[1].strategy == "stage"
    assert plan.configurations[1].inputs["in"].path == str(inp)
    assert plan.configurations[2].places["out"].path == "/dev/null"
    assert plan.baseline == "staged"
    assert plan.dimensions == ["out", "strategy"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(template="cat {in}", places=["out=/dev/null,/tmp"]), "template uses {in}"),
    (dict(template="cat {in}", inputs=["in=/etc/hostname"], places=["out=/dev/null,/tmp"]), "never uses {out}"),
    (dict(template="echo {t}", params=["t=1"]), "only one configuration"),
    (dict(template="echo {t:x}", params=["t=1,2"]), "only inputs and places take a file name"),
    (dict(template="echo > {out}", places=["out=/no/such/dir,/tmp"]), "no such location"),
    (dict(template="echo > {out}", places=["out=/etc/hostname,/tmp"]), "is a file; a place is a directory"),
    (dict(template="cat {in}", inputs=["in=/no/such/file,/etc/hostname"]), "no such input"),
    (dict(template="echo {t}", params=["t1,2"]), "write --param NAME=VALUE"),
    (dict(template="echo {t}", params=["t=1,,2"]), "empty value"),
    (dict(template="echo {t}", params=["t=1,1"]), "lists a value twice"),
    (dict(template="echo {t}", params=["t=1,2"], strategies=["fast"]), "--strategy fast"),
    (dict(template="echo {t}", params=["t=1,2"], baseline="3"), "--baseline 3: no such configuration"),
    (dict(template="echo {t}", params=["t=1,2"], configs=["a:t=1"]), "cannot be combined"),
    (dict(template="echo {t}", params=["t=1"], configs=["a:t=1", "a:t=2"]), "two configurations are named a"),
    (dict(template="echo {t}", params=["t=1"], configs=["t=1"]), "write --config NAME:key=value"),
    (dict(template="echo {t}", params=["t=1"], configs=["a:u=1", "b:t=2"]), "sets u, which has no role"),
    (dict(template="  "), "template is empty"),
])
def test_mistakes_are_one_line_errors_that_say_what_to_do(kwargs, message):
    with pytest.raises(UsageError) as err:
        build_plan(**kwargs)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_lab_placement_without_a_lab_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("IOLENS_LAB_DIR", str(tmp_path / "no-lab"))
    with pytest.raises(IolensError) as err:
        build_plan("cat > {out:x}", places=["out=/dev/null,lab:ext4"])
    assert "lab:ext4: no lab is up" in str(err.value) and "iolens lab up --only ext4" in str(err.value)
    assert "\n" not in str(err.value)


def test_lab_placement_resolves_through_the_lab(monkeypatch, tmp_path):
    seen = []

    def resolve_target(value):
        seen.append(value)
        return tmp_path

    monkeypatch.setattr(lab, "resolve_target", resolve_target)
    plain = next(t.name for t in lab.TARGETS.values() if not t.emulated)
    plan = build_plan("cat > {out:x}", places=[f"out=/dev/null,lab:{plain}"])
    loc = plan.configurations[1].places["out"]
    assert seen == [f"lab:{plain}"] and loc.path == str(tmp_path) and loc.lab == plain and loc.kind == "dir"
    assert plan.configurations[1].name == f"lab:{plain}"
    assert loc.emulated is False


def test_lab_placement_on_an_emulated_target_is_marked_emulated(monkeypatch, tmp_path):
    monkeypatch.setattr(lab, "resolve_target", lambda value: tmp_path)
    emulated = next(t.name for t in lab.TARGETS.values() if t.emulated)
    (tmp_path / "sub").mkdir()
    plan = build_plan("cat > {out:x}", places=[f"out=/dev/null,lab:{emulated}/sub"])
    loc = plan.configurations[1].places["out"]
    assert loc.lab == emulated and loc.emulated is True and loc.path == str(tmp_path / "sub")
    assert plan.configurations[0].places["out"].emulated is False


# -- values with spaces and commas, and {name!words} -------------------------------------------------------------

def test_backslash_comma_is_a_comma_inside_a_value():
    plan = build_plan("{wrap!words} true", params=[r"wrap=taskset -c 0\,1,nice -n 5,env"])
    assert [c.params["wrap"] for c in plan.configurations] == ["taskset -c 0,1", "nice -n 5", "env"]
    assert [c.name for c in plan.configurations] == ["taskset -c 0,1", "nice -n 5", "env"]
    plan = build_plan("echo {v}", params=["v=x"], configs=[r"pin:v=a\,b", "two:v=y"])
    assert plan.configurations[0].params["v"] == "a,b"
    assert split_values(r"a\\,b\c") == ["a\\", "b\\c"]  # \\ is a backslash; other backslashes stay


def test_words_placeholder_splices_several_quoted_words():
    parts = parse_template("{wrap!words} sort -T {tmp} {x}")
    assert parts[0] == Placeholder("wrap", None, True)
    bound = {"wrap": ("numactl --cpunodebind=0 --membind=0", False), "tmp": ("/s", True), "x": ("a b", False)}
    assert render(parts, bound) == "numactl --cpunodebind=0 --membind=0 sort -T /s 'a b'"
    # quotes group words; shell syntax in a value is quoted, never run
    assert render(parts[:1], {"wrap": ("env 'A=x y' B=1", False)}) == "env 'A=x y' B=1"
    assert render(parts[:1], {"wrap": ("nice; rm -rf x", False)}) == "'nice;' rm -rf x"
    # {name} keeps a value with spaces as one word
    assert render(parse_template("{wrap} x"), {"wrap": ("nice -n 5", False)}) == "'nice -n 5' x"


@pytest.mark.parametrize("kwargs,message", [
    (dict(template="{w!word} true", params=["w=a,b"]), "the only form after '!' is {w!words}"),
    (dict(template="cat {in!words}", inputs=["in=/etc/hostname"], params=[]), "only --param values can be spliced"),
    (dict(template="{w!words} true", params=["w=nice 'x,env"]), "cannot be split into words"),
    (dict(template="echo {t}", params=["t=1"], configs=["a:t=1,,", "b:t=2"]), "is not key=value"),
])
def test_words_and_escape_mistakes_are_one_line_errors(kwargs, message):
    with pytest.raises(UsageError) as err:
        build_plan(**kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_prepare_makes_fresh_directories_and_never_touches_existing_files(tmp_path):
    place = tmp_path / "place"
    place.mkdir()
    (place / "aln.sam").write_text("user data")
    src = tmp_path / "ref.fa"
    src.write_text(">x\nACGT\n")
    plan = build_plan("tool {ref} > {out:aln.sam}", inputs=[f"ref={src}"], places=[f"out={place},/dev/null"],
                      strategies=["direct", "stage"])
    ws = Workspace(str(tmp_path))
    try:
        for i, cfg in enumerate(plan.configurations):
            prep = prepare(ws, cfg, i, 0, plan.parts)
            if cfg.places["out"].kind == "dir":
                out_dir = prep.bound["out"][0]
                assert out_dir.endswith("out") and os.path.isdir(out_dir) and not os.listdir(out_dir)
                if cfg.strategy == "direct":
                    assert out_dir.startswith(str(place) + "/iolens-compare-")
                else:
                    assert prep.copy_out and prep.copy_out[0][1].parent.parent == place
            if cfg.strategy == "stage":
                assert prep.bound["ref"][0] != str(src) and prep.copy_in[0][0].path == str(src)
            else:
                assert prep.bound["ref"][0] == str(src)
    finally:
        ws.cleanup()
    assert (place / "aln.sam").read_text() == "user data"
    assert sorted(p.name for p in place.iterdir()) == ["aln.sam"]
