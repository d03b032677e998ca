r"""The command template, its placeholders and the configurations to compare (parse and validate; no running).

A placeholder is `{name}`, `{name:file}` or `{name!words}`; `{{` and `}}` are literal braces, and any other
brace is left as it is (so `awk '{print $1}'` needs no escaping).  `{name}` is one shell word (the value,
quoted); `{name!words}` splits a --param value into words as the shell would (quotes group) and splices each
as a quoted word, so a wrapper such as `nice -n 5` or `taskset -c 0,1` runs as a command.  In the value lists
of --input/--place/--param and in --config, `\,` is a comma inside a value and `\\` a backslash.
Each name has a role:

- input: a file or directory the command reads (`--input`), used in place or staged;
- place: an output/temp location (`--place`): a directory, in which a fresh directory is made per run, or a
  device such as /dev/null, used as it is;
- param: a literal value (`--param`).

`strategy` (direct or stage) is one more dimension.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import stat
from collections.abc import Sequence, Set
from dataclasses import dataclass, field

from iolens import lab, resolve
from iolens.errors import UsageError
from iolens.redact import MASK

STRATEGIES = ("direct", "stage")
ROLES = ("input", "place", "param")
TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}\s]*)|!([A-Za-z]*))?\}")
CONVERSIONS = ("words",)
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Placeholder:
    name: str
    file: str | None  # the part after ':' in {name:file}
    words: bool = False  # {name!words}: the value split into shell words, each quoted


def parse_template(template: str) -> list[str | Placeholder]:
    """Literal text and placeholders, in order."""
    parts: list[str | Placeholder] = []
    pos = 0
    buf = []
    for m in TOKEN.finditer(template):
        buf.append(template[pos : m.start()])
        tok = m.group(0)
        if tok == "{{":
            buf.append("{")
        elif tok == "}}":
            buf.append("}")
        else:
            parts.append("".join(buf))
            buf = []
            f, conv = m.group(2), m.group(3)
            if f is not None and (f == "" or "/" in f or f in (".", "..")):
                raise UsageError(f"placeholder {tok}: the part after ':' must be a file name, like {{out:aln.sam}}")
            if conv is not None and conv not in CONVERSIONS:
                raise UsageError(f"placeholder {tok}: the only form after '!' is {{{m.group(1)}!words}}, which "
                                 "splices a --param value as several words")
            parts.append(Placeholder(m.group(1), f, conv == "words"))
        pos = m.end()
    buf.append(template[pos:])
    parts.append("".join(buf))
    return [p for p in parts if p != ""]


def placeholder_names(parts: list[str | Placeholder]) -> list[str]:
    seen: list[str] = []
    for p in parts:
        if isinstance(p, Placeholder) and p.name not in seen:
            seen.append(p.name)
    return seen


@dataclass
class Location:
    """A resolved value of an input or place key."""

    raw: str  # as the user gave it
    path: str  # local path (after lab: resolution)
    kind: str  # "dir", "file" or "device"
    lab: str | None = None  # the lab target's name when raw is lab:NAME[/sub/path]
    emulated: bool = False  # the lab target emulates other storage (its limits are applied)


@dataclass
class Configuration:
    name: str
    strategy: str
    values: dict[str, str]  # key -> raw value
    inputs: dict[str, Location] = field(default_factory=dict)
    places: dict[str, Location] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)  # the values as reports and the store show them (secrets ***)

    def describe(self) -> dict[str, str]:
        return {**self.values, "strategy": self.strategy}


@dataclass
class Plan:
    template: str
    parts: list[str | Placeholder]
    roles: dict[str, str]
    configurations: list[Configuration]
    baseline: str
    dimensions: list[str]  # keys that vary between configurations


def split_values(text: str) -> list[str]:
    r"""Split at commas: `\,` is a comma inside a value and `\\` a backslash; any other backslash stays as it is."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] in (",", "\\"):
            cur.append(text[i + 1])
            i += 2
            continue
        if c == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def split_assignment(opt: str, text: str) -> tuple[str, list[str]]:
    key, eq, vals = text.partition("=")
    key = key.strip()
    if not eq or not NAME.match(key) or vals == "":
        raise UsageError(f"{opt} {text!r}: write {opt} NAME=VALUE[,VALUE...], e.g. {opt} out=/dev/null,/scratch")
    values = split_values(vals)
    if any(v == "" for v in values):
        raise UsageError(f"{opt} {text!r} has an empty value; remove the extra comma (write \\, for a comma "
                         "inside a value)")
    if len(set(values)) != len(values):
        raise UsageError(f"{opt} {text!r} lists a value twice")
    return key, values


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    name, colon, rest = text.partition(":")
    name = name.strip()
    if not colon or not name or "=" in name:
        raise UsageError(f"--config {text!r}: write --config NAME:key=value,key=value (NAME labels the configuration)")
    values: dict[str, str] = {}
    for item in split_values(rest):
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or not NAME.match(key) or val == "":
            raise UsageError(f"--config {text!r}: {item!r} is not key=value (write \\, for a comma inside a value)")
        if key in values:
            raise UsageError(f"--config {text!r} sets {key} twice")
        values[key] = val
    return name, values


