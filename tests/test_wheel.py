"""The installable forms of iolens: the manylinux2014 wheels for x86_64 and aarch64 that dev/build-dist makes (zig
cc for glibc 2.17, auditwheel), their checks, the sdist building from source, and a wheel installed into a fresh
venv running profile, report, bench and replay on a machine whose compilers are hidden."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import HERE, unavailable

REPO = HERE.parent
ARCHES = ("x86_64", "aarch64")
NATIVE = {"libiolens_preload.so", "libiolens_redact.so", "iolens-bench", "iolens-replay"}
# What a compiler-free machine lacks: the C compilers and their drivers, assemblers and linkers, the build tools,
# and zig (the test venv's, which the fresh venv could otherwise reach)
# (never the dynamic loader: /usr/bin/ld.so is a link to it)
_TRIPLE = f"/usr/bin/{platform.machine()}-linux-gnu"
COMPILER_GLOBS = ("/usr/bin/cc", "/usr/bin/gcc*", "/usr/bin/c89*", "/usr/bin/c99*", "/usr/bin/cpp*", "/usr/bin/g++*",
                  "/usr/bin/c++", "/usr/bin/clang*", "/usr/bin/tcc", "/usr/bin/ld", "/usr/bin/ld.bfd",
                  "/usr/bin/ld.gold", "/usr/bin/ld.lld", "/usr/bin/as", f"{_TRIPLE}-gcc*", f"{_TRIPLE}-g++*",
                  f"{_TRIPLE}-cpp*", f"{_TRIPLE}-as", f"{_TRIPLE}-ld*", "/usr/bin/make", "/usr/bin/cmake",
                  "/usr/bin/ninja", "/usr/lib/gcc/*/*/cc1*", "/usr/lib/gcc/*/*/collect2", "/usr/libexec/gcc/*/*/cc1*")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # the first test builds the wheels (zig, cold: minutes)


def _wheelcheck():
    spec = importlib.util.spec_from_file_location("wheelcheck", REPO / "dev" / "wheelcheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """dev/build-dist's sdist and two wheels, and what it found (its --json)."""
    for mod in ("ziglang", "build", "auditwheel", "elftools"):
        if importlib.util.find_spec(mod) is None:
            unavailable(f"{mod} is not installed: the test extra has it (pip install '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, str(REPO / "dev" / "build-dist"), "-o", str(out),
                          "--json", str(out / "dist.json")], capture_output=True, text=True, timeout=1200)
    print(res.stdout)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads((out / "dist.json").read_text())


def test_wheels_are_manylinux2014_for_both_architectures(dist):
    assert [w["arch"] for w in dist["wheels"]] == list(ARCHES)
    for w in dist["wheels"]:
        assert f"-py3-none-manylinux2014_{w['arch']}." in w["wheel"]
        assert f'platform tag: "manylinux_2_17_{w["arch"]}"' in w["auditwheel"], w["auditwheel"]
        assert 200_000 < w["bytes"] < 5_000_000


def test_every_binary_is_of_its_architecture_and_needs_glibc_2_17_at_most(dist):
    machine = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}
    for w in dist["wheels"]:
        assert w["problems"] == []
        assert set(w["files"]) == NATIVE
        for name, info in w["files"].items():
            assert info["machine"] == machine[w["arch"]], name
            assert info["type"] == ("ET_DYN" if name.endswith(".so") else "ET_EXEC"), name
            assert info["glibc"] is not None and tuple(map(int, info["glibc"][6:].split("."))) <= (2, 17), name


def test_the_interposer_exports_every_hook_it_defines_and_binds_lazily(dist):
    hooks = _wheelcheck().defined_hooks()
    assert len(hooks) > 150  # the sources' IOLENS_API definitions and hooks.h rows were found
    for w in dist["wheels"]:
        pre = w["files"]["libiolens_preload.so"]
        assert pre["missing"] == [] and pre["exported"] == pre["hooks"] == len(hooks), w["arch"]
        assert pre["bind_now"] is False


def test_the_checks_catch_a_newer_glibc_and_pass_the_installed_build(tmp_path):
    """The wheel's checks on this machine's own gcc build (the one the other tests run): every hook exported, bound
    lazily, and too new for glibc 2.17 (Debian 12 has 2.36), which the check must say."""
    from iolens.native import NATIVE_DIR

    fake = tmp_path / "iolens-0-py3-none-linux.whl"
    with zipfile.ZipFile(fake, "w") as zf:
        for name in NATIVE:
            zf.write(NATIVE_DIR / name, f"iolens/_native/{name}")
    check = _wheelcheck().check_wheel(fake, platform.machine(), "2.17")
    pre = check["files"]["libiolens_preload.so"]
    assert pre["missing"] == [] and pre["bind_now"] is False
    assert any("needs GLIBC_2.3" in p for p in check["problems"]), check["problems"]
    assert not any("hooks" in p or "BIND_NOW" in p for p in check["problems"])


def test_the_sdist_builds_from_source(dist, tmp_path):
    sdist = Path(dist["sdist"]["path"])
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"pyproject.toml", "CMakeLists.txt", "native/preload/hooks.h", "native/tools/gen_format.c",
            "src/iolens/__init__.py", "dev/smoke"} <= names
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(sdist)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = tmp_path.glob("iolens-*.whl")
    assert "-py3-none-linux_" in wheel.name
    with zipfile.ZipFile(wheel) as zf:
        got = set(zf.namelist())
    assert {f"iolens/_native/{n}" for n in NATIVE} | {"iolens/_format.py"} <= got


def _purelib(python: str) -> str:
    return subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()


def _compilers() -> list[str]:
    found = {os.path.realpath(p) for g in COMPILER_GLOBS for p in glob.glob(g)}
    spec = importlib.util.find_spec("ziglang")
    if spec and spec.origin:
        found |= {str(p) for p in Path(spec.origin).parent.glob("zig") if p.is_file()}
    return sorted(p for p in found if os.path.isfile(p))


def test_the_wheel_runs_in_a_fresh_venv_with_compilers_hidden(dist, tmp_path):
    """The host's wheel in a new venv; its dependencies are the test venv's (a .pth after the venv's own
    site-packages: pip would fetch the same from PyPI, for minutes), the wheel's iolens is the one imported."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        unavailable("hiding the compilers needs root and unshare (util-linux) for a mount namespace")
    (wheel,) = [w["path"] for w in dist["wheels"] if w["arch"] == platform.machine()]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", wheel], check=True, capture_output=True, timeout=300)
    Path(_purelib(str(venv / "bin" / "python")), "zz-test-deps.pth").write_text(_purelib(sys.executable) + "\n")
    hidden = _compilers()
    assert any(Path(p).name.startswith("gcc") or Path(p).name == "cc1" for p in hidden), hidden
    script = r"""
set -eu
for f in "$@"; do mount --bind /dev/null "$f"; done
for c in cc gcc as ld make cmake; do
  if command -v "$c" >/dev/null && "$c" --version >/dev/null 2>&1; then echo "$c still works" >&2; exit 97; fi
done
if python -m ziglang version >/dev/null 2>&1; then echo "zig still works" >&2; exit 97; fi
python -c 'import iolens, sys; assert iolens.__file__.startswith(sys.prefix), iolens.__file__'
exec "$SMOKE" "$WORK"
"""
    env = {**os.environ, "PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "SMOKE": str(REPO / "dev" / "smoke"),
           "WORK": str(tmp_path / "work")}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    res = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script, "mask", *hidden],
                         capture_output=True, text=True, env=env, timeout=500)
    print(res.stderr)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "smoke: profile, report, bench and replay ran" in res.stderr
