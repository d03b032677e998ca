"""iolens lab: real storage targets on this machine (loop filesystems, S3 + FUSE, latency, throttles)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import click

from iolens.errors import IolensError, TargetError, UsageError
from iolens.units import human_bytes

DIR_OPTION = click.option("--dir", "lab_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                          help="The lab directory [default: IOLENS_LAB_DIR, else the lab `lab up --dir` brought up "
                               "last, else ~/.local/state/iolens/lab].")


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(i?B)?\s*", text, re.I)
    if not m:
        raise UsageError(f"--size {text!r}: write a size such as 512M or 1G")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2).upper()]


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda msg: None) if quiet else (lambda msg: click.echo(msg))


@click.group(short_help="Real storage targets on this machine, as lab:NAME targets.")
def lab() -> None:
    """Real storage targets on this machine: `lab:NAME` for bench and compare (see docs/lab.md)."""


@lab.command()
@click.option("--only", default=None, metavar="NAMES",
              help="Comma-separated targets to bring up (default: all). `iolens lab status` lists them.")
@DIR_OPTION
@click.option("--size", default="512M", show_default=True, help="Size of each loop image and of the tmpfs.")
@click.option("--disk-size", default=None, metavar="SIZE",
              help="Size of each emulated disk's sparse image [default: the profile's, 2G].")
@click.option("--latency-ms", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Latency toxiproxy adds to each response on the -remote targets.")
@click.option("--bandwidth", "bandwidth_mbps", type=click.FloatRange(min=0), default=50.0, show_default=True,
              help="Bandwidth cap of the -remote targets in MiB/s per connection and direction (0: none).")
@click.option("--credits", "credits_", default=None, metavar="full|empty|PCT",
              help="Burst credits the emulated gp2, st1 and sc1 start with [default: a new volume's, full].")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures.")
def up(only: str | None, lab_dir: Path | None, size: str, disk_size: str | None, latency_ms: float,
       bandwidth_mbps: float, credits_: str | None, quiet: bool) -> None:
    """Bring up lab targets (as root for mounts). Failing targets say why; the others still come up."""
    from iolens.lab import credits
    from iolens.lab import state as st
    from iolens.lab.catalog import parse_only
    from iolens.lab.up import Settings
    from iolens.lab.up import up as bring_up

    targets = parse_only(only)
    try:
        credits.initial_fraction(credits_)
        scale = float(os.environ.get("IOLENS_LAB_TIME_SCALE") or 1)  # tests only: see docs/lab.md
    except (credits.CreditsError, ValueError) as err:
        raise UsageError(str(err) if isinstance(err, credits.CreditsError) else
                         "IOLENS_LAB_TIME_SCALE must be a number >= 1 (a test-only time scale)") from None
    if scale < 1:
        raise UsageError("IOLENS_LAB_TIME_SCALE must be a number >= 1 (a test-only time scale)")
    settings = Settings(size=_size(size), disk_size=_size(disk_size) if disk_size else None, latency_ms=latency_ms,
                        bandwidth_kbps=int(bandwidth_mbps * 1024), credits=credits_, time_scale=scale)
    root = st.lab_dir(lab_dir)
    say = _say(quiet)
    state = bring_up(root, targets, settings, lambda msg: click.echo(msg) if msg.startswith("FAILED") else say(msg))
    if lab_dir is not None and not os.environ.get("IOLENS_LAB_DIR"):
        st.remember(root)  # `bench lab:NAME` finds it without IOLENS_LAB_DIR, until `lab down`
    failed = [t.name for t in targets if state["targets"].get(t.name, {}).get("status") != "up"]
    if failed:
        raise TargetError(f"{len(failed)} of {len(targets)} targets did not come up ({', '.join(failed)}); "
                          f"the others are up in {root}")
    say(f"lab is up in {root}; `iolens lab status` shows it, `iolens lab down` removes it")


@lab.command()
@DIR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON (tag iolens-lab-status, schema [1, 3]).")
def status(lab_dir: Path | None, as_json: bool) -> None:
    """Each target's health, filesystem and limits."""
    from iolens.lab import state as st
    from iolens.lab.status import collect

    root, source = st.where(lab_dir)
    report = collect(root)
    if as_json:
        click.echo(json.dumps(report, indent=1))
        return
    from iolens.names import shown
    from iolens.render.terminal import console

    con = console()

    def echo(line: str) -> None:  # folded as every command's prose: under the line's own indent, paths whole
        con.print(shown(line))

    if not report["lab_up"]:
        echo(f"no lab: {st.not_found_hint(root, source)}; or start one with `iolens lab up`")
        return

    echo(f"lab in {report['dir']}")
    for t in report["targets"]:
        if t["status"] == "down":
            continue
        state = t["status"] if t["status"] != "up" else ("up" if t["healthy"] else "BROKEN")
        line = f"{state:<7} {t['spec']:<18} {t['fstype']:<12} {t['path'] or '-'}"
        echo(line)
        if t["emulation"] == "device":
            lim = t["limits"]
            rate = f"{human_bytes(lim['read_bps'])}/s, {lim['read_iops']} IOPS" if lim else "unthrottled"
            echo(f"        emulated: {t['emulates']}: {rate} (read and write, every process)")
            echo(f"        published: {t['published']}")
        elif t["limits"]:
            lim = t["limits"]
            echo(f"        emulated: {human_bytes(lim['read_bps'])}/s, {lim['read_iops']} IOPS "
                 f"(read and write; O_DIRECT/fsync only) via {Path(t['cgroup'] or '-').name}")
        if t["network"]:
            n = t["network"]
            bw = f"{n['bandwidth_kbps'] / 1024:g} MiB/s per connection" if n["bandwidth_kbps"] else "no bandwidth cap"
            echo(f"        emulated: +{n['latency_ms']:g} ms per response, {bw} (toxiproxy)")
        if t["mount_options"]:
            echo(f"        mount options: {t['mount_options']}")
        for server in t["servers"] or []:
            where = f" in network namespace {server['netns']}" if server.get("netns") else ""
            store = f", {server['storage']}" if server.get("storage") else ""
            echo(f"        server: {server['name']} on {server['address']}{where}{store}")
        if t["clients"]:
            echo(f"        clients: {', '.join(t['clients'])} (one volume; not emulated: no network distance)")
        if t["problem"]:
            echo(f"        problem: {t['problem']}")
        if t["error"]:
            echo(f"        error: {t['error']}" + (f" ({t['hint']})" if t["hint"] else ""))
    down = [t["spec"] for t in report["targets"] if t["status"] == "down"]
    if down:
        echo(f"not set up: {', '.join(down)}")


