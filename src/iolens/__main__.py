from iolens.cli import run

run()
