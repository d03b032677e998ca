"""The command template, its placeholders and the configurations to compare (parse and validate; no running).

A placeholder is `{name}` or `{name:file}`; `{{` and `}}` are literal braces, and any other brace is left as
it is (so `awk '{print $1}'` needs no escaping).  Each name has a role:

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
import stat
from dataclasses import dataclass, field

from iolens.errors import UsageError

STRATEGIES = ("direct", "stage")
ROLES = ("input", "place", "param")
TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}\s]*))?\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Placeholder:
    name: str
    file: str | None  # the part after ':' in {name:file}


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
            f = m.group(2)
            if f is not None and (f == "" or "/" in f or f in (".", "..")):
                raise UsageError(f"placeholder {tok}: the part after ':' must be a file name, like {{out:aln.sam}}")
            parts.append(Placeholder(m.group(1), f))
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


@dataclass
class Configuration:
    name: str
    strategy: str
    values: dict[str, str]  # key -> raw value
    inputs: dict[str, Location] = field(default_factory=dict)
    places: dict[str, Location] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

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


def split_assignment(opt: str, text: str) -> tuple[str, list[str]]:
    key, eq, vals = text.partition("=")
    key = key.strip()
    if not eq or not NAME.match(key) or vals == "":
        raise UsageError(f"{opt} {text!r}: write {opt} NAME=VALUE[,VALUE...], e.g. {opt} out=/dev/null,/scratch")
    values = [v for v in vals.split(",")]
    if any(v == "" for v in values):
        raise UsageError(f"{opt} {text!r} has an empty value; remove the extra comma")
    if len(set(values)) != len(values):
        raise UsageError(f"{opt} {text!r} lists a value twice")
    return key, values


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    name, colon, rest = text.partition(":")
    name = name.strip()
    if not colon or not name or "=" in name:
        raise UsageError(f"--config {text!r}: write --config NAME:key=value,key=value (NAME labels the configuration)")
    values: dict[str, str] = {}
    for item in rest.split(","):
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or not NAME.match(key) or val == "":
            raise UsageError(f"--config {text!r}: {item!r} is not key=value")
        if key in values:
            raise UsageError(f"--config {text!r} sets {key} twice")
        values[key] = val
    return name, values


def resolve_lab(value: str) -> str:
    """lab:NAME -> a local path, through `iolens lab` when this iolens has it."""
    import importlib

    try:
        lab = importlib.import_module("iolens.lab")  # through sys.modules, so tests can stand in for it
    except ImportError:
        lab = None
    resolve = getattr(lab, "resolve_target", None)
    if resolve is None:
        raise UsageError(f"{value}: lab: placements need `iolens lab`, which this iolens does not have; "
                         "give a path instead")
    spec, _slash, sub = value.partition("/")  # lab:NAME/sub/path -> inside the target's directory
    try:
        base = str(resolve(spec))
    except UsageError:
        raise
    except (KeyError, LookupError, OSError) as err:
        raise UsageError(f"{value}: {err}; start it with `iolens lab up` or check `iolens lab status`") from None
    return os.path.join(base, sub) if sub else base


def resolve_location(key: str, role: str, raw: str) -> Location:
    lab_name = None
    path = raw
    if raw.startswith("lab:"):
        lab_name = raw[4:].partition("/")[0]
        path = resolve_lab(raw)
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
    return Location(raw=raw, path=path, kind=kind, lab=lab_name)


def _label(value: str) -> str:
    return value


def build_plan(template: str, *, inputs: list[str] = (), places: list[str] = (), params: list[str] = (),
               strategies: list[str] | None = None, configs: list[str] = (), baseline: str | None = None) -> Plan:
    """Validate everything the user gave and expand it into named configurations."""
    if not template.strip():
        raise UsageError("the command template is empty; give the command to run, e.g. 'sort -o {out:x} {in}'")
    parts = parse_template(template)
    used = placeholder_names(parts)

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

    strategy_values = list(strategies) if strategies else ["direct"]
    for s in strategy_values:
        if s not in STRATEGIES:
            raise UsageError(f"--strategy {s}: choose from {', '.join(STRATEGIES)}")

    explicit = [parse_config(c) for c in configs]
    for _name, values in explicit:
        for key, val in values.items():
            if key == "strategy":
                if val not in STRATEGIES:
                    raise UsageError(f"--config strategy={val}: choose from {', '.join(STRATEGIES)}")
                continue
            if key not in roles:
                raise UsageError(f"--config sets {key}, which has no role; declare it with --input {key}=..., "
                                 f"--place {key}=... or --param {key}=...")

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

    # the raw configurations: name -> values
    raw: list[tuple[str, dict[str, str]]] = []
    if explicit:
        multi = [k for k in order if len(declared[k]) > 1]
        if multi:
            raise UsageError(f"--config and several values for {multi[0]} cannot be combined; give the matrix "
                             "with --input/--place/--param or the configurations with --config, not both")
        if strategies and len(strategy_values) > 1:
            raise UsageError("--config and --strategy direct,stage cannot be combined; set strategy= in each --config")
        names = [n for n, _v in explicit]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise UsageError(f"two configurations are named {sorted(dup)[0]}; give each a different NAME")
        for name, values in explicit:
            full = {k: declared[k][0] for k in order if declared[k]}
            full["strategy"] = strategy_values[0]
            full.update(values)
            raw.append((name, full))
        dims = [k for k in [*order, "strategy"] if len({v[k] for _n, v in raw}) > 1]
    else:
        keys = sorted(order, key=used.index)
        axes = [declared[k] for k in keys] + [strategy_values]
        dims = [k for k, vals in zip([*keys, "strategy"], axes) if len(vals) > 1]
        for combo in itertools.product(*axes):
            values = dict(zip([*keys, "strategy"], combo))
            if dims:
                if len(dims) == 1:
                    name = _label(values[dims[0]])
                else:
                    name = " ".join(f"{k}={_label(values[k])}" for k in dims)
            else:
                name = "command"
            raw.append((name, values))
        seen: dict[str, int] = {}
        for i, (name, values) in enumerate(raw):
            if name in seen:
                raw[i] = (f"{name} #{i + 1}", values)
            seen[name] = i

    configurations: list[Configuration] = []
    cache: dict[tuple[str, str], Location] = {}
    for name, values in raw:
        cfg = Configuration(name=name, strategy=values.pop("strategy"), values=values)
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

    if len(configurations) < 2:
        raise UsageError("only one configuration: give at least two values to --place/--input/--param/--strategy, "
                         "or two --config")
    names = [c.name for c in configurations]
    if baseline is None:
        baseline = names[0]
    elif baseline not in names:
        raise UsageError(f"--baseline {baseline}: no such configuration; choose from {', '.join(names)}")
    return Plan(template=template, parts=parts, roles=roles, configurations=configurations, baseline=baseline,
                dimensions=dims)