@lab.command()
@DIR_OPTION
@click.option("-q", "--quiet", is_flag=True)
def down(lab_dir: Path | None, quiet: bool) -> None:
    """Unmount, stop the lab's servers by PID, detach its loop devices and remove the lab directory."""
    from iolens.lab import state as st
    from iolens.lab.down import down as take_down

    root = st.lab_dir(lab_dir)
    problems = take_down(root, _say(quiet))
    if not problems:
        st.forget(root)
    if problems:
        raise IolensError(f"the lab is not fully down: {'; '.join(problems)}; run `iolens lab down` again "
                          "after stopping what uses it")


@lab.command()
@click.option("--no-apt", is_flag=True, help="Skip the Debian packages.")
@click.option("--no-go", is_flag=True, help="Skip the Go builds (versitygw, toxiproxy).")
@click.option("--dry-run", is_flag=True, help="Say what is missing, which targets need it and how long installing "
              "takes; install nothing.")
@click.option("-q", "--quiet", is_flag=True)
def install(no_apt: bool, no_go: bool, dry_run: bool, quiet: bool) -> None:
    """Install the lab's tools: Debian packages (as root) and Go builds into a cache directory, once, saying each
    step and how far the long ones got."""
    from iolens.lab import tools

    if dry_run:
        _say_what_install_would_do(tools.plan(apt=not no_apt, go=not no_go))
        return
    problems = tools.install(apt=not no_apt, go=not no_go, say=_say(quiet))
    if problems:
        raise IolensError("; ".join(problems))
    if not quiet:
        click.echo(f"lab tools are installed (Go builds in {tools.cache_dir() / 'bin'})")


def _say_what_install_would_do(steps: list[str]) -> None:
    from iolens.lab import tools
    from iolens.lab.catalog import TARGETS
    from iolens.lab.kinds import kind_of

    if not steps:
        click.echo("lab install: every lab tool is installed")
        return
    for name in tools.missing(tools.TOOLS):
        users = [t.name for t in TARGETS.values() if name in kind_of(t.kind).needs
                 or (t.remote and name == "toxiproxy-server")]
        if users:
            click.echo(f"lab install: lab:{', lab:'.join(users)} need {name}, not installed")
    click.echo(f"lab install: `iolens lab install` would take {len(steps)} steps (about {tools.INSTALL_MINUTES} "
               f"minutes, once): {'; '.join(steps)}")


@lab.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("target")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@DIR_OPTION
def run(target: str, command: tuple[str, ...], lab_dir: Path | None) -> None:
    """Run COMMAND inside TARGET's throttling cgroup (`iolens lab run throttle -- dd ... iflag=direct`).

    Only the legacy `throttle` target has a cgroup; the emulated disks are slow for every process and need no
    wrapper."""
    from iolens import lab as api

    argv = list(command[1:] if command and command[0] == "--" else command)
    if not argv:
        raise UsageError("give a command to run after the target, e.g. "
                         "`iolens lab run throttle -- dd if=... iflag=direct`")
    joined = api.join_cgroup(target, root=lab_dir)
    if not joined:
        info = api.target_info(target, lab_dir)
        if info["emulation"] == "device":
            click.echo(f"iolens: note: lab:{info['name']} is slow at the device for every process; running the "
                       "command as it is", err=True)
        else:
            click.echo(f"iolens: note: lab:{info['name']} has no limits; running unthrottled", err=True)
    exe = shutil.which(argv[0])
    if exe is None:
        raise UsageError(f"{argv[0]}: command not found")
    sys.stdout.flush()
    os.execv(exe, argv)
