"""The subcommands, one module each, registered in this explicit list."""

from iolens.commands.bench import bench
from iolens.commands.compare import compare
from iolens.commands.compress import compress
from iolens.commands.cost import cost
from iolens.commands.data import data
from iolens.commands.diff import diff
from iolens.commands.lab import lab
from iolens.commands.parse import parse
from iolens.commands.predict import predict
from iolens.commands.profile import profile
from iolens.commands.replay import replay
from iolens.commands.report import report
from iolens.commands.results import results
from iolens.commands.wrap import wrap

COMMANDS = [profile, parse, report, diff, data, compare, bench, results, lab, compress, cost, replay, predict, wrap]
