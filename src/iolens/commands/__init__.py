"""The subcommands, one module each, registered in this explicit list."""

from iolens.commands.bench import bench
from iolens.commands.compare import compare
from iolens.commands.compress import compress
from iolens.commands.data import data
from iolens.commands.diff import diff
from iolens.commands.lab import lab
from iolens.commands.parse import parse
from iolens.commands.profile import profile
from iolens.commands.report import report
from iolens.commands.results import results

COMMANDS = [profile, parse, data, compare, lab, report, bench, results, diff, compress]
