"""conda/recipe.yaml: parsed and rendered by rattler-build (its Python package) for linux-64 and linux-aarch64, with
conda-forge's compiler and sysroot variants, and kept equal to pyproject.toml (version, run requirements). No
conda channel is reachable here, so the recipe is checked this way, not built."""

from __future__ import annotations

import re
import tomllib

import pytest

from conftest import HERE, unavailable

REPO = HERE.parent
RECIPE = REPO / "conda" / "recipe.yaml"
# PyPI name -> conda-forge name, where they differ
CONDA_NAMES = {"zlib-ng": "python-zlib-ng", "isal": "python-isal"}
VARIANTS = {"c_compiler": ["gcc"], "c_compiler_version": ["13"], "c_stdlib": ["sysroot"],
            "c_stdlib_version": ["2.17"], "python": ["3.12"]}


@pytest.fixture(scope="module")
def rb():
    try:
        import rattler_build
    except ImportError:
        unavailable("py-rattler-build is not installed: the test extra has it (pip install '.[test]')")
    return rattler_build


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _conda_spec(req: str) -> str:
    name, spec = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", req).groups()
    return f"{CONDA_NAMES.get(name.lower(), name.lower())} {spec}".strip()


@pytest.mark.parametrize("platform", ["linux-64", "linux-aarch64"])
def test_recipe_renders_and_matches_pyproject(rb, platform):
    from iolens import __version__

    recipe = rb.Stage0Recipe.from_file(str(RECIPE))
    (variant,) = recipe.render(rb.VariantConfig(VARIANTS),
                               rb.RenderConfig(platform=rb.PlatformConfig(target_platform=platform)))
    d = variant.recipe.to_dict()
    assert variant.recipe.package.name == "iolens" and str(variant.recipe.package.version) == __version__
    req = d["requirements"]
    assert f"gcc_{platform} 13.*" in req["build"] and f"sysroot_{platform} 2.17.*" in req["build"]
    assert "scikit-build-core >=0.9" in req["host"]
    project = _pyproject()["project"]
    want = [f"python {project['requires-python']}"] + [_conda_spec(r) for r in project["dependencies"]]
    assert req["run"] == want


def test_recipe_test_runs_the_wheels_smoke_test(rb):
    tests = rb.Stage0Recipe.from_file(str(RECIPE)).to_dict()["tests"]
    script = next(t for t in tests if "script" in t)
    assert script["script"]["content"] == ["iolens --version", "iolens doctor", "bash dev/smoke"]
    assert script["files"]["source"] == ["dev/smoke"] and (REPO / "dev" / "smoke").is_file()
