"""`iolens --help` and `--version` import no subcommand (nor rich, numpy, scipy, the store or the native format
module): each command loads when it runs, and the command list comes from the generated summaries, which must
match the commands' own help (timings: benchmarks/cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)

HEAVY = ("rich", "numpy", "scipy", "plotly", "iolens.store", "iolens._format", "iolens.analysis", "iolens.capture")


def _run(argv: list[str]) -> str:
    """Code that runs `iolens ARGV` in-process, as the script does (exit 0, or 2 for no arguments)."""
    return (f"from iolens.cli import main\ntry:\n    main({argv!r}, prog_name='iolens')\n"
            "except SystemExit as e:\n    assert e.code in (0, 2), e.code")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def _heavy(mods: set[str]) -> list[str]:
    from iolens.commands import COMMANDS

    commands = {f"iolens.commands.{c}" for c in COMMANDS}
    return sorted(m for m in mods if m in commands or any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_cli_imports_no_command_and_nothing_heavy():
    mods = _modules_after("import iolens.cli")
    assert "click" in mods and "iolens.cli" in mods
    assert _heavy(mods) == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_command(argv):
    mods = _modules_after(_run(argv))
    assert ("iolens.commands._summaries" in mods) == (argv != ["--version"])
    assert _heavy(mods) == []


def test_a_command_loads_when_it_runs():
    mods = _modules_after(_run(["wrap", "--help"]))
    assert _heavy(mods) == ["iolens.commands.wrap"]


def test_command_list_is_the_commands_own_help():
    """The lazy group's --help equals a group holding every command object, at two widths."""
    import click
    from click.testing import CliRunner

    from iolens import __version__
    from iolens.cli import main
    from iolens.commands import COMMANDS, load

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="iolens")
    def eager() -> None:
        """Profile the file I/O of genomics pipeline steps, benchmark storage, and advise where data should live."""

    for name in COMMANDS:
        eager.add_command(load(name))
    for width in (80, 200):
        ours = CliRunner().invoke(main, ["--help"], prog_name="iolens", terminal_width=width)
        theirs = CliRunner().invoke(eager, ["--help"], prog_name="iolens", terminal_width=width)
        assert ours.exit_code == theirs.exit_code == 0
        assert ours.output == theirs.output
        assert all(f"\n  {name} " in ours.output for name in COMMANDS)


def test_generated_summaries_are_current():
    from pathlib import Path

    import iolens.commands
    from iolens.commands.gen_summaries import render

    current = Path(iolens.commands.__file__).with_name("_summaries.py").read_text()
    assert current == render(), "run: PYTHONPATH=src python -m iolens.commands.gen_summaries"


def test_every_command_shows_its_help_and_unknown_ones_are_one_error():
    from click.testing import CliRunner

    from iolens.cli import main
    from iolens.commands import COMMANDS

    for name in COMMANDS:
        res = CliRunner().invoke(main, [name, "--help"], prog_name="iolens")
        assert res.exit_code == 0 and res.output.startswith(f"Usage: iolens {name} "), (name, res.output)
    res = CliRunner().invoke(main, ["no-such-command"], prog_name="iolens")
    assert res.exit_code == 2 and "No such command 'no-such-command'" in res.output


def _script(args: list[str], columns: int, entry: str) -> subprocess.CompletedProcess:
    """`iolens ARGS` through an entry point (`iolens.entry` or `iolens.cli`), with argv[0] the installed script's
    name, stdout a pipe and COLUMNS set; prints the modules loaded at the end on stderr."""
    code = (f"import json, sys\nsys.argv = ['iolens', *{args!r}]\nfrom {entry} import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "sys.stderr.write(json.dumps(sorted(sys.modules)))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**__import__("os").environ, "COLUMNS": str(columns)})


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
@pytest.mark.parametrize("columns", [80, 200, 60])
def test_the_script_answers_help_and_version_as_click_does_without_click(args, columns):
    fast, slow = _script(args, columns, "iolens.entry"), _script(args, columns, "iolens.cli")
    assert fast.stdout == slow.stdout and fast.stdout.startswith(("Usage: iolens", "iolens, version"))
    loaded = set(json.loads(fast.stderr))
    if columns >= 80 or args == ["--version"]:  # a narrower terminal gets click's own wrapping
        assert "click" not in loaded and "iolens.cli" not in loaded
    else:
        assert "click" in loaded


def test_the_script_hands_everything_else_to_click():
    res = _script(["profile", "--help"], 80, "iolens.entry")
    assert res.stdout.startswith("Usage: iolens profile ") and "click" in json.loads(res.stderr)


def test_help_at_80_columns_cuts_no_command_summary():
    """Each command's one line in `iolens --help` is whole at 80 columns: no summary cut short with "..."."""
    import os

    from iolens.commands import COMMANDS

    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "iolens"), "--help"], capture_output=True,
                         text=True, check=True, env={**os.environ, "COLUMNS": "80"})
    listed = res.stdout.partition("Commands:\n")[2]
    assert "..." not in listed, listed
    assert all(f"\n  {name} " in "\n" + listed for name in COMMANDS), listed
    assert max(len(line) for line in listed.splitlines()) <= 80, listed