def resolve_lab(value: str) -> str:
    """lab:NAME[/sub/path] -> a local path, through `iolens lab`."""
    spec, _slash, sub = value.partition("/")  # lab:NAME/sub/path -> inside the target's directory
    try:
        base = str(lab.resolve_target(spec))
    except (KeyError, LookupError, OSError) as err:
        raise UsageError(f"{value}: {err}; start it with `iolens lab up` or check `iolens lab status`") from None
    return os.path.join(base, sub) if sub else base


def _where(key: str, raw: str) -> resolve.Resolved:
    try:
        return resolve.parse(raw)
    except UsageError as err:
        raise UsageError(f"{key}={raw}: {err}") from None


def resolve_location(key: str, role: str, raw: str) -> Location:
    lab_name = None
    path = raw
    emulated = False
    where = _where(key, raw)
    if where.target is not None:
        lab_name = where.target.name
        path = resolve_lab(raw)
        emulated = where.emulated
    path = os.path.expanduser(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        what = "input" if role == "input" else "location"
        raise UsageError(f"{key}={raw}: no such {what}; create it or fix the path") from None
    except OSError as err:
        raise UsageError(f"{key}={raw}: cannot use it ({err.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        kind = "dir"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        kind = "device"
    else:
        raise UsageError(f"{key}={raw}: not a file, directory or device")
    if role == "input":
        if kind == "device":
            raise UsageError(f"--input {key}={raw}: an input must be a file or a directory")
        if not os.access(path, os.R_OK):
            raise UsageError(f"--input {key}={raw}: not readable")
    else:
        if kind == "file":
            raise UsageError(f"--place {key}={raw} is a file; a place is a directory (iolens makes a fresh "
                             "directory in it for every run) or a device like /dev/null; give input files with --input")
        if kind == "dir" and not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"--place {key}={raw}: directory is not writable; choose another location")
    return Location(raw=raw, path=path, kind=kind, lab=lab_name, emulated=emulated)


def _declare(inputs: list[str], places: list[str], params: list[str]
             ) -> tuple[dict[str, str], dict[str, list[str]], list[str]]:
    """--input/--place/--param -> (name -> role, name -> values, names in the order given)."""
    roles: dict[str, str] = {}
    declared: dict[str, list[str]] = {}
    order: list[str] = []
    for opt, role, items in (("--input", "input", inputs), ("--place", "place", places), ("--param", "param", params)):
        for text in items:
            key, values = split_assignment(opt, text)
            if key in roles:
                raise UsageError(f"{key} is given twice ({opt} and --{roles[key]}); give each name once")
            if key == "strategy":
                raise UsageError("strategy is not a placeholder; use --strategy direct,stage")
            roles[key] = role
            declared[key] = values
            order.append(key)
    return roles, declared, order


def _check_strategies(strategies: Sequence[str] | None) -> list[str]:
    values = list(strategies) if strategies else ["direct"]
    for s in values:
        if s not in STRATEGIES:
            raise UsageError(f"--strategy {s}: choose from {', '.join(STRATEGIES)}")
    return values


def _check_configs(explicit: list[tuple[str, dict[str, str]]], roles: dict[str, str]) -> None:
    for _name, values in explicit:
        for key, val in values.items():
            if key == "strategy":
                if val not in STRATEGIES:
                    raise UsageError(f"--config strategy={val}: choose from {', '.join(STRATEGIES)}")
                continue
            if key not in roles:
                raise UsageError(f"--config sets {key}, which has no role; declare it with --input {key}=..., "
                                 f"--place {key}=... or --param {key}=...")


def _check_placeholders(parts: list[str | Placeholder], used: list[str], roles: dict[str, str]) -> None:
    for key in used:
        if key not in roles:
            raise UsageError(f"the template uses {{{key}}}, but nothing gives it a value; add --input, --place or "
                             f"--param {key}=..., or write {{{{{key}}}}} for literal braces")
    for key in roles:
        if key not in used:
            raise UsageError(f"{key} is given but the template never uses {{{key}}}")
    for p in parts:
        if isinstance(p, Placeholder) and p.file is not None and roles[p.name] == "param":
            raise UsageError(f"{{{p.name}:{p.file}}}: only inputs and places take a file name")
        if isinstance(p, Placeholder) and p.words and roles[p.name] != "param":
            raise UsageError(f"{{{p.name}!words}}: only --param values can be spliced as words; "
                             f"{p.name} is a path, write {{{p.name}}}")


def _check_words(parts: list[str | Placeholder], raw: list[tuple[str, dict[str, str]]]) -> None:
    """Every value spliced by {name!words} must split into shell words."""
    for name in {p.name for p in parts if isinstance(p, Placeholder) and p.words}:
        for value in {values[name] for _n, values in raw}:
            try:
                shlex.split(value)
            except ValueError as err:
                raise UsageError(f"{name}={value!r} cannot be split into words for {{{name}!words}} ({err}); "
                                 "close the quote") from None


def _explicit_configurations(explicit: list[tuple[str, dict[str, str]]], order: list[str],
                             declared: dict[str, list[str]], strategy_values: list[str], several_strategies: bool
                             ) -> tuple[list[tuple[str, dict[str, str]]], list[str]]:
    """--config: each configuration is the declared defaults overridden by its own values."""
    multi = [k for k in order if len(declared[k]) > 1]
    if multi:
        raise UsageError(f"--config and several values for {multi[0]} cannot be combined; give the matrix "
                         "with --input/--place/--param or the configurations with --config, not both")
    if several_strategies:
        raise UsageError("--config and --strategy direct,stage cannot be combined; set strategy= in each --config")
    names = [n for n, _v in explicit]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two configurations are named {sorted(dup)[0]}; give each a different NAME")
    raw: list[tuple[str, dict[str, str]]] = []
    for name, values in explicit:
        full = {k: declared[k][0] for k in order if declared[k]}
        full["strategy"] = strategy_values[0]
        full.update(values)
        raw.append((name, full))
    dims = [k for k in [*order, "strategy"] if len({v[k] for _n, v in raw}) > 1]
    return raw, dims


def hidden_values(parts: list[str | Placeholder], roles: dict[str, str],
                  raw: list[tuple[str, dict[str, str]]]) -> set[tuple[str, str]]:
    """(key, value) of the --param values that redaction hides once they are in the command (`--token {tok}`,
    a secret-shaped `--key {k}`): reports, names and the store show them as ***."""
    from iolens.compare.strategies import render
    from iolens.redact import redact_command

    hidden = set()
    for _name, values in raw:
        command = render(parts, {p.name: (values.get(p.name, ""), False) for p in parts if isinstance(p, Placeholder)})
        shown = redact_command(command)
        hidden |= {(k, v) for k, v in values.items()
                   if roles.get(k) == "param" and v and command.count(v) > shown.count(v)}
    return hidden


def _matrix_configurations(order: list[str], used: list[str], declared: dict[str, list[str]],
                           strategy_values: list[str], hidden: Set[tuple[str, str]] = frozenset()
                           ) -> tuple[list[tuple[str, dict[str, str]]], list[str]]:
    """The full product of the values, in template order; named by the values that vary (hidden ones as ***)."""
    keys = sorted(order, key=used.index)
    axes = [declared[k] for k in keys] + [strategy_values]
    dims = [k for k, vals in zip([*keys, "strategy"], axes) if len(vals) > 1]
    raw: list[tuple[str, dict[str, str]]] = []
    for combo in itertools.product(*axes):
        values = dict(zip([*keys, "strategy"], combo))
        shown = {k: MASK if (k, v) in hidden else v for k, v in values.items()}
        if not dims:
            name = "command"
        elif len(dims) == 1:
            name = shown[dims[0]]
        else:
            name = " ".join(f"{k}={shown[k]}" for k in dims)
        raw.append((name, values))
    seen: dict[str, int] = {}
    for i, (name, values) in enumerate(raw):
        if name in seen:
            raw[i] = (f"{name} #{i + 1}", values)
        seen[name] = i
    return raw, dims


def _configurations(raw: list[tuple[str, dict[str, str]]], roles: dict[str, str],
                    parts: list[str | Placeholder], hidden: Set[tuple[str, str]]) -> list[Configuration]:
    """Resolve every location once (lab: targets included) and check {name:file} against what it is."""
    configurations: list[Configuration] = []
    cache: dict[tuple[str, str], Location] = {}
    for name, values in raw:
        cfg = Configuration(name=name, strategy=values.pop("strategy"), values=values)
        cfg.shown = {k: MASK if (k, v) in hidden else v for k, v in values.items()}
        for key, val in values.items():
            role = roles[key]
            if role == "param":
                cfg.params[key] = val
                continue
            loc = cache.get((key, val))
            if loc is None:
                loc = cache[(key, val)] = resolve_location(key, role, val)
            (cfg.inputs if role == "input" else cfg.places)[key] = loc
        for p in parts:
            if isinstance(p, Placeholder) and p.file is not None and p.name in cfg.inputs:
                if cfg.inputs[p.name].kind != "dir":
                    raise UsageError(f"{{{p.name}:{p.file}}}: --input {p.name}={cfg.values[p.name]} is a file; "
                                     f"write {{{p.name}}}")
        configurations.append(cfg)
    return configurations


def _baseline(configurations: list[Configuration], baseline: str | None) -> str:
    if len(configurations) < 2:
        raise UsageError("only one configuration: give at least two values to --place/--input/--param/--strategy, "
                         "or two --config")
    names = [c.name for c in configurations]
    if baseline is None:
        return names[0]
    if baseline not in names:
        raise UsageError(f"--baseline {baseline}: no such configuration; choose from {', '.join(names)}")
    return baseline


def build_plan(template: str, *, inputs: Sequence[str] = (), places: Sequence[str] = (), params: Sequence[str] = (),
               strategies: Sequence[str] | None = None, configs: Sequence[str] = (), baseline: str | None = None
               ) -> Plan:
    """Validate everything the user gave and expand it into named configurations."""
    if not template.strip():
        raise UsageError("the command template is empty; give the command to run, e.g. 'sort -o {out:x} {in}'")
    parts = parse_template(template)
    used = placeholder_names(parts)
    roles, declared, order = _declare(list(inputs), list(places), list(params))
    strategy_values = _check_strategies(strategies)
    explicit = [parse_config(c) for c in configs]
    _check_configs(explicit, roles)
    _check_placeholders(parts, used, roles)
    if explicit:
        raw, dims = _explicit_configurations(explicit, order, declared, strategy_values,
                                             bool(strategies) and len(strategy_values) > 1)
    else:
        raw, dims = _matrix_configurations(order, used, declared, strategy_values)
    _check_words(parts, raw)
    hidden = hidden_values(parts, roles, raw)
    if hidden and not explicit:  # named again, without them
        raw, dims = _matrix_configurations(order, used, declared, strategy_values, hidden)
    configurations = _configurations(raw, roles, parts, hidden)
    return Plan(template=template, parts=parts, roles=roles, configurations=configurations,
                baseline=_baseline(configurations, baseline), dimensions=dims)
