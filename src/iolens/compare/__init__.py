"""iolens compare: run a command across storage placements and compare them with statistics."""
